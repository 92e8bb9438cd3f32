/*
 * 077_magi1_cso_async_attention, known-good: the head-parallel exchange as
 * pulls over symmetric memory, attention with cuBLAS in flash order.
 *
 *   1. each rank copies its query and key_value into its symmetric staging
 *      buffer; all ranks meet (pkb_barrier_block);
 *   2. it pulls, over NVLink, its kv heads of every peer's rows straight
 *      into the clipped concatenation by range (row i*L + g: peer g/spb's
 *      row i*spb + g%spb) and its query heads of every peer's rows into
 *      (R, W*spb) positions, no scratch copy on either side;
 *   3. per range and local query head: S = Q K^T / sqrt(128) in fp32,
 *      P = exp(S - rowmax) rounded to the dtype *unnormalised* with the row
 *      sum l kept in fp32, O = P V in fp32 and O / l rounded once -- flash
 *      attention's order, not the reference's normalised P: a correct
 *      reordering the tolerance must pass. Results go to the staging;
 *   4. all meet; each rank pulls from peer j its own positions j's heads
 *      of every range, in place in out; all meet again, so the next call
 *      does not overwrite a staging a slower peer still reads.
 * k_ranges is the original's constant (README): keys of range i are rows
 * [i*L, (i+1)*L) of the concatenation. Not tuned: no overlap of the
 * exchanges with the attention.
 */
#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define THREADS 256
#define COPY_BLOCKS 1024
#define RANGES 4
#define D 128

struct dims {
	int64_t tok, spb, len, hq, hkv, qlh, klh;
	int64_t qrow, kvrow;   /* 16-byte units of a rank's q / kv row, all heads */
};

struct state {
	cublasHandle_t blas;
	struct dims d;
	size_t e, q_bytes, kv_bytes;
	pkb_symm stage;        /* query | key_value | o_loc of this rank */
	void *kv_clip, *q_loc; /* (R*L, klh, 256), (R, W*spb, qlh, 128) */
	float *s, *o, *l;      /* scores (W*spb, L), O (W*spb, 128), row sums */
	void *p;               /* exp(S - max) (W*spb, L), dtype */
};

/* where the peer's data lies: its staging */
__device__ __forceinline__ const char *peer(void *const *stage, int me, int j)
{
	(void)me;
	return (const char *)stage[j];
}

__global__ void barrier(pkb_dev_comm comm)
{
	pkb_barrier_block(comm, 0);
}

/* kv_clip row i*L + g (klh heads) = peer g/spb's row i*spb + g%spb, heads
 * [me*klh, ...); q_loc[i] position j*spb + s (qlh heads) = peer j's row
 * i*spb + s, heads [me*qlh, ...) */
__global__ void pull_in(pkb_dev_comm comm, void *const *stage, size_t kv_off, int4 *kv_clip,
			int4 *q_loc, dims d)
{
	const int me = comm.rank;
	int64_t ku = d.kvrow / d.hkv * d.klh, qu = d.qrow / d.hq * d.qlh;
	int64_t nk = RANGES * d.len * ku, nq = RANGES * comm.world * d.spb * qu;
	for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < nk + nq;
	     o += (int64_t)gridDim.x * blockDim.x) {
		if (o < nk) {
			int64_t x = o / ku, c = o - x * ku;
			int64_t i = x / d.len, g = x - i * d.len;
			int64_t j = g / d.spb, s = g - j * d.spb;
			const int4 *src = (const int4 *)(peer(stage, me, (int)j) + kv_off);
			kv_clip[o] = src[(i * d.spb + s) * d.kvrow + me * ku + c];
		} else {
			int64_t a = o - nk, x = a / qu, c = a - x * qu;
			int64_t i = x / (comm.world * d.spb), y = x - i * comm.world * d.spb;
			int64_t j = y / d.spb, s = y - j * d.spb;
			const int4 *src = (const int4 *)peer(stage, me, (int)j);
			q_loc[a] = src[(i * d.spb + s) * d.qrow + me * qu + c];
		}
	}
}

/* out row i*spb + s, heads of rank j = peer j's o_loc[i] position
 * me*spb + s */
