/*
 * 029_moe_post_all2all reference: the original's steps on the device --
 * a chunk-regroup kernel that packs capacity slots, grouped
 * ncclSend/ncclRecv of the slots, weights_idx by scatter, the row weights
 * by CUB's stable select (masked_select), and a scaled scatter-add with
 * atomics in T (torch's scatter_add_).
 *
 *     slot j      = expert_outputs' chunks (l, j) for l = 0 .. E_l-1, in
 *                   that order (chunks are (local expert, source rank),
 *                   counts[j][l] rows each): the regrouped segment j,
 *                   packed from row 0 of a slot of C rows
 *     row i       = from rank j, input_splits[j] rows in rank order: this
 *                   rank's tokens' rows in perm order
 *     wT (8, M)   = 0, wT[sel[t, k], t] += w[t, k]   (weights_idx.T)
 *     tw (2M,)    = wT where routing_map, expert-major (masked_select)
 *     out (M, N)  = 0, out[perm[i]] += T(row_i * tw[i])   (atomics in T)
 * Every output row gets two contributions added into zero, so the atomic
 * order cannot change the result: out[t] = T(T(x_a w_a) + T(x_b w_b)).
 *
 * Why fixed slots of C rows: see problems/lib/moe_slots.cuh. Every split
 * is at most C = min(2M, E_l M, 2 ceil(2M/W)).
 *
 * Scratch: send and receive slots, W * C * N * e bytes each (4 MiB each
 * at M = N = 1024, bf16, W = 4), wT and tw, CUB's temporary storage.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <nccl.h>
#include <stdint.h>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/transform_iterator.h>
#include "pkb.h"
#include "pkb_device.cuh"
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
	void *wt, *tw;      /* (8, M) and (2M,) in T */
	int64_t *selected;  /* CUB's count of selected items (2M) */
	void *temp;
	size_t temp_bytes;
};

/* routing_map.bool() */
struct nonzero {
	__host__ __device__ bool operator()(uint8_t v) const { return v != 0; }
};
typedef thrust::transform_iterator<nonzero, const uint8_t *> flag_iter;

/* pack: row o of expert_outputs, in chunk (l, j) -- chunk c = l * W + j,
 * counts[j][l] rows -- goes to row in_off[j][l] + (o - out_off[c]) of
 * slot j. One warp a row. */
template <typename U>
__global__ void __launch_bounds__(THREADS)
pack_rows(const U *x, const int64_t *counts, int world, U *send, int64_t rows, int64_t upr,
	  int64_t cap)
{
	__shared__ int64_t out_off[EXPERTS + 1], in_off[EXPERTS];
	moe_chunk_copy<THREADS>(x, send, counts, world, EXPERTS, in_off, out_off, rows, upr, cap,
				1);
}

/* weights_idx.T: wT[sel[t, k], t] = 0 + w[t, k] (wT zeroed before; the
 * two experts of a token are distinct, so each entry gets one add) */
template <typename T>
__global__ void scatter_weights(const T *w, const int64_t *sel, T *wt, int64_t m)
{
	for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < m;
	     t += (int64_t)gridDim.x * blockDim.x)
		for (int k = 0; k < TOPK; k++)
			wt[sel[t * TOPK + k] * m + t] =
				pkb_from_float<T>(pkb_to_float(wt[sel[t * TOPK + k] * m + t]) +
						  pkb_to_float(w[t * TOPK + k]));
}

/* out[perm[i]] += T(row_i * tw[i]), row i from slot j of the received
 * rows. One warp a row, atomics in T. */
template <typename T>
__global__ void __launch_bounds__(THREADS)
unpermute(const T *recv, const int64_t *splits, const int64_t *perm, const T *tw, T *out,
	  int world, int64_t rows, int64_t n, int64_t cap)
{
	__shared__ int64_t off[EXPERTS + 1];
	moe_split_offsets(splits, world, off);
	int lane = threadIdx.x & 31;
	int64_t warps = (int64_t)gridDim.x * (THREADS / 32);
	for (int64_t i = blockIdx.x * (int64_t)(THREADS / 32) + (threadIdx.x >> 5); i < rows;
	     i += warps) {
		const T *s = recv + moe_slot_row(off, world, cap, i) * n;
		T *d = out + perm[i] * n;
		float w = pkb_to_float(tw[i]);
		for (int64_t c = lane; c < n; c += 32)
			atomicAdd(d + c, pkb_from_float<T>(pkb_to_float(s[c]) * w));
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	int w = ctx->world;
	PKB_CK(pkb_ref_float_dtype(ctx, ctx->in[0].dtype));
	if (EXPERTS % w || ctx->in[1].dtype != ctx->in[0].dtype || ctx->in[6].dtype != PKB_BOOL) {
		ctx->svc->log(ctx, "problem 29 reference: W must divide 8, routing_weights be in "
			      "the dtype, routing_map bool");
		return 1;
	}
	struct state *s;
	PKB_CK(pkb_ref_state(ctx, &s));
	int64_t m = ctx->in[1].shape[0], m2 = TOPK * m, el = EXPERTS / w;
	size_t e = pkb_dtype_size(ctx->in[0].dtype);
	int64_t cap = moe_slots_cap(m2, m2 < el * m ? m2 : el * m, w);
	PKB_CK(moe_slots_init(ctx, &s->slots, cap, ctx->in[0].bytes / m2));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->wt, EXPERTS * m * e));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->tw, m2 * e));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->selected, sizeof(int64_t)));
	/* the select moves T's bits: 2 or 4 bytes an item */
	flag_iter flags((const uint8_t *)NULL, nonzero());
	if (e == 2)
		PKB_CK_CUDA(ctx, cub::DeviceSelect::Flagged(NULL, s->temp_bytes, (const uint16_t *)NULL,
							    flags, (uint16_t *)NULL, s->selected,
							    EXPERTS * m));
	else
		PKB_CK_CUDA(ctx, cub::DeviceSelect::Flagged(NULL, s->temp_bytes, (const uint32_t *)NULL,
							    flags, (uint32_t *)NULL, s->selected,
							    EXPERTS * m));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->temp, s->temp_bytes));
	return 0;
}

