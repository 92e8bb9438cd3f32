/*
 * 080_dinov2_distributed_sinkhorn_knopp, known-good: the sums exchanged
 * through symmetric memory.
 *
 * The element-wise passes work on the output in place ((B, P) row-major;
 * q = out^T): exp, then per iteration a pass that applies the pending
 * divisions and sums each prototype over the local batch, then a pass that
 * divides by the all-reduced prototype sums and 1/P and sums each sample.
 * The two scalars (total_batch, total mass) and the P prototype sums go
 * through one small all-reduce kernel: each rank writes its sums into its
 * symmetric buffer, block b of every rank meets, sums slice b of every
 * rank's buffer in rank order, and meets again so that no rank overwrites
 * its buffer (in a later kernel) while a peer still reads it.
 */
#include <cuda_runtime.h>
#include <stdlib.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define THREADS 256
#define SPLIT 16

struct state {
	pkb_symm scal;     /* [2] this rank's total_batch and total mass */
	pkb_symm sums;     /* [P] this rank's prototype sums */
	float *scal_tot;   /* [2] all-reduced */
	float *sums_tot;   /* [P] all-reduced */
	float *part;       /* [SPLIT * P] */
	float *colsum;     /* [B] */
};

/* block reduction of one float per thread; the result in thread 0 */
__device__ float block_sum(float v)
{
	__shared__ float w[THREADS / 32];
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	if ((threadIdx.x & 31) == 0)
		w[threadIdx.x >> 5] = v;
	__syncthreads();
	float s = 0.f;
	if (threadIdx.x == 0)
		for (int i = 0; i < THREADS / 32; i++)
			s += w[i];
	__syncthreads();   /* w is reused by the next call */
	return s;
}

/* block b: elements [b*THREADS, (b+1)*THREADS) of the n */
__global__ void __launch_bounds__(THREADS)
allreduce_small(pkb_dev_comm comm, float *const *peers, float *tot, int64_t n)
{
	if (!pkb_barrier_block(comm, blockIdx.x))   /* every rank's sums written */
		return;
	int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x;
	if (i < n) {
		float acc = 0.f;
		for (int r = 0; r < comm.world; r++)
			acc += peers[r][i];
		tot[i] = acc;
	}
	pkb_barrier_block(comm, blockIdx.x);        /* every rank done reading */
}

__global__ void __launch_bounds__(THREADS)
exp_rows(const float *t, float *out, float *colsum, int64_t p, float inv_temp)
{
	int64_t b = blockIdx.x;
	float acc = 0.f;
	for (int64_t j = threadIdx.x; j < p; j += THREADS) {
		float v = expf(t[b * p + j] * inv_temp);
		out[b * p + j] = v;
		acc += v;
	}
	float s = block_sum(acc);
	if (threadIdx.x == 0)
		colsum[b] = s;
}

__global__ void __launch_bounds__(THREADS)
scalars(const float *colsum, int64_t nb, const int64_t *n_masked, float *scal)
{
	float acc = 0.f;
	for (int64_t b = threadIdx.x; b < nb; b += THREADS)
		acc += colsum[b];
	float s = block_sum(acc);
	if (threadIdx.x == 0) {
		scal[0] = (float)n_masked[0];
		scal[1] = s;
	}
}

__global__ void __launch_bounds__(THREADS)
proto_pass(float *out, const float *colsum, const float *scal, float *part, int64_t nb,
	   int64_t p, int first)
{
	int64_t j = blockIdx.x * (int64_t)THREADS + threadIdx.x;
	if (j >= p)
		return;
	int64_t per = (nb + SPLIT - 1) / SPLIT;
	int64_t b0 = per * blockIdx.y < nb ? per * blockIdx.y : nb;
	int64_t b1 = b0 + per < nb ? b0 + per : nb;
	float acc = 0.f;
	for (int64_t b = b0; b < b1; b++) {
		float v = out[b * p + j];
		v = first ? v / scal[1] : v / colsum[b] / scal[0];
		out[b * p + j] = v;
		acc += v;
	}
	part[blockIdx.y * p + j] = acc;
}

