/*
 * 005_scatter reference: rank 0 sends slab j of its (W, M, N) input to rank j
 * with grouped ncclSend/ncclRecv (NCCL has no scatter; torch's scatter is the
 * same send/recv group). Rank 0's own slab goes through a send/recv to
 * itself in the same group, so the whole call is one NCCL launch.
 *
 * out_r = x[r] (M, N), x being rank 0's input; the other ranks' inputs are
 * not read.
 *
 * Bytes: rank 0 sends (W-1) * M*N*e, every other rank receives M*N*e, 6 MiB
 * out of rank 0 at M = N = 1024, bf16, W = 4.
 */
#include "pkb_ref.cuh"

PKB_SOLUTION;

#define SRC 0

static int run(pkb_ctx *ctx, cudaStream_t st, ncclComm_t comm)
{
	size_t slab = ctx->out[0].bytes;
	const char *x = (const char *)ctx->in[0].data;
	ncclResult_t r = ncclGroupStart();
	if (ctx->rank == SRC)
		for (int j = 0; j < ctx->world && r == ncclSuccess; j++)
			r = ncclSend(x + j * slab, slab, ncclUint8, j, comm, st);
	if (r == ncclSuccess)
		r = ncclRecv(ctx->out[0].data, slab, ncclUint8, SRC, comm, st);
	ncclResult_t e = ncclGroupEnd();
	if (r == ncclSuccess)
		r = e;
	if (r != ncclSuccess) {
		ctx->svc->log(ctx, "scatter send/recv: %s", ncclGetErrorString(r));
		return 1;
	}
	return 0;
}

PKB_REF_STATELESS(pkb_ref_init_none, run)
