/*
 * 028_moe_pre_all2all reference: routing map and permutation on the device
 * (CUB's stable select), a capacity all-to-all of the permuted rows
 * (grouped ncclSend/ncclRecv of fixed slots), a regroup kernel.
 *
 *     routing_map[e, t] = mask[e, 0, t] + mask[e, 1, t]
 *     perm              = the (e, t) with routing_map[e, t] != 0, expert-
 *                         major, tokens ascending: a stable select of the
 *                         flattened (8, M) map, keeping t = index % M
 *     slot d            = rows perm[p] of hidden_states for p in segment d
 *                         of input_splits, packed from row 0 of the slot
 *     from rank j       = its slot for us: output_splits[j] rows, local
 *                         expert by local expert (num_global_tokens_per_
 *                         local_expert[j][l] rows each)
 *     output            = for l, for j: chunk (j, l)
 *
 * Why fixed slots of C rows: see problems/lib/moe_slots.cuh. Every split is
 * at most C = min(2M, E_l M, 2 ceil(2M/W)) (the problem's capacity factor
 * of 2).
 *
 * Scratch: send and receive slots, W * C * N * e bytes each (4 MiB each
 * at M = N = 1024, bf16, W = 4), and CUB's temporary storage.
 */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdint.h>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include "pkb.h"
#include "pkb_ref.cuh"
#include "moe_routing.h"   /* defines: EXPERTS, TOPK */
#include "moe_slots.cuh"
/* defines: struct moe_slots, moe_slots_cap, moe_slots_init, moe_slots_exchange,
 * moe_slots_release, moe_split_offsets, moe_slot_row, moe_chunk_offsets, moe_chunk_row,
 * moe_chunk_copy */

PKB_SOLUTION;

#define THREADS 256
#define MAX_BLOCKS 1024

struct state {
	struct moe_slots slots;   /* [W][C][N] each way */
	int64_t *selected;  /* CUB's count of selected items (2M) */
	void *temp;
	size_t temp_bytes;
};

/* token id of a flat (e, t) index */
struct token_of {
	int64_t m;
	__host__ __device__ int64_t operator()(int64_t i) const { return i % m; }
};

/* routing_map's bool(): the flag of a flat (e, t) index */
struct routed {
	const float *map;
	__host__ __device__ bool operator()(int64_t i) const { return map[i] != 0.f; }
};

typedef thrust::transform_iterator<token_of, thrust::counting_iterator<int64_t> > token_iter;
typedef thrust::transform_iterator<routed, thrust::counting_iterator<int64_t> > flag_iter;

/* routing_map = expert_mask.sum(1); block 0 also writes the shape */
__global__ void routing_map(const float *mask, float *map, int64_t m, int64_t n, int64_t *shape)
{
	if (blockIdx.x == 0 && threadIdx.x == 0) {
		shape[0] = m;
		shape[1] = n;
	}
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < EXPERTS * m;
	     i += (int64_t)gridDim.x * blockDim.x) {
		int64_t e = i / m, t = i % m;
		map[i] = mask[(e * TOPK) * m + t] + mask[(e * TOPK + 1) * m + t];
	}
}

/* pack: permuted row p, in segment d of input_splits, is hidden[perm[p]]
 * and goes to row p - off[d] of slot d. One warp a row. */
template <typename U>
__global__ void __launch_bounds__(THREADS)
pack_rows(const U *hidden, const int64_t *perm, const int64_t *splits, int world, U *send,
	  int64_t rows, int64_t upr, int64_t cap)
{
	__shared__ int64_t off[EXPERTS + 1];
	moe_split_offsets(splits, world, off);
	int lane = threadIdx.x & 31;
	int64_t warps = (int64_t)gridDim.x * (THREADS / 32);
	for (int64_t p = blockIdx.x * (int64_t)(THREADS / 32) + (threadIdx.x >> 5); p < rows;
	     p += warps) {
		int64_t slot_row = moe_slot_row(off, world, cap, p);
		const U *s = hidden + perm[p] * upr;
		U *t = send + slot_row * upr;
		for (int64_t u = lane; u < upr; u += 32)
			t[u] = s[u];
	}
}

/* regroup: output chunk (l, j) -- in (local expert, source rank) order --
 * is rows in_off[j][l] .. of slot j, num_global_tokens_per_local_expert
 * [j][l] of them. One warp a row. */
