/*
 * 020_blocked_fp8_dequantize, known-good: dequantize into symmetric memory,
 * then pull over NVLink. One kernel, no NCCL.
 *
 * Block b owns the same range R_b of chunk-local positions in every chunk.
 * It dequantizes x[c][i] = y[c][i] * s[(c*M*N + i) / bs] for all W chunks c
 * and i in R_b into this rank's staging buffer, meets block b of every rank
 * (pkb_barrier_block), then copies out[j][i] = staging_j[rank][i] for every
 * peer j and i in R_b: exactly the positions block b of rank j wrote before
 * the barrier. A second barrier keeps the next call from overwriting a range
 * a peer is still reading.
 *
 * Traffic: every rank reads (W-1) * M*N * 4 bytes from peers.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define THREADS 512
#define MAX_BLOCKS 256

struct state {
	pkb_symm stage;     /* (W, M, N) fp32 per rank */
};

template <typename T>
__global__ void __launch_bounds__(THREADS)
dequant_a2a(pkb_dev_comm comm, const T *y, const T *s, float *out,
	    float *const *stage, int64_t chunk, int bs)
{
	/* work in float4 units; chunk is a multiple of bs, bs of 4 */
	int64_t n4 = chunk / 4;
	int64_t per = (n4 + gridDim.x - 1) / gridDim.x;
	int64_t v0 = min(n4, per * blockIdx.x), v1 = min(n4, v0 + per);
	int W = comm.world;
	float *mine = stage[comm.rank];

	for (int c = 0; c < W; c++)
		for (int64_t v = v0 + threadIdx.x; v < v1; v += blockDim.x) {
			int64_t i = (int64_t)c * chunk + 4 * v;
			float sc = pkb_to_float(s[i / bs]);
			float4 x;
			x.x = pkb_to_float(y[i + 0]) * sc;
			x.y = pkb_to_float(y[i + 1]) * sc;
			x.z = pkb_to_float(y[i + 2]) * sc;
			x.w = pkb_to_float(y[i + 3]) * sc;
			*(float4 *)(mine + i) = x;
		}

	if (!pkb_barrier_block(comm, blockIdx.x))
		return;

	for (int j = 0; j < W; j++) {
		const float4 *src = (const float4 *)(stage[j] + (int64_t)comm.rank * chunk);
		float4 *dst = (float4 *)(out + (int64_t)j * chunk);
		for (int64_t v = v0 + threadIdx.x; v < v1; v += blockDim.x)
			dst[v] = src[v];
	}

	pkb_barrier_block(comm, blockIdx.x);   /* peers are done reading ours */
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	return ctx->svc->symm_alloc(ctx, ctx->out[0].bytes, &s->stage);
}

template <typename T>
static void launch(pkb_ctx *ctx, struct state *s, int64_t chunk, int bs)
{
	int64_t n4 = chunk / 4;
	int blocks = (int)((n4 + THREADS * 4 - 1) / (THREADS * 4));
	blocks = blocks < 1 ? 1 : blocks > MAX_BLOCKS ? MAX_BLOCKS : blocks;
	dequant_a2a<T><<<blocks, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, (const T *)ctx->in[0].data, (const T *)ctx->in[1].data,
		(float *)ctx->out[0].data, (float *const *)s->stage.peers_dev, chunk, bs);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	int64_t chunk = ctx->in[0].numel / ctx->world;
	int bs = (int)pkb_param_get(ctx, "block_size", 128);
	if (bs <= 0 || bs % 4 || chunk % bs)
		return 1;
	switch (ctx->in[0].dtype) {
	case PKB_BF16: launch<__nv_bfloat16>(ctx, s, chunk, bs); break;
	case PKB_FP16: launch<__half>(ctx, s, chunk, bs); break;
	case PKB_FP32: launch<float>(ctx, s, chunk, bs); break;
	default: return 1;
	}
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	free(ctx->user);
	return 0;
}
