/*
 * 004_reduce, known-good: a pipelined chain, W-1 -> W-2 -> ... -> 0, over
 * symmetric memory (include/pkb_chain.cuh), for large tensors.
 *
 * Rank W-1 pushes its input, chunk by chunk, into a slot of rank W-2's
 * staging buffer; every rank in between adds its input to the partial sum
 * it received and pushes the result on; rank 0 adds its input and writes
 * the sum. Each of the G blocks streams chunks b, b + G, ... through its own
 * ring of SLOTS slots, so that every link carries the tensor once and all
 * links work at once: at 256 MiB a link takes about 0.73 ms at the SM store
 * rate of `pkb calibrate` (369 GB/s), where a reduce-scatter + gather moves
 * twice the bytes into rank 0. Partial sums are rounded to the dtype at
 * every hop (as NCCL's chain does); the tolerance allows any order.
 *
 * Every rank but 0 returns its own input (the original's quirk): written
 * from the same loads. At small sizes the W-1 hops in sequence make it slow;
 * it is meant for tens of MiB and more.
 *
 * Traffic: every link carries M*N*e bytes.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_copy.cuh"
#include "pkb_chain.cuh"

PKB_SOLUTION;

#ifndef THREADS
#define THREADS 512
#endif
#ifndef BLOCKS
#define BLOCKS 128            /* blocks streaming at once, at most (all resident) */
#endif
#ifndef SLOTS
#define SLOTS 4               /* ring slots per block */
#endif
#ifndef CHUNK
#define CHUNK (256 << 10)     /* bytes per chunk and slot */
#endif
#define DST 0

template <typename T>
__global__ void __launch_bounds__(THREADS)
reduce_chain(pkb_dev_comm comm, pkb_chain_dev c, const T *in, T *out, int64_t elems)
{
	const int me = comm.rank, w = comm.world;
	const int prev = me + 1 < w ? me + 1 : -1;   /* produces into my slots */
	const int next = me - 1;                     /* I produce into its slots; -1: I am 0 */
	const int64_t per = CHUNK / 16;              /* 16-byte units a chunk */
	const int64_t units = (elems * (int64_t)sizeof(T) + 15) / 16;
	const int64_t nchunks = (units + per - 1) / per;
	uint32_t j = c.seq[blockIdx.x];
	__syncthreads();   /* every thread has read the counter before it moves */
	for (int64_t q = blockIdx.x; q < nchunks; q += gridDim.x, j++) {
		int64_t a = q * per;
		int n = (int)min(per, units - a);
		if (prev >= 0 && !pkb_chain_wait_full(comm, c, j))
			return;
		if (next >= 0 && !pkb_chain_wait_free(comm, c, j))
			return;
		/* slot pointers shifted so that unit a of the tensor is unit 0 of the slot */
		const T *src[2] = { in, prev >= 0 ? (const T *)(pkb_chain_slot(c, me, j) - a * 16)
						  : NULL };
		T *dst = next >= 0 ? (T *)(pkb_chain_slot(c, next, j) - a * 16) : out;
		pkb_sum_flat<THREADS, T>(dst, src, prev >= 0 ? 2 : 1, a, n, elems);
		if (next >= 0)   /* a non-root rank returns its input */
			pkb_copy_flat<THREADS>(out, NULL, in, a, n, elems * (int64_t)sizeof(T));
		if (prev >= 0)
			pkb_chain_post_free(c, prev, j);
		if (next >= 0)
			pkb_chain_post_full(c, next, j);
	}
	if (threadIdx.x == 0)
		c.seq[blockIdx.x] = j;
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct pkb_chain *ch = (struct pkb_chain *)calloc(1, sizeof *ch);
	if (!ch)
		return 1;
	ctx->user = ch;
	if (pkb_param_get(ctx, "dst", DST) != DST)
		return 1;
	int blocks;
	switch (ctx->in[0].dtype) {
	case PKB_BF16: blocks = pkb_chain_resident(ctx, reduce_chain<__nv_bfloat16>, THREADS, BLOCKS); break;
	case PKB_FP16: blocks = pkb_chain_resident(ctx, reduce_chain<__half>, THREADS, BLOCKS); break;
	case PKB_FP32: blocks = pkb_chain_resident(ctx, reduce_chain<float>, THREADS, BLOCKS); break;
	default: return 1;
	}
	return pkb_chain_init(ctx, ch, blocks, SLOTS, CHUNK);
}

template <typename T>
static void launch(pkb_ctx *ctx, struct pkb_chain *ch)
{
	int64_t elems = (int64_t)(ctx->in[0].bytes / sizeof(T));
	int grid = pkb_chain_grid(ch, ctx->in[0].bytes);
	reduce_chain<T><<<grid, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, pkb_chain_dev_of(ch), (const T *)ctx->in[0].data, (T *)ctx->out[0].data,
		elems);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct pkb_chain *ch = (struct pkb_chain *)ctx->user;
	if (((uintptr_t)ctx->in[0].data | (uintptr_t)ctx->out[0].data) & 15) {
		ctx->svc->log(ctx, "buffers not 16-byte aligned");
		return 1;
	}
	switch (ctx->in[0].dtype) {
	case PKB_BF16: launch<__nv_bfloat16>(ctx, ch); break;
	case PKB_FP16: launch<__half>(ctx, ch); break;
	case PKB_FP32: launch<float>(ctx, ch); break;
	default: return 1;
	}
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct pkb_chain *ch = (struct pkb_chain *)ctx->user;
	if (ch)
		pkb_chain_free(ch);
	free(ch);
	return 0;
}
