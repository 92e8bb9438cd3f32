/*
 * 012_allgather_gemm, known-good under the `parallelkittens` backend: a pull
 * all-gather through ThunderKittens' parallel global layout, then the GEMM
 * on ThunderKittens' register tiles and warp MMA.
 *
 * Gather: each block owns a range of the local shard A_local (M, K/W). It
 * copies that range into this rank's symmetric staging buffer, meets the
 * same block on every rank (pkb_barrier_block), then reads the range from
 * every rank's buffer -- shards[w] of a pgl<..., W, false> over pkb's peer
 * pointers -- and writes it where torch.cat(dim=1) puts it,
 * A_full[i, w*K/W + j] = A_local_w[i, j]. A second barrier keeps the next
 * call from overwriting a range a peer still reads.
 *
 * GEMM (bf16): one warp per 16 x 64 tile of C. For each 16-wide step
 * of K = 512 it loads a 16 x 16 tile of A_full (row layout) and a 16 x 64
 * tile of B (column layout, as mma_AB wants it) into registers and
 * accumulates with warp::mma_AB in fp32; the tile is stored once, rounded
 * to the element type. The rows past the last whole 16 and the columns
 * past the last whole 64 (any M, N) are computed by a plain kernel, fp32
 * accumulation too; so is all of C at fp16 (TK's warp MMA accumulates
 * fp16 in fp16) and at fp32 (the tolerance forbids TF32).
 *
 * Not tuned: register tiles from global memory (no shared memory, no TMA,
 * no wgmma), no overlap of the gather with the GEMM.
 * pkb-backend: parallelkittens
 */
#include "kittens.cuh"
#include "pkb.h"
#include "pkb_device.cuh"   /* defines: pkb_barrier_block, pkb_to_float, pkb_from_float */

using namespace kittens;

PKB_SOLUTION;

#define THREADS 256
#define MAX_BLOCKS 128
#define TM 16         /* C tile rows */
#define TN 64         /* C tile columns */
#define TK 16         /* K step */
#define GEMM_WARPS 4  /* C tiles per block */

struct state {
	pkb_symm stage;   /* A_local of each rank */
	void *a_full;     /* (M, K), local */
};

template <typename T> using mat_gl = gl<T, 1, 1, -1, -1>;
template <typename T, int W> using shard_pgl = pgl<mat_gl<T>, W, false>;

template <typename T, int W>
__global__ void __launch_bounds__(THREADS)
gather_tk(pkb_dev_comm comm, const __grid_constant__ shard_pgl<T, W> shards, const T *a_local,
	  T *a_full, int64_t m, int kl)
{
	int64_t n = m * kl, k = (int64_t)kl * W;
	int64_t per = (n + gridDim.x - 1) / gridDim.x;
	int64_t e0 = min(n, per * blockIdx.x), e1 = min(n, e0 + per);

	T *mine = &shards[comm.rank][{0, 0, 0, 0}];
	for (int64_t e = e0 + threadIdx.x; e < e1; e += blockDim.x)
		mine[e] = a_local[e];
	if (!pkb_barrier_block(comm, blockIdx.x))
		return;
#pragma unroll
	for (int w = 0; w < W; w++)
		for (int64_t e = e0 + threadIdx.x; e < e1; e += blockDim.x) {
			int i = (int)(e / kl), j = (int)(e % kl);
			a_full[i * k + w * kl + j] = shards[w][{0, 0, i, j}];
		}
	pkb_barrier_block(comm, blockIdx.x);   /* peers are done reading ours */
}

/* C[0:m16, 0:n64] by 16 x 64 tiles, one a warp */
template <typename T>
__global__ void __launch_bounds__(GEMM_WARPS * 32)
gemm_tk(mat_gl<T> a, mat_gl<T> b, mat_gl<T> c, int k, int tiles_n)
{
	int tile = blockIdx.x * GEMM_WARPS + threadIdx.x / 32;
	if (tile >= tiles_n * (int)(c.rows() / TM))
		return;
	int ti = tile / tiles_n, tj = tile % tiles_n;
	rt<T, TM, TK> a_reg;
	rt<T, TK, TN, ducks::rt_layout::col> b_reg;
	rt_fl<TM, TN> acc;
	warp::zero(acc);
	for (int kk = 0; kk < k / TK; kk++) {
		warp::load(a_reg, a, {0, 0, ti, kk});
		warp::load(b_reg, b, {0, 0, kk, tj});
		warp::mma_AB(acc, a_reg, b_reg, acc);
	}
	warp::store(c, acc, {0, 0, ti, tj});
}

/* the elements of C outside [0:m16, 0:n64]: rows m16.. (every column), then
 * columns n64.. of rows 0..m16-1; one a thread */
