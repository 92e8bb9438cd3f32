/*
 * 082_vocab_parallel_log_prob_topk, known-good: every rank filters every
 * token, from full rows pulled out of symmetric memory, in one kernel.
 *
 * Block i owns token i on every rank: it stages this rank's K logits of
 * the token in a symmetric buffer, meets block i of every rank, and reads
 * the token's full row of V = 256 (entry v from rank v / K). Each thread
 * then holds one vocabulary entry and finds its place in the ascending
 * order by counting (entries below it, and equal ones before it: a stable
 * rank, no sort), which gives the top-k threshold and the sorted positions
 * the cumulative sum walks; one thread runs that sum in T over the kept
 * entries. The target's thread writes the log-prob. Every rank computes
 * all NT values, so nothing is gathered; calls alternate between two
 * halves of the staging buffer (no second barrier).
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdlib.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define V 256   /* the vocabulary: one thread per entry */

struct state {
	pkb_symm stage;    /* two halves of [NT][K] T: this rank's shard, for the peers */
	uint32_t *calls;   /* [NT] per-block call counts, for pkb_call_half */
	size_t half;       /* bytes of one half */
};

/* the sum over the block, the same value in every thread */
__device__ __forceinline__ float block_sum(float v, float *red)
{
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	if (lane == 0)
		red[warp] = v;
	__syncthreads();
	float s = 0.f;
	for (int w = 0; w < V / 32; w++)
		s += red[w];
	__syncthreads();
	return s;
}

template <typename T>
__global__ void __launch_bounds__(V)
logprob_topk(pkb_dev_comm comm, const T *x, const int64_t *target, char *const *stage,
	     uint32_t *calls, size_t half, float *out, int k, int top_k, float p_cut)
{
	__shared__ float xs[V], p_sorted[V], red[V / 32];
	__shared__ unsigned char keep_sorted[V];
	__shared__ float thr, mx;
	size_t off = pkb_call_half(calls, half);
	int i = blockIdx.x, v = threadIdx.x;
	if (v < k)
		((T *)(stage[comm.rank] + off))[(int64_t)i * k + v] = x[(int64_t)i * k + v];
	if (!pkb_barrier_block(comm, i))
		return;
	int q = v / k;
	xs[v] = pkb_to_float(((const T *)(stage[q] + off))[(int64_t)i * k + v % k]);
	__syncthreads();

	/* stable ascending position: entries below, then equal ones before */
	float xv = xs[v];
	int pos = 0;
	for (int u = 0; u < V; u++) {
		float y = xs[u];
		pos += (y < xv) | ((y == xv) & (u < v));
	}
	if (pos == V - top_k)
		thr = xv;
	if (pos == V - 1)
		mx = xv;
	__syncthreads();
	bool kk = xv >= thr;   /* ties at the threshold survive */
	int first = V - __syncthreads_count(kk);
	float e = kk ? expf(xv - mx) : 0.f;
	float total = block_sum(e, red);
	p_sorted[pos] = kk ? pkb_to_float(pkb_from_float<T>(e / total)) : 0.f;
	__syncthreads();
	if (v == 0) {
		float c = 0.f;
		for (int j = 0; j < V; j++) {
			if (j >= first)
				c = pkb_to_float(pkb_from_float<T>(c + p_sorted[j]));
			keep_sorted[j] = c > p_cut || j == V - 1;
		}
	}
	__syncthreads();
	bool keep = kk && keep_sorted[pos];
	float s2 = block_sum(keep ? e : 0.f, red);
	if (v == target[i])
		out[i] = keep ? (xv - mx) - logf(s2) : -INFINITY;
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	int64_t nt = ctx->in[0].shape[0] * ctx->in[0].shape[1];
	if (ctx->in[0].shape[2] * ctx->world != V || ctx->world > V || nt > 1024)
		return 1;
	s->half = (ctx->in[0].bytes + 255) & ~(size_t)255;
	if (cudaMalloc(&s->calls, nt * sizeof(uint32_t)) != cudaSuccess ||
	    cudaMemset(s->calls, 0, nt * sizeof(uint32_t)) != cudaSuccess)
		return 1;
	return ctx->svc->symm_alloc(ctx, 2 * s->half, &s->stage);
}

template <typename T>
static void launch(pkb_ctx *ctx, struct state *s)
{
	int64_t nt = ctx->in[0].shape[0] * ctx->in[0].shape[1];
	int top_k = (int)pkb_param_get(ctx, "top_k", 10);
	logprob_topk<T><<<(unsigned)nt, V, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, (const T *)ctx->in[0].data, (const int64_t *)ctx->in[1].data,
		(char *const *)s->stage.peers_dev, s->calls, s->half, (float *)ctx->out[0].data,
		(int)ctx->in[0].shape[2], top_k < V ? top_k : V,
		(float)(1.0 - pkb_param_get(ctx, "top_p", 0.9)));
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
	struct state *s = (struct state *)ctx->user;
	if (s) {
		cudaFree(s->calls);
		free(s);
	}
	return 0;
}
