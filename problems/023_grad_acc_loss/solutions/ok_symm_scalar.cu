/*
 * 023_grad_acc_loss, known-good: one kernel of one block. Thread 0 forms
 * this rank's T(loss * n_r) and publishes it in its symmetric slot; the
 * block meets every rank; thread 0 adds the W values in rank order in fp32
 * (one rounding to T at the end, where NCCL rounds every partial sum) and
 * writes the three outputs; a last barrier keeps any next call from
 * overwriting a slot a peer may still read.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdlib.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define THREADS 64

struct state {
	pkb_symm slot;   /* one float: this rank's loss_sum term (T, held as fp32) */
};

template <typename T> __device__ float big();
template <> __device__ float big<__nv_bfloat16>() { return 3.38953139e38f; }
template <> __device__ float big<__half>() { return 65504.f; }
template <> __device__ float big<float>() { return 3.40282347e38f; }

/* int64 -> T as torch converts it (through float), back in fp32 */
template <typename T>
__device__ __forceinline__ float as_t(int64_t v)
{
	return pkb_to_float(pkb_from_float<T>((float)v));
}

template <typename T>
__device__ __forceinline__ float rnd(float v)
{
	return pkb_to_float(pkb_from_float<T>(v));
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
grad_acc(pkb_dev_comm comm, const T *loss, const int64_t *n_r, const int64_t *g_tok,
	 const T *g_norm, const T *g_sum, float *const *slot, T *normalized, T *loss_sum,
	 T *grad_loss)
{
	float nt = as_t<T>(*n_r), gt = as_t<T>(*g_tok);
	if (threadIdx.x == 0) {
		float l = pkb_to_float(*loss);
		if (*n_r == 0)
			l = isnan(l) ? 0.f : isinf(l) ? (l > 0 ? big<T>() : -big<T>()) : l;
		slot[comm.rank][0] = rnd<T>(l * nt);
		/* the backward needs nothing from the peers */
		float a = rnd<T>(pkb_to_float(*g_norm) * nt);
		float c = rnd<T>(pkb_to_float(*g_sum) * nt);
		*grad_loss = pkb_from_float<T>(rnd<T>(a / gt) + c);
	}
	if (!pkb_barrier_block(comm, 0))
		return;
	if (threadIdx.x == 0) {
		float s = 0.f;
		for (int r = 0; r < comm.world; r++)
			s += slot[r][0];
		float ls = rnd<T>(s);
		*loss_sum = pkb_from_float<T>(ls);
		*normalized = pkb_from_float<T>(ls / gt);
	}
	pkb_barrier_block(comm, 0);   /* peers are done reading our slot */
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	if (ctx->world > THREADS)
		return 1;
	return ctx->svc->symm_alloc(ctx, sizeof(float), &s->slot);
}

template <typename T>
static void launch(pkb_ctx *ctx, struct state *s)
{
	grad_acc<T><<<1, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, (const T *)ctx->in[0].data, (const int64_t *)ctx->in[1].data,
		(const int64_t *)ctx->in[2].data, (const T *)ctx->in[3].data,
		(const T *)ctx->in[4].data, (float *const *)s->slot.peers_dev,
		(T *)ctx->out[0].data, (T *)ctx->out[1].data, (T *)ctx->out[2].data);
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