__global__ void pull_out(pkb_dev_comm comm, void *const *stage, size_t o_off, int4 *out, dims d)
{
	const int me = comm.rank;
	int64_t qu = d.qrow / d.hq * d.qlh, n = RANGES * d.spb * d.qrow;
	for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < n;
	     o += (int64_t)gridDim.x * blockDim.x) {
		int64_t x = o / d.qrow, c = o - x * d.qrow;
		int64_t i = x / d.spb, s = x - i * d.spb;
		int64_t j = c / qu, u = c - j * qu;
		const int4 *src = (const int4 *)(peer(stage, me, (int)j) + o_off);
		out[o] = src[((i * comm.world + me) * d.spb + s) * qu + u];
	}
}

__device__ __forceinline__ void from_f(float v, float *p) { *p = v; }
__device__ __forceinline__ void from_f(float v, __nv_bfloat16 *p) { *p = __float2bfloat16(v); }

/* P = exp(S - rowmax), stored as T, l = its row sum in fp32 (of the
 * unrounded values, as flash attention keeps it) */
template <typename T>
__global__ void __launch_bounds__(THREADS) exp_rows(const float *s, T *p, float *l, int64_t n)
{
	__shared__ float red[THREADS / 32];
	const float *row = s + blockIdx.x * n;
	T *out = p + blockIdx.x * n;
	float m = -INFINITY;
	for (int64_t c = threadIdx.x; c < n; c += THREADS)
		m = fmaxf(m, row[c]);
	for (int o = 16; o > 0; o /= 2)
		m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
	if (threadIdx.x % 32 == 0)
		red[threadIdx.x / 32] = m;
	__syncthreads();
	m = red[0];
	for (int k = 1; k < THREADS / 32; k++)
		m = fmaxf(m, red[k]);
	__syncthreads();
	float sum = 0;
	for (int64_t c = threadIdx.x; c < n; c += THREADS) {
		float x = __expf(row[c] - m);
		sum += x;
		from_f(x, out + c);
	}
	for (int o = 16; o > 0; o /= 2)
		sum += __shfl_xor_sync(0xffffffffu, sum, o);
	if (threadIdx.x % 32 == 0)
		red[threadIdx.x / 32] = sum;
	__syncthreads();
	if (threadIdx.x == 0) {
		float tot = 0;
		for (int k = 0; k < THREADS / 32; k++)
			tot += red[k];
		l[blockIdx.x] = tot;
	}
}

