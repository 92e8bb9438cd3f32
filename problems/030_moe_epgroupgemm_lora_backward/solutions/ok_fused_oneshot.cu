/*
 * 030_moe_epgroupgemm_lora_backward, known-good: the three all-reduces as
 * one one-shot pull over symmetric memory, in one kernel.
 *
 * The three gradients have 8N elements each; this rank stages them back to
 * back in one symmetric buffer (24N elements), so one index space covers
 * all three. Each block owns a contiguous range of it: it copies its range
 * in, meets the same block on every rank (pkb_barrier_block), reads the
 * range from all W staging buffers, sums in fp32 in rank order, rounds once
 * and writes the output tensor the range falls in. A second barrier keeps
 * the next call from overwriting a range a peer still reads.
 *
 * Traffic: (W-1) * 24N*e bytes read from peers, one hop, one launch (the
 * reference makes three NCCL all-reduces of 8N elements each).
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define THREADS 256
#define MAX_BLOCKS 128

struct ptrs {
	const void *in[3];
	void *out[3];
};

struct state {
	pkb_symm stage;
};

template <typename T>
__global__ void __launch_bounds__(THREADS)
fused_oneshot(pkb_dev_comm comm, struct ptrs p, T *const *stage, int64_t seg)
{
	/* 16-byte vectors: 8N elements is a whole number of them in every dtype */
	const int VEC = 16 / sizeof(T);
	int64_t vseg = seg / VEC, nvec = 3 * vseg;
	int64_t per = (nvec + gridDim.x - 1) / gridDim.x;
	int64_t v0 = min(nvec, per * blockIdx.x), v1 = min(nvec, v0 + per);
	T *mine = stage[comm.rank];

	for (int64_t v = v0 + threadIdx.x; v < v1; v += blockDim.x) {
		int t = (int)(v / vseg);
		((int4 *)mine)[v] = ((const int4 *)p.in[t])[v - t * vseg];
	}
	if (!pkb_barrier_block(comm, blockIdx.x))
		return;

	for (int64_t v = v0 + threadIdx.x; v < v1; v += blockDim.x) {
		float acc[16 / sizeof(T)];
		for (int k = 0; k < VEC; k++)
			acc[k] = 0.f;
		for (int r = 0; r < comm.world; r++) {
			int4 raw = ((const int4 *)stage[r])[v];
			const T *e = (const T *)&raw;
			for (int k = 0; k < VEC; k++)
				acc[k] += pkb_to_float(e[k]);
		}
		int4 res;
		T *o = (T *)&res;
		for (int k = 0; k < VEC; k++)
			o[k] = pkb_from_float<T>(acc[k]);
		int t = (int)(v / vseg);
		((int4 *)p.out[t])[v - t * vseg] = res;
	}
	pkb_barrier_block(comm, blockIdx.x);   /* peers are done reading ours */
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	if (ctx->n_in != 3 || ctx->in[0].numel != ctx->in[1].numel ||
	    ctx->in[0].numel != ctx->in[2].numel || ctx->in[0].numel % 8)
		return 1;
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	return ctx->svc->symm_alloc(ctx, 3 * ctx->in[0].bytes, &s->stage);
}

template <typename T>
static void launch(pkb_ctx *ctx, struct state *s)
{
	struct ptrs p;
	for (int i = 0; i < 3; i++) {
		p.in[i] = ctx->in[i].data;
		p.out[i] = ctx->out[i].data;
	}
	int64_t seg = ctx->in[0].numel, nvec = 3 * seg / (16 / sizeof(T));
	int blocks = (int)((nvec + THREADS - 1) / THREADS);
	blocks = blocks < 1 ? 1 : blocks > MAX_BLOCKS ? MAX_BLOCKS : blocks;
	fused_oneshot<T><<<blocks, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, p, (T *const *)s->stage.peers_dev, seg);
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
