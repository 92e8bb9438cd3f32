/*
 * 003_broadcast, known-good: a pipelined chain, 0 -> 1 -> ... -> W-1, over
 * symmetric memory (include/pkb_chain.cuh), for large tensors.
 *
 * Rank 0 pushes its input, chunk by chunk, into a slot of rank 1's staging
 * buffer (and into its own output, from the same loads); every other rank
 * copies what it received into its output and, but the last, pushes it on.
 * Each of the G blocks streams chunks b, b + G, ... through its own ring of
 * SLOTS slots, so every link carries the tensor once and all links work at
 * once: at 256 MiB a link takes about 0.73 ms at the SM store rate of
 * `pkb calibrate` (369 GB/s), where rank 0 pushing to every rank sends W-1
 * times the bytes and scatter + all-gather moves each byte twice.
 *
 * At small sizes the W-1 hops in sequence make it slow; it is meant for
 * tens of MiB and more.
 *
 * Traffic: every link carries M*N*e bytes.
 */
#include <cuda_runtime.h>
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
#define SRC 0

__global__ void __launch_bounds__(THREADS)
broadcast_chain(pkb_dev_comm comm, pkb_chain_dev c, const void *in, void *out, int64_t bytes)
{
	const int me = comm.rank, w = comm.world;
	const int prev = me - 1;                     /* produces into my slots; -1: I am 0 */
	const int next = me + 1 < w ? me + 1 : -1;   /* I produce into its slots */
	const int64_t per = CHUNK / 16;              /* 16-byte units a chunk */
	const int64_t units = (bytes + 15) / 16;
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
		const void *src = prev >= 0 ? (const void *)(pkb_chain_slot(c, me, j) - a * 16) : in;
		void *fwd = next >= 0 ? (void *)(pkb_chain_slot(c, next, j) - a * 16) : NULL;
		pkb_copy_flat<THREADS>(out, fwd, src, a, n, bytes);
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
	int blocks = pkb_chain_resident(ctx, broadcast_chain, THREADS, BLOCKS);
	return pkb_chain_init(ctx, ch, blocks, SLOTS, CHUNK);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct pkb_chain *ch = (struct pkb_chain *)ctx->user;
	if (((uintptr_t)ctx->in[0].data | (uintptr_t)ctx->out[0].data) & 15) {
		ctx->svc->log(ctx, "buffers not 16-byte aligned");
		return 1;
	}
	int64_t bytes = (int64_t)ctx->out[0].bytes;
	broadcast_chain<<<pkb_chain_grid(ch, bytes), THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, pkb_chain_dev_of(ch), ctx->in[0].data, ctx->out[0].data, bytes);
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
