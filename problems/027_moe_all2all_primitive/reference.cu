/*
 * 027_moe_all2all_primitive reference: a capacity all-to-all, the way
 * GShard / Tutel / DeepSpeed-MoE dispatch without a host round trip. A
 * kernel packs segment d of the input (input_split_sizes[d] rows) into slot
 * d of a (W, C, N) send buffer; grouped ncclSend/ncclRecv move whole slots
 * (C rows each, the self slot included: one NCCL launch); a kernel unpacks
 * the first output_split_sizes[j] rows of slot j into the output, in rank
 * order.
 *
 *     output_r = cat_j( local_tensor_j[sum_{d<r} S[j][d] : ... + S[j][r]] )
 *
 * Why slots of C rows rather than the splits themselves: see
 * problems/lib/moe_slots.cuh. The problem guarantees every split <= C =
 * min(M, 2 ceil(M/W)) (a capacity factor of 2). The price:
 * (W-1) * C rows sent a rank instead of M - S[r][r] -- up to 2x the
 * minimum (2 * 3 * 512 rows against ~768 at M = 1024, W = 4).
 *
 * Scratch: send and receive buffers of W * C * N * e bytes each (4 MiB
 * each at M = N = 1024, bf16, W = 4).
 */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdint.h>
#include "pkb.h"
#include "pkb_ref.cuh"
#include "moe_slots.cuh"
/* defines: struct moe_slots, moe_slots_cap, moe_slots_init, moe_slots_exchange,
 * moe_slots_release, moe_split_offsets, moe_slot_row, moe_chunk_offsets, moe_chunk_row,
 * moe_chunk_copy */

PKB_SOLUTION;

#define THREADS 256
#define MAX_BLOCKS 1024
#define MAX_WORLD 64

/* the state: W slots of C rows to send, W to receive (struct moe_slots) */

/*
 * One warp per row of the packed side (`rows` of them). pack: row i of the
 * input, in segment d, goes to row i - off[d] of slot d. unpack: row i of
 * the output, in segment j, comes from row i - off[j] of slot j. off[] is
 * the exclusive scan of the splits, made by each block in shared memory
 * (W <= 64).
 */
template <typename U>
__global__ void __launch_bounds__(THREADS)
move_rows(const U *src, U *dst, const int64_t *splits, int world, int64_t rows, int64_t upr,
	  int64_t cap, int pack)
{
	__shared__ int64_t off[MAX_WORLD + 1];
	moe_split_offsets(splits, world, off);
	int lane = threadIdx.x & 31;
	int64_t warps = (int64_t)gridDim.x * (THREADS / 32);
	for (int64_t i = blockIdx.x * (int64_t)(THREADS / 32) + (threadIdx.x >> 5); i < rows;
	     i += warps) {
		int64_t slot_row = moe_slot_row(off, world, cap, i);
		const U *s = src + (pack ? i : slot_row) * upr;
		U *d = dst + (pack ? slot_row : i) * upr;
		for (int64_t u = lane; u < upr; u += 32)
			d[u] = s[u];
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	int64_t m = ctx->in[0].shape[0];
	PKB_CK(pkb_ref_max_world(ctx, MAX_WORLD));
	struct moe_slots *s;
	PKB_CK(pkb_ref_state(ctx, &s));
	return moe_slots_init(ctx, s, moe_slots_cap(m, m, ctx->world), ctx->in[0].bytes / m);
}

template <typename U>
static int move(pkb_ctx *ctx, struct moe_slots *s, cudaStream_t st, const void *src,
		void *dst, const void *splits, int64_t rows, int pack)
{
	int64_t upr = (int64_t)(ctx->in[0].bytes / ctx->in[0].shape[0] / sizeof(U));
	move_rows<U><<<pkb_ref_blocks(rows, THREADS / 32, MAX_BLOCKS), THREADS, 0, st>>>(
		(const U *)src, (U *)dst, (const int64_t *)splits, ctx->world, rows, upr, s->cap,
		pack);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

/* rows in the widest unit their byte length allows */
static int move_any(pkb_ctx *ctx, struct moe_slots *s, cudaStream_t st, const void *src,
		    void *dst, const void *splits, int pack)
{
	size_t row = ctx->in[0].bytes / ctx->in[0].shape[0];
	int64_t rows = ctx->in[0].shape[0];
	if (row % 16 == 0)
		return move<uint4>(ctx, s, st, src, dst, splits, rows, pack);
	if (row % 8 == 0)
		return move<uint2>(ctx, s, st, src, dst, splits, rows, pack);
	if (row % 4 == 0)
		return move<uint32_t>(ctx, s, st, src, dst, splits, rows, pack);
	if (row % 2 == 0)
		return move<uint16_t>(ctx, s, st, src, dst, splits, rows, pack);
	return move<uint8_t>(ctx, s, st, src, dst, splits, rows, pack);
}

/* moe_slots_exchange takes the communicator from ctx */
static int run(pkb_ctx *ctx, struct moe_slots *s, cudaStream_t st, ncclComm_t)
{
	PKB_CK(move_any(ctx, s, st, ctx->in[0].data, s->send, ctx->in[1].data, 1));
	PKB_CK(moe_slots_exchange(ctx, s));
	return move_any(ctx, s, st, s->recv, ctx->out[0].data, ctx->in[2].data, 0);
}

PKB_REF_RUN_FINI(struct moe_slots, run, moe_slots_release)
