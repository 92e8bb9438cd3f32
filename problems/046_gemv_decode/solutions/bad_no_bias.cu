/*
 * 046_gemv_decode, known-bad: the ok_gemv_pull exchange, but the bias add
 * is dropped (as when a bias meant to be fused into the gather is never
 * applied). The bias is N(0, 1) against logits of ~N(0, hidden): about a
 * third of the elements leave their bound and the l2 error is ~1/sqrt(hidden)
 * (0.03 at hidden = 1024, limit 0.0135).
 *
 * (Accumulating the GEMV in packed bf16 is not a usable known-bad: simulated
 * at hidden = 1024 its l2 error is 0.0067, inside the limit, and its worst
 * element is at 0.7 of its bound.)
 * pkb-expect: mismatch
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define THREADS 256

struct state {
	pkb_symm stage;    /* (tokens, Vl) bf16 per rank */
	int tokens, hidden;
	int64_t vl;
};

__global__ void __launch_bounds__(THREADS)
gemv_nobias(const __nv_bfloat16 *h, const __nv_bfloat16 *w, __nv_bfloat16 *dst, int tokens,
	    int hidden, int64_t vl)
{
	int lane = threadIdx.x & 31;
	int64_t row = blockIdx.x * (int64_t)(THREADS / 32) + (threadIdx.x >> 5);
	if (row >= vl)
		return;
	for (int t = 0; t < tokens; t++) {
		float acc = 0.f;
		for (int k = lane; k < hidden; k += 32)
			acc += __bfloat162float(w[row * hidden + k]) *
			       __bfloat162float(h[(int64_t)t * hidden + k]);
		for (int o = 16; o > 0; o >>= 1)
			acc += __shfl_xor_sync(0xffffffffu, acc, o);
		if (lane == 0)
			dst[t * vl + row] = __float2bfloat16(acc);
	}
}

__global__ void __launch_bounds__(THREADS)
gather_pull(pkb_dev_comm comm, __nv_bfloat16 *const *stage, __nv_bfloat16 *out, int tokens,
	    int64_t vl)
{
	int j = blockIdx.x;
	if (!pkb_barrier_block(comm, j))
		return;
	for (int64_t i = threadIdx.x; i < (int64_t)tokens * vl; i += blockDim.x)
		out[(i / vl) * vl * comm.world + (int64_t)j * vl + i % vl] = stage[j][i];
	pkb_barrier_block(comm, j);
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	if (ctx->in[0].dtype != PKB_BF16)
		return 1;
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	s->tokens = (int)ctx->in[0].shape[0];
	s->hidden = (int)ctx->in[0].shape[1];
	s->vl = ctx->in[1].shape[0];
	return ctx->svc->symm_alloc(ctx, (size_t)s->tokens * s->vl * 2, &s->stage);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	gemv_nobias<<<(unsigned)((s->vl + 7) / 8), THREADS, 0, st>>>(
		(const __nv_bfloat16 *)ctx->in[0].data, (const __nv_bfloat16 *)ctx->in[1].data,
		(__nv_bfloat16 *)s->stage.local, s->tokens, s->hidden, s->vl);
	gather_pull<<<ctx->world, THREADS, 0, st>>>(ctx->dev, (__nv_bfloat16 *const *)s->stage.peers_dev,
						    (__nv_bfloat16 *)ctx->out[0].data, s->tokens, s->vl);
	return cudaGetLastError() != cudaSuccess;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	free(ctx->user);
	return 0;
}
