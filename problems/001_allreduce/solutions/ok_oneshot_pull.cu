/*
 * 001_allreduce, known-good: one-shot pull all-reduce over symmetric memory.
 *
 * Each block owns a contiguous range of the tensor. It copies its range of
 * the input into this rank's symmetric staging buffer, meets the same block
 * on every rank (pkb_barrier_block), then reads that range from all W
 * staging buffers over NVLink, sums in fp32 in rank order and writes the
 * output. A second barrier keeps the next call from overwriting a range a
 * peer is still reading.
 *
 * Traffic: every rank reads (W-1) * M*N*e bytes from peers -- more than the
 * 2 (W-1)/W of a two-shot, but in one hop: the right trade below ~1 MB.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#ifndef THREADS
#define THREADS 512
#endif
#ifndef MAX_BLOCKS
#define MAX_BLOCKS 256
#endif

struct state {
	pkb_symm stage;
};

template <typename T>
__global__ void __launch_bounds__(THREADS)
allreduce_oneshot(pkb_dev_comm comm, const T *in, T *out, T *const *stage, int64_t n)
{
	/* 16-byte vectors; the tail (n % VEC) is done by the last block */
	const int VEC = 16 / sizeof(T);
	int64_t nvec = n / VEC;
	int64_t per = (nvec + gridDim.x - 1) / gridDim.x;
	int64_t v0 = min(nvec, per * blockIdx.x), v1 = min(nvec, v0 + per);
	T *mine = stage[comm.rank];

	for (int64_t v = v0 + threadIdx.x; v < v1; v += blockDim.x)
		((int4 *)mine)[v] = ((const int4 *)in)[v];
	bool last = blockIdx.x == gridDim.x - 1;
	if (last)
		for (int64_t i = nvec * VEC + threadIdx.x; i < n; i += blockDim.x)
			mine[i] = in[i];

	if (!pkb_barrier_block(comm, blockIdx.x))
		return;

	for (int64_t v = v0 + threadIdx.x; v < v1; v += blockDim.x) {
		/* up to 8 ranks' loads in flight at once (one NVLink round trip,
		 * not one per rank), then their sum in rank order */
		float acc[16 / sizeof(T)];
		for (int k = 0; k < VEC; k++)
			acc[k] = 0.f;
		for (int r0 = 0; r0 < comm.world; r0 += 8) {
			int4 raw[8];
#pragma unroll
			for (int j = 0; j < 8; j++)
				if (r0 + j < comm.world)
					raw[j] = ((const int4 *)stage[r0 + j])[v];
#pragma unroll
			for (int j = 0; j < 8; j++) {
				if (r0 + j >= comm.world)
					break;
				const T *e = (const T *)&raw[j];
				for (int k = 0; k < VEC; k++)
					acc[k] += pkb_to_float(e[k]);
			}
		}
		int4 res;
		T *o = (T *)&res;
		for (int k = 0; k < VEC; k++)
			o[k] = pkb_from_float<T>(acc[k]);
		((int4 *)out)[v] = res;
	}
	if (last)
		for (int64_t i = nvec * VEC + threadIdx.x; i < n; i += blockDim.x) {
			float acc = 0.f;
			for (int r = 0; r < comm.world; r++)
				acc += pkb_to_float(stage[r][i]);
			out[i] = pkb_from_float<T>(acc);
		}

	pkb_barrier_block(comm, blockIdx.x);   /* peers are done reading ours */
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	return ctx->svc->symm_alloc(ctx, ctx->in[0].bytes, &s->stage);
}

template <typename T>
static void launch(pkb_ctx *ctx, struct state *s)
{
	int64_t n = ctx->in[0].numel;
	int64_t nvec = n / (16 / sizeof(T));
	/* one vector per thread while the blocks last: small tensors are
	 * latency-bound, and more threads put more loads in flight */
	int blocks = (int)((nvec + THREADS - 1) / THREADS);
	blocks = blocks < 1 ? 1 : blocks > MAX_BLOCKS ? MAX_BLOCKS : blocks;
	allreduce_oneshot<T><<<blocks, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, (const T *)ctx->in[0].data, (T *)ctx->out[0].data,
		(T *const *)s->stage.peers_dev, n);
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
