/*
 * 063_deepmd_kalman_filter_optimizer, known-good: plain fp64 kernels, the
 * scalar sum and the weights' all-gather through symmetric memory.
 *
 * K = P H (a warp per row), then one block forms this rank's
 * tmp = sum_i (lam + H_i . K_i) (H^T P H associated as H^T (P H): a
 * reordering of the same sum) and writes it to its symmetric slot; one block
 * meets every rank, sums the W slots in rank order and keeps A = 1/tmp. The
 * updated weights go to this rank's symmetric buffer; block b of the gather
 * meets block b of every rank and copies slice b of every rank's buffer to
 * the output. Every read of a peer's buffer sits between two barriers, so a
 * later call never overwrites what a peer still reads.
 */
#include <cuda_runtime.h>
#include <stdlib.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define THREADS 256
#define WARPS (THREADS / 32)
#define NBLK 8

struct state {
	pkb_symm tmp;    /* [1] this rank's tmp */
	pkb_symm w;      /* [8n] this rank's updated weights */
	double *k;       /* [8n] */
	double *a;       /* [1] A = 1 / sum of tmp */
};

/* a warp per row of the 8 stacked P: K[row] = P[row, :] . H[block, :] */
__global__ void __launch_bounds__(THREADS)
gemv(const double *p, const double *h, double *k, int64_t n)
{
	int lane = threadIdx.x & 31;
	int64_t row = blockIdx.x * (int64_t)WARPS + (threadIdx.x >> 5);
	if (row >= NBLK * n)
		return;
	const double *pr = p + row * n, *hb = h + (row / n) * n;
	double acc = 0.0;
	for (int64_t c = lane; c < n; c += 32)
		acc += pr[c] * hb[c];
	for (int o = 16; o > 0; o >>= 1)
		acc += __shfl_xor_sync(0xffffffffu, acc, o);
	if (lane == 0)
		k[row] = acc;
}

/* one block: tmp = sum_i (lam + H_i . K_i) */
__global__ void __launch_bounds__(THREADS)
local_tmp(const double *h, const double *k, double *tmp, int64_t n, double lam)
{
	__shared__ double part[WARPS];
	double total = 0.0;
	for (int b = 0; b < NBLK; b++) {
		double acc = 0.0;
		for (int64_t j = threadIdx.x; j < n; j += THREADS)
			acc += h[b * n + j] * k[b * n + j];
		for (int o = 16; o > 0; o >>= 1)
			acc += __shfl_xor_sync(0xffffffffu, acc, o);
		if ((threadIdx.x & 31) == 0)
			part[threadIdx.x >> 5] = acc;
		__syncthreads();
		if (threadIdx.x == 0) {
			double s = 0.0;
			for (int i = 0; i < WARPS; i++)
				s += part[i];
			total += lam + s;
		}
		__syncthreads();
	}
	if (threadIdx.x == 0)
		*tmp = total;
}

/* one block: A = 1 / (sum over ranks of tmp); lam_next */
__global__ void __launch_bounds__(THREADS)
exchange_tmp(pkb_dev_comm comm, double *const *peers, double *a, double *lam_next,
	     double lam, double nue)
{
	if (!pkb_barrier_block(comm, 0))
		return;
	if (threadIdx.x == 0) {
		double t = 0.0;
		for (int r = 0; r < comm.world; r++)
			t += peers[r][0];
		*a = 1.0 / t;
		*lam_next = nue * lam + 1.0 - nue;
	}
	pkb_barrier_block(comm, 0);
}

__global__ void __launch_bounds__(THREADS)
update_weights(const double *w, const double *k, const double *err, const double *a,
	       double *wn, int64_t total)
{
	int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x;
	if (i < total)
		wn[i] = w[i] + (*a * *err) * k[i];
}

__global__ void __launch_bounds__(THREADS)
update_p(const double *p, const double *k, const double *a, double *out, int64_t n,
	 double inv_lam)
{
	int64_t c = blockIdx.x * (int64_t)THREADS + threadIdx.x;
	if (c >= n)
		return;
	int64_t r = blockIdx.y, b = blockIdx.z, idx = (b * n + r) * n + c;
	out[idx] = inv_lam * (p[idx] - *a * (k[b * n + r] * k[b * n + c]));
}

/* block b: elements [b*THREADS, (b+1)*THREADS) of every rank's weights */
__global__ void __launch_bounds__(THREADS)
gather(pkb_dev_comm comm, double *const *peers, double *out, int64_t nw)
{
	if (!pkb_barrier_block(comm, blockIdx.x))
		return;
	int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x;
	if (i < nw)
		for (int r = 0; r < comm.world; r++)
			out[r * nw + i] = peers[r][i];
	pkb_barrier_block(comm, blockIdx.x);
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	int64_t n = ctx->in[0].shape[1], nw = NBLK * n;
	if (ctx->in[0].shape[0] != NBLK || ctx->world > THREADS ||
	    (nw + THREADS - 1) / THREADS > PKB_SIGNAL_SLOTS || n > 65535)
		return 1;
	if (ctx->svc->symm_alloc(ctx, sizeof(double), &s->tmp) ||
	    ctx->svc->symm_alloc(ctx, (size_t)nw * sizeof(double), &s->w))
		return 1;
	if (cudaMalloc(&s->k, (size_t)nw * sizeof(double)) != cudaSuccess ||
	    cudaMalloc(&s->a, sizeof(double)) != cudaSuccess)
		return 1;
	return 0;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	int64_t n = ctx->in[0].shape[1], nw = NBLK * n;
	const double *h = (const double *)ctx->in[0].data;
	const double *p = (const double *)ctx->in[3].data;
	double lam = pkb_param_get(ctx, "kalman_lambda", 0.98);
	double nue = pkb_param_get(ctx, "kalman_nue", 0.9987);
	unsigned wb = (unsigned)((nw + THREADS - 1) / THREADS);

	gemv<<<(unsigned)((nw + WARPS - 1) / WARPS), THREADS, 0, st>>>(p, h, s->k, n);
	local_tmp<<<1, THREADS, 0, st>>>(h, s->k, (double *)s->tmp.local, n, lam);
	exchange_tmp<<<1, THREADS, 0, st>>>(ctx->dev, (double *const *)s->tmp.peers_dev, s->a,
					    (double *)ctx->out[2].data, lam, nue);
	update_weights<<<wb, THREADS, 0, st>>>((const double *)ctx->in[2].data, s->k,
					       (const double *)ctx->in[1].data, s->a,
					       (double *)s->w.local, nw);
	update_p<<<dim3((unsigned)((n + THREADS - 1) / THREADS), (unsigned)n, NBLK), THREADS, 0,
		   st>>>(p, s->k, s->a, (double *)ctx->out[1].data, n, 1.0 / lam);
	gather<<<wb, THREADS, 0, st>>>(ctx->dev, (double *const *)s->w.peers_dev,
				       (double *)ctx->out[0].data, nw);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (s) {
		cudaFree(s->k);
		cudaFree(s->a);
		free(s);
	}
	return 0;
}
