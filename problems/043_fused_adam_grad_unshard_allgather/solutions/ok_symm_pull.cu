/*
 * 043_fused_adam_grad_unshard_allgather, known-good: one thread block per
 * rank. It runs the Adam step on this rank's slice (every intermediate
 * rounded to T, as the original's tensor ops are: in fp16 v = 1e-3 g^2 is
 * subnormal for |g| < 0.01, so fp32 intermediates would not match), stores
 * the slice in its symmetric buffer, meets every rank, pulls the W slices
 * into the output in rank order, and meets again so that no peer's next
 * call overwrites a slice still being read. P <= 4096: one block of 1024
 * threads does 4 elements each, and the W*P pull is at most 32K elements.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include <stdlib.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define THREADS 1024

struct state {
	pkb_symm slice;   /* [P] of T: this rank's updated weights */
};

struct hp {
	float b1, b2, c1, c2, eps, nlr;
	double b1d, b2d;
};

template <typename T> __device__ __forceinline__ float r16(float x)
{
	return pkb_to_float(pkb_from_float<T>(x));
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
step_gather(pkb_dev_comm comm, const T *g, const T *w, const T *m, const T *v,
	    const int64_t *step, struct hp h, T *const *slices, T *out, int64_t p)
{
	double t = (double)*step;
	float ib1 = 1.0f / (float)(1.0 - pow(h.b1d, t));
	float ib2 = 1.0f / (float)(1.0 - pow(h.b2d, t));
	T *mine = slices[comm.rank];
	for (int64_t i = threadIdx.x; i < p; i += THREADS) {
		float gf = pkb_to_float(g[i]);
		float mm = r16<T>(r16<T>(pkb_to_float(m[i]) * h.b1) + h.c1 * gf);
		float vv = r16<T>(r16<T>(pkb_to_float(v[i]) * h.b2) + h.c2 * gf * gf);
		float mh = r16<T>(mm * ib1);
		float vh = r16<T>(vv * ib2);
		float d = r16<T>(r16<T>(sqrtf(vh)) + h.eps);
		float u = r16<T>(r16<T>(mh / d) * h.nlr);
		mine[i] = pkb_from_float<T>(pkb_to_float(w[i]) + u);
	}
	if (!pkb_barrier_block(comm, 0))
		return;
	for (int64_t k = threadIdx.x; k < (int64_t)comm.world * p; k += THREADS) {
		int r = (int)(k / p);
		out[k] = slices[r][k - r * p];
	}
	pkb_barrier_block(comm, 0);   /* peers are done reading our slice */
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	if (ctx->world > THREADS)
		return 1;
	size_t e = ctx->in[0].dtype == PKB_FP32 ? 4 : 2;
	return ctx->svc->symm_alloc(ctx, (size_t)ctx->in[0].shape[0] * e, &s->slice);
}

template <typename T>
static void launch(pkb_ctx *ctx, struct state *s)
{
	double b1 = pkb_param_get(ctx, "beta1", 0.9), b2 = pkb_param_get(ctx, "beta2", 0.999);
	struct hp h = { (float)b1, (float)b2, (float)(1.0 - b1), (float)(1.0 - b2),
			(float)pkb_param_get(ctx, "eps", 1e-8),
			(float)-pkb_param_get(ctx, "lr", 1e-3), b1, b2 };
	step_gather<T><<<1, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, (const T *)ctx->in[0].data, (const T *)ctx->in[1].data,
		(const T *)ctx->in[2].data, (const T *)ctx->in[3].data,
		(const int64_t *)ctx->in[4].data, h, (T *const *)s->slice.peers_dev,
		(T *)ctx->out[0].data, ctx->in[0].shape[0]);
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
