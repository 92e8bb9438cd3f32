/*
 * 069_gnn_negative_scoring, known-good: the gather and the ranking in one
 * kernel over symmetric memory, no copy of the gathered rows.
 *
 * Each rank stages its positives and negatives in a symmetric buffer (laid
 * out for the largest row count, the same on every rank). G blocks split
 * the gathered rows by index mod G; block b first stages this rank's rows
 * whose gathered index is b mod G, meets block b of every rank (so every
 * row it will read has been staged by its owner), then for each gathered
 * row b, b + G, ... reads the positive and its K negatives from the owner's
 * buffer over NVLink, applies T(sigmoid) and counts the negatives strictly
 * above the positive. A last barrier keeps the next call from overwriting
 * rows a peer still reads.
 *
 * Traffic: the other ranks' rows, each read once: the minimum.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define THREADS 256
#define BLOCKS 128
#define MAX_W 64

struct layout {
	int64_t off[MAX_W + 1];   /* gathered index of each rank's first row */
	int64_t nmax, k;          /* the staging layout: nmax positives, then nmax x k */
};

struct state {
	pkb_symm stage;
	struct layout lay;
};

template <typename T>
__device__ __forceinline__ float sig_t(T x)
{
	return pkb_to_float(pkb_from_float<T>(1.f / (1.f + expf(-pkb_to_float(x)))));
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
gather_rank(pkb_dev_comm comm, struct layout lay, const T *pos, const T *neg,
	    T *const *stage, int64_t *out)
{
	__shared__ int part[THREADS / 32];
	int64_t k = lay.k, total = lay.off[comm.world];
	int64_t mine0 = lay.off[comm.rank], n_mine = lay.off[comm.rank + 1] - mine0;
	T *me = stage[comm.rank];

	/* stage the own rows whose gathered index is blockIdx.x mod BLOCKS */
	int64_t first = ((int64_t)blockIdx.x - mine0 % BLOCKS + BLOCKS) % BLOCKS;
	for (int64_t i = first; i < n_mine; i += BLOCKS) {
		if (threadIdx.x == 0)
			me[i] = pos[i];
		for (int64_t j = threadIdx.x; j < k; j += THREADS)
			me[lay.nmax + i * k + j] = neg[i * k + j];
	}
	if (!pkb_barrier_block(comm, blockIdx.x))
		return;

	int owner = 0;
	for (int64_t g = blockIdx.x; g < total; g += BLOCKS) {
		while (g >= lay.off[owner + 1])
			owner++;
		const T *src = stage[owner];
		int64_t i = g - lay.off[owner];
		float p = sig_t(src[i]);
		int c = 0;
		for (int64_t j = threadIdx.x; j < k; j += THREADS)
			c += sig_t(src[lay.nmax + i * k + j]) > p;
		for (int o = 16; o; o >>= 1)
			c += __shfl_xor_sync(0xffffffffu, c, o);
		if ((threadIdx.x & 31) == 0)
			part[threadIdx.x / 32] = c;
		__syncthreads();
		if (threadIdx.x == 0) {
			int t = 0;
			for (int w = 0; w < THREADS / 32; w++)
				t += part[w];
			out[g] = 1 + t;
		}
		__syncthreads();
	}
	pkb_barrier_block(comm, blockIdx.x);   /* peers are done reading ours */
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	if (ctx->world > MAX_W)
		return 1;
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	int64_t rows[MAX_W], mine = ctx->in[0].numel;
	if (ctx->svc->host_allgather(ctx, &mine, rows, sizeof mine))
		return 1;
	s->lay.k = ctx->in[1].shape[1];
	for (int r = 0; r < ctx->world; r++) {
		s->lay.off[r + 1] = s->lay.off[r] + rows[r];
		if (rows[r] > s->lay.nmax)
			s->lay.nmax = rows[r];
	}
	size_t e = ctx->in[0].bytes / (size_t)mine;
	return ctx->svc->symm_alloc(ctx, (size_t)(s->lay.nmax * (1 + s->lay.k)) * e, &s->stage);
}

template <typename T>
static void launch(pkb_ctx *ctx, struct state *s)
{
	gather_rank<T><<<BLOCKS, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, s->lay, (const T *)ctx->in[0].data, (const T *)ctx->in[1].data,
		(T *const *)s->stage.peers_dev, (int64_t *)ctx->out[0].data);
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