template <typename U>
static int pack(pkb_ctx *ctx, struct state *s, unsigned blocks)
{
	int64_t m2 = ctx->in[0].shape[0];
	int64_t upr = (int64_t)(ctx->in[0].bytes / m2 / sizeof(U));
	pack_rows<U><<<blocks, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		(const U *)ctx->in[0].data, (const int64_t *)ctx->in[5].data, ctx->world,
		(U *)s->slots.send, m2, upr, s->slots.cap);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

template <typename T, typename B>
static int combine(pkb_ctx *ctx, struct state *s, cudaStream_t st)
{
	int w = ctx->world;
	int64_t m = ctx->in[1].shape[0], m2 = TOPK * m, n = ctx->in[0].shape[1];
	size_t row = ctx->in[0].bytes / m2;
	unsigned blocks = pkb_ref_blocks(m2, THREADS / 32, MAX_BLOCKS);

	/* 1. regroup the chunks to (source rank, local expert) into slots */
	if (row % 16 == 0)
		PKB_CK(pack<uint4>(ctx, s, blocks));
	else if (row % 8 == 0)
		PKB_CK(pack<uint2>(ctx, s, blocks));
	else if (row % 4 == 0)
		PKB_CK(pack<uint32_t>(ctx, s, blocks));
	else
		PKB_CK(pack<uint16_t>(ctx, s, blocks));

	/* 2. all-to-all back: slot j to rank j, slot j from rank j */
	PKB_CK(moe_slots_exchange(ctx, &s->slots));

	/* 3. weights_idx.T and its masked_select by routing_map */
	PKB_CK_CUDA(ctx, cudaMemsetAsync(s->wt, 0, EXPERTS * m * sizeof(T), st));
	scatter_weights<T><<<pkb_ref_blocks(m, THREADS, MAX_BLOCKS), THREADS, 0, st>>>(
		(const T *)ctx->in[1].data, (const int64_t *)ctx->in[2].data, (T *)s->wt, m);
	PKB_CK_LAUNCH(ctx);
	flag_iter flags((const uint8_t *)ctx->in[6].data, nonzero());
	PKB_CK_CUDA(ctx, cub::DeviceSelect::Flagged(s->temp, s->temp_bytes, (const B *)s->wt, flags,
						    (B *)s->tw, s->selected, EXPERTS * m, st));

	/* 4. the scaled scatter-add into zeros */
	PKB_CK_CUDA(ctx, cudaMemsetAsync(ctx->out[0].data, 0, ctx->out[0].bytes, st));
	unpermute<T><<<blocks, THREADS, 0, st>>>((const T *)s->slots.recv,
						 (const int64_t *)ctx->in[3].data,
						 (const int64_t *)ctx->in[7].data, (const T *)s->tw,
						 (T *)ctx->out[0].data, w, m2, n, s->slots.cap);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

/* moe_slots_exchange takes the communicator from ctx */
static int run(pkb_ctx *ctx, struct state *s, cudaStream_t st, ncclComm_t)
{
	switch (ctx->in[0].dtype) {
	case PKB_BF16: return combine<__nv_bfloat16, uint16_t>(ctx, s, st);
	case PKB_FP16: return combine<__half, uint16_t>(ctx, s, st);
	case PKB_FP32: return combine<float, uint32_t>(ctx, s, st);
	default: return 1;
	}
}

static void release(struct state *s)
{
	moe_slots_release(&s->slots);
	cudaFree(s->wt);
	cudaFree(s->tw);
	cudaFree(s->selected);
	cudaFree(s->temp);
}

PKB_REF_RUN_FINI(struct state, run, release)