/* o_loc head rows (ld) = O / l, rounded once */
template <typename T>
__global__ void scale_rows(const float *o, const float *l, T *dst, int64_t rows, int64_t ld)
{
	for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < rows * D;
	     k += (int64_t)gridDim.x * blockDim.x) {
		int64_t r = k / D;
		from_f(o[k] / l[r], dst + r * ld + (k - r * D));
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	pkb_dtype t = ctx->in[0].dtype;
	if (t != PKB_BF16 && t != PKB_FP32)
		return 1;
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	int w = ctx->world;
	struct dims *d = &s->d;
	s->e = pkb_dtype_size(t);
	d->tok = ctx->in[0].shape[0];
	d->hq = ctx->in[0].shape[1];
	d->hkv = ctx->in[1].shape[1];
	d->spb = d->tok / RANGES;
	d->len = (int64_t)pkb_param_get(ctx, "clip_token_nums", 0);
	d->qlh = d->hq / w;
	d->klh = d->hkv / w;
	d->qrow = d->hq * D * s->e / 16;
	d->kvrow = d->hkv * 2 * D * s->e / 16;
	if (d->hkv % w != 0 || d->hq % w != 0 || d->qlh % d->klh != 0 || d->len > w * d->spb)
		return 1;
	s->q_bytes = ctx->in[0].bytes;
	s->kv_bytes = ctx->in[1].bytes;
	int64_t t_n = w * d->spb;
	if (cublasCreate(&s->blas) != CUBLAS_STATUS_SUCCESS ||
	    cudaMalloc(&s->kv_clip, RANGES * d->len * d->klh * 2 * D * s->e) != cudaSuccess ||
	    cudaMalloc(&s->q_loc, s->q_bytes) != cudaSuccess ||
	    cudaMalloc(&s->s, t_n * d->len * sizeof(float)) != cudaSuccess ||
	    cudaMalloc(&s->p, t_n * d->len * s->e) != cudaSuccess ||
	    cudaMalloc(&s->o, t_n * D * sizeof(float)) != cudaSuccess ||
	    cudaMalloc(&s->l, t_n * sizeof(float)) != cudaSuccess)
		return 1;
	return ctx->svc->symm_alloc(ctx, 2 * s->q_bytes + s->kv_bytes, &s->stage);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	const struct dims *d = &s->d;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	pkb_dtype t = ctx->in[0].dtype;
	cudaDataType dt = t == PKB_BF16 ? CUDA_R_16BF : CUDA_R_32F;
	int w = ctx->world;
	size_t e = s->e, o_off = s->q_bytes + s->kv_bytes;
	char *mine = (char *)s->stage.local;
	int64_t t_n = w * d->spb, ratio = d->qlh / d->klh;

	if (cudaMemcpyAsync(mine, ctx->in[0].data, s->q_bytes, cudaMemcpyDeviceToDevice, st) ||
	    cudaMemcpyAsync(mine + s->q_bytes, ctx->in[1].data, s->kv_bytes,
			    cudaMemcpyDeviceToDevice, st))
		return 1;
	barrier<<<1, 64, 0, st>>>(ctx->dev);
	pull_in<<<COPY_BLOCKS, THREADS, 0, st>>>(ctx->dev, s->stage.peers_dev, s->q_bytes,
						 (int4 *)s->kv_clip, (int4 *)s->q_loc, *d);
	if (cublasSetStream(s->blas, st) != CUBLAS_STATUS_SUCCESS)
		return 1;
	const float scale = 1 / sqrtf((float)D), one = 1, zero = 0;
	for (int i = 0; i < RANGES; i++)
		for (int64_t h = 0; h < d->qlh; h++) {
			size_t qo = (i * t_n * d->qlh + h) * D * e;
			const char *k = (const char *)s->kv_clip +
					(i * d->len * d->klh + h / ratio) * 2 * D * e;
			const char *q = (const char *)s->q_loc + qo;
			int ldq = (int)(d->qlh * D), ldk = (int)(d->klh * 2 * D);
			/* row-major S (T, L) = scale Q K^T: column-major S^T = K Q^T */
			if (cublasGemmEx(s->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)d->len, (int)t_n, D,
					 &scale, k, dt, ldk, q, dt, ldq, &zero, s->s, CUDA_R_32F,
					 (int)d->len, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT))
				return 1;
			if (t == PKB_BF16)
				exp_rows<<<(unsigned)t_n, THREADS, 0, st>>>(
					s->s, (__nv_bfloat16 *)s->p, s->l, d->len);
			else
				exp_rows<<<(unsigned)t_n, THREADS, 0, st>>>(
					s->s, (float *)s->p, s->l, d->len);
			/* O (T, D) = P V in fp32: column-major O^T = V^T P^T */
			if (cublasGemmEx(s->blas, CUBLAS_OP_N, CUBLAS_OP_N, D, (int)t_n, (int)d->len,
					 &one, k + D * e, dt, ldk, s->p, dt, (int)d->len, &zero,
					 s->o, CUDA_R_32F, D, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT))
				return 1;
			if (t == PKB_BF16)
				scale_rows<<<1024, THREADS, 0, st>>>(s->o, s->l,
					(__nv_bfloat16 *)(mine + o_off + qo), t_n, d->qlh * D);
			else
				scale_rows<<<1024, THREADS, 0, st>>>(s->o, s->l,
					(float *)(mine + o_off + qo), t_n, d->qlh * D);
		}
	barrier<<<1, 64, 0, st>>>(ctx->dev);
	pull_out<<<COPY_BLOCKS, THREADS, 0, st>>>(ctx->dev, s->stage.peers_dev, o_off,
						  (int4 *)ctx->out[0].data, *d);
	barrier<<<1, 64, 0, st>>>(ctx->dev);   /* peers are done reading ours */
	return cudaGetLastError() != cudaSuccess;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (!s)
		return 0;
	if (s->blas)
		cublasDestroy(s->blas);
	cudaFree(s->kv_clip);
	cudaFree(s->q_loc);
	cudaFree(s->s);
	cudaFree(s->p);
	cudaFree(s->o);
	cudaFree(s->l);
	free(s);
	return 0;
}
