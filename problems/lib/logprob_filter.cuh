/*
 * logprob_filter.cuh -- the top-k / top-p filter of one token over the
 * whole vocabulary, then its log-softmax (082, 083: filter_logprob) or its
 * gradient (084: filter_grad): one block of V = 256 threads per token,
 * CUB's block radix sort and reduction. Included by logprob_ref.cuh.
 */
#ifndef PKB_LOGPROB_FILTER_CUH
#define PKB_LOGPROB_FILTER_CUH

#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_reduce.cuh>
#include "pkb_device.cuh"   /* defines: pkb_to_float, pkb_from_float */

#define V 256   /* the vocabulary: one thread per entry */

typedef cub::BlockRadixSort<float, V, 1, int> row_sort;
typedef cub::BlockReduce<float, V> row_sum;

/* The filter, shared by both kernels: the block sorts the row's V values
 * (thread i then holds sorted entry i: key[0], its vocabulary index idx[0]),
 * keeps the top_k largest, then of those the smallest suffix whose
 * probabilities, rounded to T as the original's cumsum is, pass p_cut (the
 * largest always); whether thread i's entry is kept. mx: the row's maximum. */
template <typename T, typename Tmp>
__device__ __forceinline__ bool filter_keep(Tmp &tmp, float (&key)[1], int (&idx)[1],
					    float *p_sorted, unsigned char *keep_sorted, float &thr,
					    float &mx, float &total, int top_k, float p_cut)
{
	row_sort(tmp.sort).Sort(key, idx);   /* thread i now holds sorted position i */
	int i = threadIdx.x;
	if (i == V - top_k)
		thr = key[0];
	if (i == V - 1)
		mx = key[0];
	__syncthreads();
	bool kk = key[0] >= thr;
	int first = V - __syncthreads_count(kk);   /* keep_k is a suffix */
	float e = kk ? expf(key[0] - mx) : 0.f;
	float s = row_sum(tmp.sum).Sum(e);
	if (i == 0)
		total = s;
	__syncthreads();
	p_sorted[i] = kk ? pkb_to_float(pkb_from_float<T>(e / total)) : 0.f;
	__syncthreads();
	if (i == 0) {
		float c = 0.f;
		for (int j = 0; j < V; j++) {
			if (j >= first)
				c = pkb_to_float(pkb_from_float<T>(c + p_sorted[j]));
			keep_sorted[j] = c > p_cut || j == V - 1;
		}
	}
	__syncthreads();
	return kk && keep_sorted[i];
}

/* One block per local token l. seq holds shard q of token l at
 * seq[(q*L + l)*K ...] (the all-to-all's layout); target points at this
 * rank's tokens' targets. */
template <typename T>
__global__ void __launch_bounds__(V)
filter_logprob(const T *seq, const int64_t *target, float *lp, int local, int k, int top_k,
	       float p_cut)
{
	__shared__ union {
		typename row_sort::TempStorage sort;
		typename row_sum::TempStorage sum;
	} tmp;
	__shared__ float p_sorted[V];
	__shared__ unsigned char keep_sorted[V], keep_vocab[V];
	__shared__ float thr, mx, total, x_target;
	int l = blockIdx.x, v = threadIdx.x;
	int64_t t = target[l];
	float key[1] = { pkb_to_float(seq[((int64_t)(v / k) * local + l) * k + v % k]) };
	int idx[1] = { v };
	if (v == t)
		x_target = key[0];
	int i = threadIdx.x;
	bool keep = filter_keep<T>(tmp, key, idx, p_sorted, keep_sorted, thr, mx, total, top_k, p_cut);
	keep_vocab[idx[0]] = keep;
	float e2 = keep ? expf(key[0] - mx) : 0.f;
	__syncthreads();   /* tmp is reused; keep_vocab complete */
	float s2 = row_sum(tmp.sum).Sum(e2);
	if (i == 0)
		lp[l] = keep_vocab[t] ? (x_target - mx) - logf(s2) : -INFINITY;
}

/* One block per local token l. seq holds shard q of token l at
 * seq[(q*L + l)*K ...] (the all-to-all's layout), grad the same; target and
 * g point at this rank's tokens' targets and upstream gradients. */
template <typename T>
__global__ void __launch_bounds__(V)
filter_grad(const T *seq, const int64_t *target, const __nv_bfloat16 *g, float *grad, int local,
	    int k, int top_k, float p_cut)
{
	__shared__ union {
		typename row_sort::TempStorage sort;
		typename row_sum::TempStorage sum;
	} tmp;
	__shared__ float p_sorted[V];
	__shared__ unsigned char keep_sorted[V];
	__shared__ float thr, mx, total;
	int l = blockIdx.x, v = threadIdx.x;
	int64_t t = target[l];
	float key[1] = { pkb_to_float(seq[((int64_t)(v / k) * local + l) * k + v % k]) };
	int idx[1] = { v };
	int i = threadIdx.x;
	bool keep = filter_keep<T>(tmp, key, idx, p_sorted, keep_sorted, thr, mx, total, top_k, p_cut);
	float e2 = keep ? expf(key[0] - mx) : 0.f;
	__syncthreads();   /* tmp is reused */
	float s2 = row_sum(tmp.sum).Sum(e2);
	if (i == 0)
		total = s2;
	__syncthreads();
	/* thread i holds sorted entry i, vocabulary entry u */
	int u = idx[0];
	float q = e2 / total;
	float d = u == t ? 1.0f - q : -q;
	d = __fmul_rn(d, __bfloat162float(g[l]));
	grad[((int64_t)(u / k) * local + l) * k + u % k] = __fmul_rn(d, keep ? 1.0f : 0.0f);
}

#endif /* PKB_LOGPROB_FILTER_CUH */
