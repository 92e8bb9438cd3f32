/*
 * moe_slots.cuh -- the capacity all-to-all of 027's, 028's and 029's
 * references. Each rank sends every rank one slot of C rows, whole: the
 * splits are device tensors, and ncclSend/ncclRecv need their counts on the
 * host -- a device-to-host copy and a wait in every call (torch's .tolist()),
 * which stalls the stream and cannot be captured in a CUDA graph -- while C
 * bounds every split, so fixed slots carry any routing (GShard / Tutel /
 * DeepSpeed-MoE dispatch, at up to twice the minimum traffic).
 *
 * Host: the slots' buffers, their capacity and their exchange. Device, one
 * warp a row: the exclusive scan of the splits and the slot row of a row
 * (027, 028's pack, 029's unpermute), and the offsets of 028's and 029's
 * chunks (local expert l, source rank j), a chunk row's slot row and the
 * copy between chunks and slots.
 */
#ifndef PKB_MOE_SLOTS_CUH
#define PKB_MOE_SLOTS_CUH

#include <stdint.h>
#include "pkb_ref.cuh"

struct moe_slots {
	int64_t cap;         /* C: rows per slot */
	size_t slot;         /* bytes per slot: C rows */
	char *send, *recv;   /* [W][C][row] each */
};

/* C = min(most, 2 ceil(rows / W)): twice an even share of `rows` (a
 * capacity factor of 2), at most `most` */
static inline int64_t moe_slots_cap(int64_t rows, int64_t most, int w)
{
	int64_t keep = (rows + w - 1) / w;
	return most < 2 * keep ? most : 2 * keep;
}

/* pkb_init: W slots of `cap` rows of `row` bytes, to send and to receive */
static inline int moe_slots_init(pkb_ctx *ctx, struct moe_slots *m, int64_t cap, size_t row)
{
	m->cap = cap;
	m->slot = (size_t)cap * row;
	PKB_CK_CUDA(ctx, cudaMalloc(&m->send, ctx->world * m->slot));
	PKB_CK_CUDA(ctx, cudaMalloc(&m->recv, ctx->world * m->slot));
	return 0;
}

/* send slot d to rank d, receive rank j's into slot j */
static inline int moe_slots_exchange(pkb_ctx *ctx, struct moe_slots *m)
{
	return pkb_ref_all_to_all(ctx, m->send, m->recv, m->slot);
}

static inline void moe_slots_release(struct moe_slots *m)
{
	cudaFree(m->send);
	cudaFree(m->recv);
}

/* off[0 .. world]: the exclusive scan of the splits (world <= the size of
 * off - 1), by thread 0 in shared memory; the block waits for it */
__device__ __forceinline__ void moe_split_offsets(const int64_t *splits, int world, int64_t *off)
{
	if (threadIdx.x == 0) {
		off[0] = 0;
		for (int j = 0; j < world; j++)
			off[j + 1] = off[j] + splits[j];
	}
	__syncthreads();
}

/* row i of the packed side, in segment j of the splits, is row i - off[j]
 * of slot j */
__device__ __forceinline__ int64_t moe_slot_row(const int64_t *off, int world, int64_t cap,
						 int64_t i)
{
	int j = 0;
	while (j + 1 < world && off[j + 1] <= i)
		j++;
	return (int64_t)j * cap + (i - off[j]);
}

/*
 * The `experts` chunks (l, j) -- chunk c = l * W + j, counts[j][l] rows, in
 * chunk order on the chunked side -- lie in slot j in expert order: chunk
 * (l, j) from slot row in_off[j * el + l], on the chunked side from
 * out_off[c]. By thread 0 in shared memory; the block waits for it.
 */
__device__ __forceinline__ void moe_chunk_offsets(const int64_t *counts, int world, int experts,
						  int64_t *in_off, int64_t *out_off)
{
	int el = experts / world;
	if (threadIdx.x == 0) {
		for (int j = 0; j < world; j++) {
			int64_t o = 0;
			for (int l = 0; l < el; l++) {
				in_off[j * el + l] = o;
				o += counts[j * el + l];
			}
		}
		out_off[0] = 0;
		for (int c = 0; c < experts; c++) {
			int l = c / world, j = c % world;
			out_off[c + 1] = out_off[c] + counts[j * el + l];
		}
	}
	__syncthreads();
}

/* the slot row of row o of the chunked side */
__device__ __forceinline__ int64_t moe_chunk_row(const int64_t *in_off, const int64_t *out_off,
						  int world, int experts, int64_t cap, int64_t o)
{
	int el = experts / world;
	int c = 0;
	while (c + 1 < experts && out_off[c + 1] <= o)
		c++;
	int l = c / world, j = c % world;
	return (int64_t)j * cap + in_off[j * el + l] + o - out_off[c];
}

/*
 * A kernel's body that moves the `rows` rows (`upr` units U each) of the
 * chunked side between it and the slots: to_slots, from src's chunks into
 * dst's slots (029 packs its expert outputs); else from src's slots into
 * dst's chunks (028 regroups what it received). in_off and out_off: shared
 * memory of the experts and experts + 1 offsets (moe_chunk_offsets).
 * One warp a row, NTHREADS threads a block.
 */
template <int NTHREADS, typename U>
__device__ __forceinline__ void moe_chunk_copy(const U *src, U *dst, const int64_t *counts,
					       int world, int experts, int64_t *in_off,
					       int64_t *out_off, int64_t rows, int64_t upr,
					       int64_t cap, int to_slots)
{
	moe_chunk_offsets(counts, world, experts, in_off, out_off);
	int lane = threadIdx.x & 31;
	int64_t warps = (int64_t)gridDim.x * (NTHREADS / 32);
	for (int64_t o = blockIdx.x * (int64_t)(NTHREADS / 32) + (threadIdx.x >> 5); o < rows;
	     o += warps) {
		int64_t r = moe_chunk_row(in_off, out_off, world, experts, cap, o);
		const U *s = src + (to_slots ? o : r) * upr;
		U *d = dst + (to_slots ? r : o) * upr;
		for (int64_t u = lane; u < upr; u += 32)
			d[u] = s[u];
	}
}

#endif /* PKB_MOE_SLOTS_CUH */
