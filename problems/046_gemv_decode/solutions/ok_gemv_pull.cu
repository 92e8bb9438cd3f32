/*
 * 046_gemv_decode, known-good: warp-per-row GEMV into symmetric memory, then
 * a pull all-gather over NVLink. No NCCL.
 *
 * Kernel 1 writes local[t][v] = round(round(h . W[v]) + b[v]) into this
 * rank's staging buffer (tokens, Vl). Kernel 2 runs one block per source
 * rank j: the block meets block j of every rank (pkb_barrier_block; every
 * rank's kernel 1 has finished once any of its kernel-2 blocks arrives),
 * copies rank j's (tokens, Vl) into columns [j Vl, (j+1) Vl) of logits, and
 * meets again so that the next call's kernel 1 cannot overwrite staging a
 * peer is still reading.
 *
 * Traffic: every rank reads (W-1) * tokens * Vl * e bytes from peers.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define THREADS 256
#define MAX_TOKENS 8

struct state {
	pkb_symm stage;    /* (tokens, Vl) per rank */
	int tokens, hidden;
	int64_t vl;
};

/* One warp per weight row: lanes stride over the row in 16-byte vectors
 * (or elements, when hidden is not a multiple of the vector), then a
 * butterfly sum. dst[t * dst_stride + v]. */
template <typename T>
__global__ void __launch_bounds__(THREADS)
gemv_bias(const T *h, const T *w, const T *bias, T *dst, int64_t dst_stride,
	  int tokens, int hidden, int64_t vl)
{
	const int VEC = 16 / sizeof(T);
	int lane = threadIdx.x & 31;
	int64_t row = blockIdx.x * (int64_t)(THREADS / 32) + (threadIdx.x >> 5);
	if (row >= vl)
		return;
	const T *wr = w + row * hidden;
	float acc[MAX_TOKENS];
#pragma unroll
	for (int t = 0; t < MAX_TOKENS; t++)
		acc[t] = 0.f;

	if (hidden % VEC == 0) {
		for (int k = lane * VEC; k < hidden; k += 32 * VEC) {
			int4 wv = *(const int4 *)(wr + k);
			const T *we = (const T *)&wv;
#pragma unroll
			for (int t = 0; t < MAX_TOKENS; t++) {
				if (t >= tokens)
					break;
				int4 hv = *(const int4 *)(h + (int64_t)t * hidden + k);
				const T *he = (const T *)&hv;
#pragma unroll
				for (int e = 0; e < VEC; e++)
					acc[t] += pkb_to_float(we[e]) * pkb_to_float(he[e]);
			}
		}
	} else {
		for (int k = lane; k < hidden; k += 32) {
			float wv = pkb_to_float(wr[k]);
#pragma unroll
			for (int t = 0; t < MAX_TOKENS; t++)
				if (t < tokens)
					acc[t] += wv * pkb_to_float(h[(int64_t)t * hidden + k]);
		}
	}

	float b = pkb_to_float(bias[row]);
#pragma unroll
	for (int t = 0; t < MAX_TOKENS; t++) {
		if (t >= tokens)
			break;
		float v = acc[t];
		for (int o = 16; o > 0; o >>= 1)
			v += __shfl_xor_sync(0xffffffffu, v, o);
		if (lane == t)
			dst[t * dst_stride + row] = pkb_from_float<T>(pkb_to_float(pkb_from_float<T>(v)) + b);
	}
}

/* block j: logits[t][j*Vl + v] = rank j's staging[t][v] */
template <typename T>
__global__ void __launch_bounds__(THREADS)
gather_pull(pkb_dev_comm comm, T *const *stage, T *out, int tokens, int64_t vl)
{
	int j = blockIdx.x;
	if (!pkb_barrier_block(comm, j))
		return;
	const T *src = stage[j];
	int64_t vocab = vl * comm.world;
	for (int64_t i = threadIdx.x; i < (int64_t)tokens * vl; i += blockDim.x) {
		int64_t t = i / vl, v = i % vl;
		out[t * vocab + (int64_t)j * vl + v] = src[i];
	}
	pkb_barrier_block(comm, j);   /* peers are done reading ours */
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	pkb_dtype t = ctx->in[0].dtype;
	if (t != PKB_BF16 && t != PKB_FP16 && t != PKB_FP32)
		return 1;
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	s->tokens = (int)ctx->in[0].shape[0];
	s->hidden = (int)ctx->in[0].shape[1];
	s->vl = ctx->in[1].shape[0];
	if (s->tokens < 1 || s->tokens > MAX_TOKENS || ctx->world > THREADS)
		return 1;
	return ctx->svc->symm_alloc(ctx, (size_t)s->tokens * s->vl * pkb_dtype_size(t), &s->stage);
}

template <typename T>
static int run_t(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	unsigned blocks = (unsigned)((s->vl + THREADS / 32 - 1) / (THREADS / 32));
	gemv_bias<T><<<blocks, THREADS, 0, st>>>(
		(const T *)ctx->in[0].data, (const T *)ctx->in[1].data, (const T *)ctx->in[2].data,
		(T *)s->stage.local, s->vl, s->tokens, s->hidden, s->vl);
	gather_pull<T><<<ctx->world, THREADS, 0, st>>>(
		ctx->dev, (T *const *)s->stage.peers_dev, (T *)ctx->out[0].data, s->tokens, s->vl);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	switch (ctx->in[0].dtype) {
	case PKB_BF16: return run_t<__nv_bfloat16>(ctx, s);
	case PKB_FP16: return run_t<__half>(ctx, s);
	case PKB_FP32: return run_t<float>(ctx, s);
	default: return 1;
	}
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	free(ctx->user);
	return 0;
}
