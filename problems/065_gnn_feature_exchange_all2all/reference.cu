/*
 * 065_gnn_feature_exchange_all2all reference: gather the rows into a send
 * buffer, then the rotated all-to-all as one NCCL group of send/recv pairs
 * straight into the output.
 *
 * Rank j's send chunk for rank d is gathered chunk (d - j) mod W (the
 * original's input list rotated right by j); what arrives from rank s is
 * output chunk (s - j) mod W (the output list rotated likewise). The chunk
 * to itself goes through NCCL too, as torch's all_to_all does.
 */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdint.h>
#include <stdlib.h>
#include "pkb.h"
#include "pkb_ref.cuh"

PKB_SOLUTION;

#define THREADS 256

struct state {
	void *gathered;       /* (total, hidden) of T */
	int64_t rpp, total;
	size_t row;           /* bytes */
	ncclDataType_t type;
};

/* gathered[i] = features[ids[i]], in units of U (a divisor of the row) */
template <typename U>
__global__ void gather(const U *features, const int64_t *ids, U *gathered, int64_t total,
		       int64_t units)
{
	for (int64_t k = blockIdx.x * (int64_t)THREADS + threadIdx.x; k < total * units;
	     k += (int64_t)gridDim.x * THREADS) {
		int64_t i = k / units, u = k % units;
		gathered[k] = features[ids[i] * units + u];
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s;
	PKB_CK(pkb_ref_state(ctx, &s));
	PKB_CK(pkb_ref_float_dtype(ctx, ctx->in[0].dtype));
	PKB_CK(pkb_ref_nccl_type(ctx, ctx->in[0].dtype, &s->type));
	s->rpp = (int64_t)pkb_param_get(ctx, "counts_sent", 0);
	s->total = ctx->out[0].shape[0];
	s->row = ctx->out[0].bytes / s->total;
	if (s->rpp * ctx->world != s->total) {
		ctx->svc->log(ctx, "065 reference: counts do not cover the output");
		return 1;
	}
	PKB_CK_CUDA(ctx, cudaMalloc(&s->gathered, ctx->out[0].bytes));
	return 0;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	ncclComm_t comm = (ncclComm_t)ctx->nccl_comm;
	const int64_t *ids = (const int64_t *)ctx->in[1].data;
	int w = ctx->world, me = ctx->rank;
	unsigned blocks = pkb_ref_blocks(ctx->out[0].numel, THREADS, 2048);
	if (s->row % 16 == 0)
		gather<uint4><<<blocks, THREADS, 0, st>>>((const uint4 *)ctx->in[0].data, ids,
							  (uint4 *)s->gathered, s->total,
							  (int64_t)(s->row / 16));
	else if (s->row % 4 == 0)
		gather<uint32_t><<<blocks, THREADS, 0, st>>>((const uint32_t *)ctx->in[0].data, ids,
							     (uint32_t *)s->gathered, s->total,
							     (int64_t)(s->row / 4));
	else
		gather<uint16_t><<<blocks, THREADS, 0, st>>>((const uint16_t *)ctx->in[0].data, ids,
							     (uint16_t *)s->gathered, s->total,
							     (int64_t)(s->row / 2));
	PKB_CK_LAUNCH(ctx);

	size_t chunk = (size_t)s->rpp * s->row, count = (size_t)(s->rpp * ctx->out[0].shape[1]);
	const char *send = (const char *)s->gathered;
	char *out = (char *)ctx->out[0].data;
	PKB_CK_NCCL(ctx, ncclGroupStart());
	for (int k = 0; k < w; k++) {
		/* pair up with me+k sending and me-k receiving: every step is a
		   permutation */
		int to = (me + k) % w, from = (me - k + w) % w;
		PKB_CK_NCCL(ctx, ncclSend(send + (size_t)((to - me + w) % w) * chunk, count,
					  s->type, to, comm, st));
		PKB_CK_NCCL(ctx, ncclRecv(out + (size_t)((from - me + w) % w) * chunk, count,
					  s->type, from, comm, st));
	}
	PKB_CK_NCCL(ctx, ncclGroupEnd());
	return 0;
}

static void release(struct state *s)
{
	cudaFree(s->gathered);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_ref_fini(ctx, release);
}
