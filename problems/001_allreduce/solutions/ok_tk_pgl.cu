/*
 * 001_allreduce, known-good under the `parallelkittens` backend: the one-shot
 * pull all-reduce of ok_oneshot_pull.cu written with ThunderKittens' tiles and
 * its parallel global layout (pgl), over pkb's symmetric memory.
 *
 * The flat tensor is read as rows of 64 elements; a tile is 16 such rows
 * (1024 elements). Each warp of a block owns tiles in turn. It loads its
 * tile of the input into a register tile and stores it into this rank's
 * staging buffer (TK converts between the element type and fp32 on the
 * way). The block then meets the same block on every rank
 * (pkb_barrier_block), and the warp loads that tile from every rank's
 * staging buffer -- pgl[r] is rank r's buffer, reached over NVLink -- adding
 * in fp32 in rank order, and stores the sum into the output. A second
 * barrier keeps the next call from overwriting a tile a peer still reads.
 * The n % 1024 elements past the last whole tile are summed by the last
 * block with plain loads.
 *
 * No multicast: pkb's symmetric memory gives peer pointers only, and NVLink
 * multicast stays off (docs/BACKENDS.md), so the pgl is built with
 * MULTICAST = false and TK's barrier_t / multimem all_reduce are not used.
 *
 * Traffic: every rank reads (W-1) * M*N*e bytes from peers, in one hop, as
 * the one-shot does. Not tuned (register tiles, no TMA).
 * pkb-backend: parallelkittens
 */
#include "kittens.cuh"
#include "pkb.h"
#include "pkb_device.cuh"   /* defines: pkb_barrier_block, pkb_to_float, pkb_from_float */

using namespace kittens;

PKB_SOLUTION;

#define WARPS 8
#define THREADS (WARPS * 32)
#define MAX_BLOCKS 256
#define TILE_R 16
#define TILE_C 64
#define TILE_ELEMS (TILE_R * TILE_C)

struct state {
	pkb_symm stage;
};

/* the flat tensor as (rows, 64), one tile = 16 rows */
template <typename T> using flat_gl = gl<T, 1, 1, -1, TILE_C>;
template <typename T, int W> using flat_pgl = pgl<flat_gl<T>, W, false>;

template <typename T, int W>
__global__ void __launch_bounds__(THREADS)
allreduce_tk(pkb_dev_comm comm, const __grid_constant__ flat_pgl<T, W> stage, flat_gl<T> in,
	     flat_gl<T> out, T *const *stage_raw, const T *in_raw, T *out_raw, int64_t n)
{
	int tiles = (int)(n / TILE_ELEMS);
	int per = (tiles + gridDim.x - 1) / gridDim.x;
	int t0 = min(tiles, per * (int)blockIdx.x), t1 = min(tiles, t0 + per);
	int warp = threadIdx.x / 32;
	rt_fl<TILE_R, TILE_C> acc, part;

	for (int t = t0 + warp; t < t1; t += WARPS) {
		warp::load(part, in, {0, 0, t, 0});
		warp::store(stage[comm.rank], part, {0, 0, t, 0});
	}
	bool last = blockIdx.x == gridDim.x - 1;
	if (last)
		for (int64_t i = (int64_t)tiles * TILE_ELEMS + threadIdx.x; i < n; i += THREADS)
			stage_raw[comm.rank][i] = in_raw[i];

	if (!pkb_barrier_block(comm, blockIdx.x))
		return;

	for (int t = t0 + warp; t < t1; t += WARPS) {
		warp::zero(acc);
#pragma unroll
		for (int r = 0; r < W; r++) {
			warp::load(part, stage[r], {0, 0, t, 0});
			warp::add(acc, acc, part);
		}
		warp::store(out, acc, {0, 0, t, 0});
	}
	if (last)
		for (int64_t i = (int64_t)tiles * TILE_ELEMS + threadIdx.x; i < n; i += THREADS) {
			float s = 0.f;
			for (int r = 0; r < W; r++)
				s += pkb_to_float(stage_raw[r][i]);
			out_raw[i] = pkb_from_float<T>(s);
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

template <typename T, int W>
static void launch(pkb_ctx *ctx, struct state *s)
{
	int64_t n = ctx->in[0].numel;
	int64_t tiles = n / TILE_ELEMS;
	/* rows of the tiled part; at least one tile's worth so the layouts are
	 * never empty (no tile is touched when there is none) */
	int rows = (int)(tiles > 0 ? tiles * TILE_R : TILE_R);
	T *ptrs[W];
	for (int r = 0; r < W; r++)
		ptrs[r] = (T *)s->stage.peers[r];
	flat_pgl<T, W> stage(ptrs, nullptr, nullptr, rows, nullptr);
	flat_gl<T> in((T *)ctx->in[0].data, nullptr, nullptr, rows, nullptr);
	flat_gl<T> out((T *)ctx->out[0].data, nullptr, nullptr, rows, nullptr);
	int blocks = (int)((tiles + WARPS - 1) / WARPS);
	blocks = blocks < 1 ? 1 : blocks > MAX_BLOCKS ? MAX_BLOCKS : blocks;
	allreduce_tk<T, W><<<blocks, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, stage, in, out, (T *const *)s->stage.peers_dev,
		(const T *)ctx->in[0].data, (T *)ctx->out[0].data, n);
}

template <typename T>
static int launch_w(pkb_ctx *ctx, struct state *s)
{
	switch (ctx->world) {   /* the pgl's device count is a template argument */
	case 2: launch<T, 2>(ctx, s); return 0;
	case 4: launch<T, 4>(ctx, s); return 0;
	case 8: launch<T, 8>(ctx, s); return 0;
	default:
		ctx->svc->log(ctx, "ok_tk_pgl is built for W = 2, 4, 8, not %d", ctx->world);
		return 1;
	}
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	int rc;
	switch (ctx->in[0].dtype) {
	case PKB_BF16: rc = launch_w<bf16>(ctx, s); break;
	case PKB_FP16: rc = launch_w<half>(ctx, s); break;
	case PKB_FP32: rc = launch_w<float>(ctx, s); break;
	default: return 1;
	}
	return rc || cudaGetLastError() != cudaSuccess;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	free(ctx->user);
	return 0;
}
