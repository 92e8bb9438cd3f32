/*
 * 008_alltoall reference: grouped ncclSend/ncclRecv with every peer (slab d
 * of the input to rank d, slab s of the output from rank s) -- what
 * torch.distributed.all_to_all_single does with equal splits, the slab a rank
 * keeps included (a send/recv to itself: one NCCL launch for the whole call).
 *
 * out_r[s] = x_s[r] for s = 0 .. W-1.
 *
 * Bytes each rank must receive: (W-1) * M*N*e, 6 MiB at M = N = 1024, bf16,
 * W = 4.
 */
#include <nccl.h>
#include "pkb.h"

PKB_SOLUTION;

extern "C" int pkb_init(pkb_ctx *ctx)
{
	(void)ctx;
	return 0;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	ncclComm_t comm = (ncclComm_t)ctx->nccl_comm;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	int me = ctx->rank, w = ctx->world;
	size_t slab = ctx->in[0].bytes / w;
	const char *x = (const char *)ctx->in[0].data;
	char *out = (char *)ctx->out[0].data;
	ncclResult_t r = ncclGroupStart();
	for (int k = 0; k < w && r == ncclSuccess; k++) {
		/* pair up with rank me+k sending and me-k receiving: every step is
		   a permutation, so no rank is flooded */
		int to = (me + k) % w, from = (me - k + w) % w;
		r = ncclSend(x + to * slab, slab, ncclUint8, to, comm, st);
		if (r == ncclSuccess)
			r = ncclRecv(out + from * slab, slab, ncclUint8, from, comm, st);
	}
	ncclResult_t e = ncclGroupEnd();
	if (r == ncclSuccess)
		r = e;
	if (r != ncclSuccess) {
		ctx->svc->log(ctx, "all-to-all send/recv: %s", ncclGetErrorString(r));
		return 1;
	}
	return 0;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	(void)ctx;
	return 0;
}