__global__ void __launch_bounds__(THREADS)
sum_parts(const float *part, float *sums, int64_t p)
{
	int64_t j = blockIdx.x * (int64_t)THREADS + threadIdx.x;
	if (j >= p)
		return;
	float acc = 0.f;
	for (int s = 0; s < SPLIT; s++)
		acc += part[s * p + j];
	sums[j] = acc;
}

__global__ void __launch_bounds__(THREADS)
sample_pass(float *out, const float *rowsum, float *colsum, int64_t p, float inv_p)
{
	int64_t b = blockIdx.x;
	float acc = 0.f;
	for (int64_t j = threadIdx.x; j < p; j += THREADS) {
		float v = out[b * p + j] / rowsum[j] * inv_p;
		out[b * p + j] = v;
		acc += v;
	}
	float s = block_sum(acc);
	if (threadIdx.x == 0)
		colsum[b] = s;
}

__global__ void __launch_bounds__(THREADS)
final_pass(float *out, const float *colsum, const float *scal, int64_t p)
{
	int64_t b = blockIdx.x;
	for (int64_t j = threadIdx.x; j < p; j += THREADS)
		out[b * p + j] = out[b * p + j] / colsum[b] / scal[0] * scal[0];
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	int64_t nb = ctx->in[0].shape[0], p = ctx->in[0].shape[1];
	/* the barrier needs a thread per rank; a slot per all-reduce block */
	if (ctx->world > THREADS || (p + THREADS - 1) / THREADS > PKB_SIGNAL_SLOTS ||
	    nb > 65535)
		return 1;
	if (ctx->svc->symm_alloc(ctx, 2 * sizeof(float), &s->scal) ||
	    ctx->svc->symm_alloc(ctx, (size_t)p * sizeof(float), &s->sums))
		return 1;
	if (cudaMalloc(&s->scal_tot, 2 * sizeof(float)) != cudaSuccess ||
	    cudaMalloc(&s->sums_tot, (size_t)p * sizeof(float)) != cudaSuccess ||
	    cudaMalloc(&s->part, (size_t)SPLIT * p * sizeof(float)) != cudaSuccess ||
	    cudaMalloc(&s->colsum, (size_t)nb * sizeof(float)) != cudaSuccess)
		return 1;
	return 0;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	int64_t nb = ctx->in[0].shape[0], p = ctx->in[0].shape[1];
	const float *t = (const float *)ctx->in[0].data;
	float *out = (float *)ctx->out[0].data;
	float *scal = (float *)s->scal.local, *sums = (float *)s->sums.local;
	float inv_temp = 1.0f / (float)pkb_param_get(ctx, "teacher_temp", 0.07);
	int iters = (int)pkb_param_get(ctx, "n_iterations", 3);
	unsigned pb = (unsigned)((p + THREADS - 1) / THREADS);
	if (iters < 1)
		return 1;

	exp_rows<<<(unsigned)nb, THREADS, 0, st>>>(t, out, s->colsum, p, inv_temp);
	scalars<<<1, THREADS, 0, st>>>(s->colsum, nb, (const int64_t *)ctx->in[1].data, scal);
	allreduce_small<<<1, THREADS, 0, st>>>(ctx->dev, (float *const *)s->scal.peers_dev,
					       s->scal_tot, 2);
	for (int it = 0; it < iters; it++) {
		proto_pass<<<dim3(pb, SPLIT), THREADS, 0, st>>>(out, s->colsum, s->scal_tot,
								   s->part, nb, p, it == 0);
		sum_parts<<<pb, THREADS, 0, st>>>(s->part, sums, p);
		allreduce_small<<<pb, THREADS, 0, st>>>(ctx->dev, (float *const *)s->sums.peers_dev,
							s->sums_tot, p);
		sample_pass<<<(unsigned)nb, THREADS, 0, st>>>(out, s->sums_tot, s->colsum, p,
							      1.0f / (float)p);
	}
	final_pass<<<(unsigned)nb, THREADS, 0, st>>>(out, s->colsum, s->scal_tot, p);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (s) {
		cudaFree(s->scal_tot);
		cudaFree(s->sums_tot);
		cudaFree(s->part);
		cudaFree(s->colsum);
		free(s);
	}
	return 0;
}
