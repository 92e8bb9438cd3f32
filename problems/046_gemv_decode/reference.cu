/*
 * 046_gemv_decode reference: a warp-per-row GEMV with the bias add fused
 * (two roundings, as the original's matmul then `+ bias`), written into this
 * rank's slot of the gather buffer, then one in-place ncclAllGather.
 *
 * local[t][v] = round(round(sum_k h[t][k] * W[v][k]) + b[v]), fp32
 * accumulation. With one token the gathered (W, 1, Vl) buffer already is
 * logits (1, vocab), so the GEMV writes into the output and the gather runs
 * there; with more tokens the gather lands in (W, tokens, Vl) scratch and a
 * small kernel permutes it to (tokens, W*Vl) -- the original's cat(dim=1).
 *
 * Bytes per rank: reads Vl*hidden*e of weight (2 MiB at defaults), receives
 * (W-1)*tokens*Vl*e (6 KiB). A cuBLAS GEMV could not keep the two roundings
 * in one kernel; at this size the launch count is the cost.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <nccl.h>
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_ref.cuh"

PKB_SOLUTION;

#define THREADS 256
#define MAX_TOKENS 8

struct state {
	void *gather;      /* (W, tokens, Vl) when tokens > 1 */
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

/* (W, tokens, Vl) -> (tokens, W*Vl) */
template <typename T>
__global__ void permute_gathered(const T *g, T *out, int tokens, int64_t vl, int world)
{
	int64_t n = (int64_t)tokens * vl * world, vocab = vl * world;
	for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < n;
	     o += (int64_t)gridDim.x * blockDim.x) {
		int64_t t = o / vocab, c = o % vocab, j = c / vl, v = c % vl;
		out[o] = g[(j * tokens + t) * vl + v];
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s;
	PKB_CK(pkb_ref_float_state(ctx, &s));
	s->tokens = (int)ctx->in[0].shape[0];
	s->hidden = (int)ctx->in[0].shape[1];
	s->vl = ctx->in[1].shape[0];
	if (s->tokens < 1 || s->tokens > MAX_TOKENS)
		return 1;
	if (s->tokens > 1 && cudaMalloc(&s->gather, ctx->out[0].bytes) != cudaSuccess)
		return 1;
	return 0;
}

template <typename T>
static int run_t(pkb_ctx *ctx, struct state *s, ncclDataType_t type)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	size_t slot = (size_t)s->tokens * s->vl;
	/* one token: gather straight into the output */
	T *base = (T *)(s->tokens > 1 ? s->gather : ctx->out[0].data);
	T *mine = base + (size_t)ctx->rank * slot;

	unsigned blocks = (unsigned)((s->vl + THREADS / 32 - 1) / (THREADS / 32));
	gemv_bias<T><<<blocks, THREADS, 0, st>>>(
		(const T *)ctx->in[0].data, (const T *)ctx->in[1].data, (const T *)ctx->in[2].data,
		mine, s->vl, s->tokens, s->hidden, s->vl);
	if (cudaGetLastError() != cudaSuccess)
		return 1;

	ncclResult_t r = ncclAllGather(mine, base, slot, type, (ncclComm_t)ctx->nccl_comm, st);
	if (r != ncclSuccess) {
		ctx->svc->log(ctx, "046 reference: ncclAllGather: %s", ncclGetErrorString(r));
		return 1;
	}
	if (s->tokens > 1)
		permute_gathered<T><<<264, 256, 0, st>>>((const T *)s->gather, (T *)ctx->out[0].data,
							 s->tokens, s->vl, ctx->world);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	switch (ctx->in[0].dtype) {
	case PKB_BF16: return run_t<__nv_bfloat16>(ctx, s, ncclBfloat16);
	case PKB_FP16: return run_t<__half>(ctx, s, ncclFloat16);
	case PKB_FP32: return run_t<float>(ctx, s, ncclFloat32);
	default: return 1;
	}
}

static void release(struct state *s)
{
	cudaFree(s->gather);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_ref_fini(ctx, release);
}
