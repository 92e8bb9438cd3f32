/*
 * 006_gather reference: every rank sends its input to rank 0 with grouped
 * ncclSend/ncclRecv (what torch's gather does), rank 0 receives slab j from
 * rank j. A rank's own copy (rank 0's slab 0; a non-root's output, which is
 * its input: the original returns the input tensor) is a send/recv to itself
 * in the same group, so the whole call is one NCCL launch.
 *
 * rank 0: out (W, M, N), out[j] = x_j; rank r != 0: out = x_r (M, N).
 *
 * Bytes: rank 0 receives (W-1) * M*N*e, every other rank sends M*N*e, 6 MiB
 * into rank 0 at M = N = 1024, bf16, W = 4.
 */
#include "pkb_ref.cuh"

PKB_SOLUTION;

#define DST 0

static int run(pkb_ctx *ctx, cudaStream_t st, ncclComm_t comm)
{
	size_t slab = ctx->in[0].bytes;
	const void *x = ctx->in[0].data;
	char *out = (char *)ctx->out[0].data;
	ncclResult_t r = ncclGroupStart();
	if (ctx->rank == DST) {
		for (int j = 0; j < ctx->world && r == ncclSuccess; j++)
			r = ncclRecv(out + j * slab, slab, ncclUint8, j, comm, st);
		if (r == ncclSuccess)
			r = ncclSend(x, slab, ncclUint8, DST, comm, st);
	} else {
		if (r == ncclSuccess)
			r = ncclSend(x, slab, ncclUint8, DST, comm, st);
		if (r == ncclSuccess)
			r = ncclSend(x, slab, ncclUint8, ctx->rank, comm, st);
		if (r == ncclSuccess)
			r = ncclRecv(out, slab, ncclUint8, ctx->rank, comm, st);
	}
	ncclResult_t e = ncclGroupEnd();
	if (r == ncclSuccess)
		r = e;
	if (r != ncclSuccess) {
		ctx->svc->log(ctx, "gather send/recv: %s", ncclGetErrorString(r));
		return 1;
	}
	return 0;
}

PKB_REF_STATELESS(pkb_ref_init_none, run)
