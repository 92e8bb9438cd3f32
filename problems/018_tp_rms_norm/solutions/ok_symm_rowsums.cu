/*
 * 018_tp_rms_norm, known-good: row sums of squares exchanged through
 * symmetric memory, in one kernel.
 *
 * Block b owns the same rows on every rank. A warp per row writes the row's
 * fp32 sum of squares into this rank's symmetric buffer; the block meets
 * block b of every rank; then a warp per row adds the W sums in rank order
 * and writes w * T(x * rsqrt(ss / (W*N) + eps)). A last barrier keeps the
 * next call from overwriting the sums while a peer still reads them.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdlib.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define THREADS 256
#define WARPS (THREADS / 32)
#define MAX_BLOCKS 512

struct state {
	pkb_symm ss;   /* [M] fp32 */
};

template <typename T>
__global__ void __launch_bounds__(THREADS)
tp_rmsnorm(pkb_dev_comm comm, const T *x, const T *w, float *const *ss, T *out, int64_t m,
	   int64_t n, float inv_hidden, float eps)
{
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	int64_t per = (m + gridDim.x - 1) / gridDim.x;
	int64_t i0 = per * blockIdx.x < m ? per * blockIdx.x : m;
	int64_t i1 = i0 + per < m ? i0 + per : m;

	for (int64_t i = i0 + warp; i < i1; i += WARPS) {
		float acc = 0.f;
		for (int64_t j = lane; j < n; j += 32) {
			float v = pkb_to_float(x[i * n + j]);
			acc += v * v;
		}
		for (int o = 16; o > 0; o >>= 1)
			acc += __shfl_xor_sync(0xffffffffu, acc, o);
		if (lane == 0)
			ss[comm.rank][i] = acc;
	}
	if (!pkb_barrier_block(comm, blockIdx.x))
		return;
	for (int64_t i = i0 + warp; i < i1; i += WARPS) {
		float tot = 0.f;
		for (int r = 0; r < comm.world; r++)
			tot += ss[r][i];
		float rs = rsqrtf(tot * inv_hidden + eps);
		for (int64_t j = lane; j < n; j += 32) {
			float y = pkb_to_float(pkb_from_float<T>(pkb_to_float(x[i * n + j]) * rs));
			out[i * n + j] = pkb_from_float<T>(pkb_to_float(w[j]) * y);
		}
	}
	pkb_barrier_block(comm, blockIdx.x);   /* peers are done reading ours */
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	if (ctx->world > THREADS)
		return 1;
	return ctx->svc->symm_alloc(ctx, (size_t)ctx->in[0].shape[0] * sizeof(float), &s->ss);
}

template <typename T>
static void launch(pkb_ctx *ctx, struct state *s)
{
	int64_t m = ctx->in[0].shape[0], n = ctx->in[0].shape[1];
	int64_t blocks = (m + WARPS - 1) / WARPS;
	blocks = blocks > MAX_BLOCKS ? MAX_BLOCKS : blocks;
	tp_rmsnorm<T><<<(unsigned)blocks, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, (const T *)ctx->in[0].data, (const T *)ctx->in[1].data,
		(float *const *)s->ss.peers_dev, (T *)ctx->out[0].data, m, n,
		1.0f / (float)((int64_t)ctx->world * n),
		(float)pkb_param_get(ctx, "variance_epsilon", 1e-5));
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	switch (ctx->in[0].dtype) {
	case PKB_BF16: launch<__nv_bfloat16>(ctx, s); break;
	case PKB_FP16: launch<__half>(ctx, s); break;
	case PKB_FP32: launch<float>(ctx, s); break;
	default: return 1;
	}
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	free(ctx->user);
	return 0;
}