template <typename U>
__global__ void __launch_bounds__(THREADS)
regroup_rows(const U *recv, const int64_t *counts, int world, U *out, int64_t rows,
	     int64_t upr, int64_t cap)
{
	__shared__ int64_t out_off[EXPERTS + 1], in_off[EXPERTS];
	moe_chunk_copy<THREADS>(recv, out, counts, world, EXPERTS, in_off, out_off, rows, upr, cap,
				0);
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	int w = ctx->world;
	if (EXPERTS % w || ctx->in[1].dtype != PKB_FP32) {
		ctx->svc->log(ctx, "problem 28 reference: W must divide 8, expert_mask be fp32");
		return 1;
	}
	struct state *s;
	PKB_CK(pkb_ref_state(ctx, &s));
	int64_t m = ctx->in[0].shape[0], m2 = TOPK * m, el = EXPERTS / w;
	int64_t cap = moe_slots_cap(m2, m2 < el * m ? m2 : el * m, w);
	PKB_CK(moe_slots_init(ctx, &s->slots, cap, ctx->in[0].bytes / m));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->selected, sizeof(int64_t)));
	thrust::counting_iterator<int64_t> zero(0);
	token_iter tokens(zero, token_of{ m });
	flag_iter flags(zero, routed{ NULL });
	PKB_CK_CUDA(ctx, cub::DeviceSelect::Flagged(NULL, s->temp_bytes, tokens, flags,
						    (int64_t *)NULL, s->selected, EXPERTS * m));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->temp, s->temp_bytes));
	return 0;
}

template <typename U>
static int move(pkb_ctx *ctx, struct moe_slots *sl, cudaStream_t st)
{
	int w = ctx->world;
	int64_t m = ctx->in[0].shape[0], m2 = TOPK * m;
	int64_t upr = (int64_t)(ctx->in[0].bytes / m / sizeof(U));
	unsigned blocks = pkb_ref_blocks(m2, THREADS / 32, MAX_BLOCKS);

	pack_rows<U><<<blocks, THREADS, 0, st>>>((const U *)ctx->in[0].data,
						 (const int64_t *)ctx->out[2].data,
						 (const int64_t *)ctx->in[2].data, w, (U *)sl->send,
						 m2, upr, sl->cap);
	PKB_CK_LAUNCH(ctx);
	PKB_CK(moe_slots_exchange(ctx, sl));
	regroup_rows<U><<<blocks, THREADS, 0, st>>>((const U *)sl->recv,
						    (const int64_t *)ctx->in[4].data, w,
						    (U *)ctx->out[0].data, m2, upr, sl->cap);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

/* moe_slots_exchange takes the communicator from ctx */
static int run(pkb_ctx *ctx, struct state *s, cudaStream_t st, ncclComm_t)
{
	int64_t m = ctx->in[0].shape[0], n = ctx->in[0].shape[1];
	float *map = (float *)ctx->out[1].data;
	int64_t *perm = (int64_t *)ctx->out[2].data;

	routing_map<<<pkb_ref_blocks(EXPERTS * m, THREADS, MAX_BLOCKS), THREADS, 0, st>>>(
		(const float *)ctx->in[1].data, map, m, n, (int64_t *)ctx->out[3].data);
	PKB_CK_LAUNCH(ctx);
	thrust::counting_iterator<int64_t> zero(0);
	token_iter tokens(zero, token_of{ m });
	flag_iter flags(zero, routed{ map });
	PKB_CK_CUDA(ctx, cub::DeviceSelect::Flagged(s->temp, s->temp_bytes, tokens, flags, perm,
						    s->selected, EXPERTS * m, st));

	/* rows in the widest unit their byte length allows */
	size_t row = ctx->in[0].bytes / m;
	if (row % 16 == 0)
		return move<uint4>(ctx, &s->slots, st);
	if (row % 8 == 0)
		return move<uint2>(ctx, &s->slots, st);
	if (row % 4 == 0)
		return move<uint32_t>(ctx, &s->slots, st);
	if (row % 2 == 0)
		return move<uint16_t>(ctx, &s->slots, st);
	return move<uint8_t>(ctx, &s->slots, st);
}

static void release(struct state *s)
{
	moe_slots_release(&s->slots);
	cudaFree(s->selected);
	cudaFree(s->temp);
}

PKB_REF_RUN_FINI(struct state, run, release)
