/*
 * 003_broadcast reference: one ncclBroadcast from rank 0's input into every
 * rank's output, on the harness stream -- what the original's clone +
 * torch.distributed.broadcast(src=0) computes (rank 0's output is its own
 * input; NCCL copies it there).
 *
 * out = x_0 on every rank. Pure data movement, counted in bytes (ncclUint8).
 *
 * Bytes: rank 0 sends M*N*e, every other rank receives M*N*e and (ring
 * pipeline) forwards it once, 2 MiB at M = N = 1024, bf16.
 */
#include "pkb_ref.cuh"

PKB_SOLUTION;

#define SRC 0

static int run(pkb_ctx *ctx, cudaStream_t st, ncclComm_t comm)
{
	const pkb_tensor *x = &ctx->in[0];
	ncclResult_t r = ncclBroadcast(x->data, ctx->out[0].data, x->bytes, ncclUint8, SRC,
				       comm, st);
	if (r != ncclSuccess) {
		ctx->svc->log(ctx, "ncclBroadcast: %s", ncclGetErrorString(r));
		return 1;
	}
	return 0;
}

PKB_REF_STATELESS(pkb_ref_init_none, run)