template <typename T>
__global__ void gemm_edge(const T *a, const T *b, T *c, int64_t m, int64_t n, int k, int64_t m16,
			  int64_t n64)
{
	int64_t below = (m - m16) * n, right = m16 * (n - n64);
	for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < below + right;
	     e += (int64_t)gridDim.x * blockDim.x) {
		int64_t i, j;
		if (e < below) {
			i = m16 + e / n;
			j = e % n;
		} else {
			i = (e - below) / (n - n64);
			j = n64 + (e - below) % (n - n64);
		}
		float s = 0.f;
		for (int kk = 0; kk < k; kk++)
			s += pkb_to_float(a[i * k + kk]) * pkb_to_float(b[(int64_t)kk * n + j]);
		c[i * n + j] = pkb_from_float<T>(s);
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	pkb_dtype t = ctx->in[0].dtype;
	if (t != PKB_BF16 && t != PKB_FP16 && t != PKB_FP32)
		return 1;
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	if (cudaMalloc(&s->a_full, ctx->in[0].bytes * ctx->world) != cudaSuccess)
		return 1;
	return ctx->svc->symm_alloc(ctx, ctx->in[0].bytes, &s->stage);
}

template <typename T, int W>
static void gather(pkb_ctx *ctx, struct state *s, int64_t m, int kl)
{
	T *ptrs[W];
	for (int r = 0; r < W; r++)
		ptrs[r] = (T *)s->stage.peers[r];
	shard_pgl<T, W> shards(ptrs, nullptr, nullptr, m, kl);
	int blocks = (int)((m * kl + THREADS * 8 - 1) / (THREADS * 8));
	blocks = blocks < 1 ? 1 : blocks > MAX_BLOCKS ? MAX_BLOCKS : blocks;
	gather_tk<T, W><<<blocks, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, shards, (const T *)ctx->in[0].data, (T *)s->a_full, m, kl);
}

template <typename T>
static int run(pkb_ctx *ctx, struct state *s)
{
	/* TK's warp MMA accumulates bf16 in fp32, but fp16 in fp16, which
	 * the tolerance (one rounding of an fp32 sum) does not allow */
	constexpr bool mma = std::is_same_v<T, bf16>;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	const pkb_tensor *a = &ctx->in[0], *b = &ctx->in[1];
	int64_t m = a->shape[0], kl = a->shape[1], k = b->shape[0], n = b->shape[1];
	switch (ctx->world) {   /* the pgl's device count is a template argument */
	case 2: gather<T, 2>(ctx, s, m, (int)kl); break;
	case 4: gather<T, 4>(ctx, s, m, (int)kl); break;
	case 8: gather<T, 8>(ctx, s, m, (int)kl); break;
	default:
		ctx->svc->log(ctx, "ok_tk_gemm is built for W = 2, 4, 8, not %d", ctx->world);
		return 1;
	}
	int64_t m16 = mma ? m / TM * TM : 0, n64 = mma ? n / TN * TN : 0;
	if (m16 == 0 || n64 == 0)
		m16 = n64 = 0;
	if constexpr (mma) {
		if (m16 > 0) {
			mat_gl<T> ga((T *)s->a_full, nullptr, nullptr, m16, k);
			mat_gl<T> gb((T *)b->data, nullptr, nullptr, k, n);
			/* C as (m16, n): gemm_tk stores only the tiles left of n64 */
			mat_gl<T> gc((T *)ctx->out[0].data, nullptr, nullptr, m16, n);
			int tiles = (int)(m16 / TM * (n64 / TN));
			gemm_tk<T><<<(tiles + GEMM_WARPS - 1) / GEMM_WARPS, GEMM_WARPS * 32, 0,
				     st>>>(ga, gb, gc, (int)k, (int)(n64 / TN));
		}
	}
	int64_t edge = (m - m16) * n + m16 * (n - n64);
	if (edge > 0) {
		int blocks = (int)((edge + 255) / 256);
		blocks = blocks > 4096 ? 4096 : blocks;
		gemm_edge<T><<<blocks, 256, 0, st>>>((const T *)s->a_full, (const T *)b->data,
						     (T *)ctx->out[0].data, m, n, (int)k, m16, n64);
	}
	return cudaGetLastError() != cudaSuccess;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	switch (ctx->in[0].dtype) {
	case PKB_BF16: return run<bf16>(ctx, s);
	case PKB_FP16: return run<half>(ctx, s);
	case PKB_FP32: return run<float>(ctx, s);
	default: return 1;
	}
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (!s)
		return 0;
	cudaFree(s->a_full);
	free(s);
	return 0;
}
