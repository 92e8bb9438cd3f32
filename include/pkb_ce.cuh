/*
 * pkb_ce.cuh -- large point-to-point transfers by the copy engines, in
 * lockstep steps, over pkb's symmetric memory (for the data-movement
 * collectives of 005, 006 and 008 at large sizes; include it after
 * pkb_device.cuh and pkb_copy.cuh).
 *
 * Why: a copy engine moves a peer-to-peer copy faster than SM stores (one
 * way 397 against 369 GB/s on the lent H200s, `pkb calibrate`) and uses no
 * SM, but several copies into or out of one GPU at once share its links
 * badly (all-to-all by concurrent copies: 195 GB/s per GPU). So the
 * transfers go in steps: in each, a rank sends at most one copy and
 * receives at most one, and every rank meets every other (a one-block
 * kernel, pkb_barrier_block) before the next step.
 *
 * A step, as one rank sees it (pkb_ce_step): send `bytes` from send_src into
 * slot send_slot of rank send_to's staging buffer (send_to < 0: nothing to
 * send), and copy slot recv_slot of its own staging buffer to recv_dst once
 * it has arrived (recv_dst NULL: nothing to receive). The copy-out of step i
 * runs on a side stream, under step i+1's transfer; with `chunks` > 1 every
 * step is cut into that many transfers, each with its barrier, so that the
 * last copy-out is short.
 *
 *   pkb_init: return pkb_ce_create(ctx, slots, bytes);  // slots x bytes staging
 *   pkb_run:  return pkb_ce_run(ctx, (struct pkb_ce *)ctx->user, steps, n, bytes,
 *                               chunks, own_dst, own_src);
 *   pkb_fini: return pkb_ce_destroy(ctx);
 *
 * pkb_ce_run also copies own_src to own_dst (a rank's own slab) on the side
 * stream, and joins the side stream into ctx->stream before it returns.
 *
 * Back-to-back calls: a call starts with a barrier, which no rank passes
 * before every rank finished the previous call (its copy-outs included:
 * they were joined into its stream), so one staging buffer is enough. Every
 * address is fixed at enqueue time and the barriers count on the device, so
 * a call can be captured in a CUDA graph and replayed.
 *
 * The copies take any size and alignment; the local ones are fastest when
 * everything is 16-byte aligned.
 */
#ifndef PKB_CE_CUH
#define PKB_CE_CUH

#include <stdlib.h>
#include <cuda_runtime.h>
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_copy.cuh"

#define PKB_CE_MAX_EVENTS 256      /* steps x chunks per call, at most */
#define PKB_CE_THREADS 512
#define PKB_CE_BLOCKS 132          /* copy-out grid: one block per SM of an H200 */
#define PKB_CE_MAX_WORLD 64        /* the barrier kernel's block size */

struct pkb_ce_step {
	const void *send_src;
	int send_to, send_slot;
	void *recv_dst;
	int recv_slot;
};

struct pkb_ce {
	pkb_symm stage;
	size_t slot;                  /* bytes per slot, a multiple of 16 */
	cudaStream_t side;
	cudaEvent_t go, side_done, landed[PKB_CE_MAX_EVENTS];
	int nevents;
};

/* every rank's block 0 meets every other's; signal slot 0 of the solution's
 * pads is this kernel's alone */
__global__ void pkb_ce_barrier(pkb_dev_comm comm)
{
	pkb_barrier_block(comm, 0);   /* blockDim.x = PKB_CE_MAX_WORLD >= world */
}

template <typename U>
__global__ void __launch_bounds__(PKB_CE_THREADS)
pkb_ce_copy(U *dst, const U *src, int64_t n)
{
	int64_t per = (n + gridDim.x - 1) / gridDim.x;
	int64_t u0 = min(n, per * (int64_t)blockIdx.x), u1 = min(n, u0 + per);
	for (int64_t a = u0; a < u1; a += 1 << 20)
		pkb_copy_units<PKB_CE_THREADS>(dst + a, src + a, (int)min((int64_t)1 << 20, u1 - a));
}

/* bytes at dst <- src, on stream st, by the SMs, in the largest unit that
 * divides the size and both addresses */
static inline void pkb_ce_local_copy(void *dst, const void *src, size_t bytes, cudaStream_t st)
{
	if (!bytes)
		return;
	int b = pkb_unit_bytes(bytes | (size_t)(uintptr_t)dst | (size_t)(uintptr_t)src);
	int64_t n = (int64_t)(bytes / b);
	int grid = pkb_blocks_for(n, PKB_CE_THREADS / 2, PKB_CE_BLOCKS);
	switch (b) {
	case 16: pkb_ce_copy<int4><<<grid, PKB_CE_THREADS, 0, st>>>((int4 *)dst, (const int4 *)src, n); break;
	case 8: pkb_ce_copy<int2><<<grid, PKB_CE_THREADS, 0, st>>>((int2 *)dst, (const int2 *)src, n); break;
	case 4: pkb_ce_copy<int><<<grid, PKB_CE_THREADS, 0, st>>>((int *)dst, (const int *)src, n); break;
	case 2: pkb_ce_copy<short><<<grid, PKB_CE_THREADS, 0, st>>>((short *)dst, (const short *)src, n); break;
	default: pkb_ce_copy<char><<<grid, PKB_CE_THREADS, 0, st>>>((char *)dst, (const char *)src, n); break;
	}
}

/* pkb_init: ctx->user = a struct pkb_ce with a staging buffer of `slots`
 * slots of `bytes` each (collective) */
static inline int pkb_ce_create(pkb_ctx *ctx, int slots, size_t bytes)
{
	struct pkb_ce *ce = (struct pkb_ce *)calloc(1, sizeof *ce);
	if (!ce)
		return 1;
	ctx->user = ce;
	if (ctx->world > PKB_CE_MAX_WORLD)
		return 1;
	ce->slot = (bytes + 15) & ~(size_t)15;
	if (cudaStreamCreateWithFlags(&ce->side, cudaStreamNonBlocking) != cudaSuccess ||
	    cudaEventCreateWithFlags(&ce->go, cudaEventDisableTiming) != cudaSuccess ||
	    cudaEventCreateWithFlags(&ce->side_done, cudaEventDisableTiming) != cudaSuccess)
		return 1;
	for (; ce->nevents < PKB_CE_MAX_EVENTS; ce->nevents++)
		if (cudaEventCreateWithFlags(&ce->landed[ce->nevents], cudaEventDisableTiming) !=
		    cudaSuccess)
			return 1;
	return ctx->svc->symm_alloc(ctx, (size_t)slots * ce->slot, &ce->stage);
}

static inline int pkb_ce_run(pkb_ctx *ctx, struct pkb_ce *ce, const struct pkb_ce_step *steps,
			     int nsteps, size_t bytes, int chunks, void *own_dst, const void *own_src)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	/* chunk boundaries on 16 bytes keep every chunk aligned to the unit */
	size_t part = ((bytes + chunks - 1) / chunks + 15) & ~(size_t)15;
	if (nsteps * chunks > PKB_CE_MAX_EVENTS || bytes > ce->slot) {
		ctx->svc->log(ctx, "pkb_ce_run: %d steps x %d chunks or %zu bytes a slot: too many",
			      nsteps, chunks, bytes);
		return 1;
	}
	if (cudaEventRecord(ce->go, st) || cudaStreamWaitEvent(ce->side, ce->go, 0))
		return 1;
	pkb_ce_local_copy(own_dst, own_src, own_dst ? bytes : 0, ce->side);
	pkb_ce_barrier<<<1, PKB_CE_MAX_WORLD, 0, st>>>(ctx->dev);
	int e = 0;
	for (int i = 0; i < nsteps; i++) {
		const struct pkb_ce_step *s = &steps[i];
		for (size_t off = 0; off < bytes; off += part, e++) {
			size_t n = bytes - off < part ? bytes - off : part;
			if (s->send_to >= 0 &&
			    cudaMemcpyAsync((char *)ce->stage.peers[s->send_to] +
						    (size_t)s->send_slot * ce->slot + off,
					    (const char *)s->send_src + off, n,
					    cudaMemcpyDeviceToDevice, st))
				return 1;
			pkb_ce_barrier<<<1, PKB_CE_MAX_WORLD, 0, st>>>(ctx->dev);
			if (!s->recv_dst)
				continue;
			if (cudaEventRecord(ce->landed[e], st) ||
			    cudaStreamWaitEvent(ce->side, ce->landed[e], 0))
				return 1;
			pkb_ce_local_copy((char *)s->recv_dst + off,
					  (const char *)ce->stage.local + (size_t)s->recv_slot * ce->slot +
						  off,
					  n, ce->side);
		}
	}
	if (cudaEventRecord(ce->side_done, ce->side) || cudaStreamWaitEvent(st, ce->side_done, 0))
		return 1;
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

/* pkb_fini: what pkb_ce_create made (the staging buffer is the harness's) */
static inline int pkb_ce_destroy(pkb_ctx *ctx)
{
	struct pkb_ce *ce = (struct pkb_ce *)ctx->user;
	if (!ce)
		return 0;
	if (ce->side)
		cudaStreamSynchronize(ce->side);
	for (int i = 0; i < ce->nevents; i++)
		cudaEventDestroy(ce->landed[i]);
	if (ce->go)
		cudaEventDestroy(ce->go);
	if (ce->side_done)
		cudaEventDestroy(ce->side_done);
	if (ce->side)
		cudaStreamDestroy(ce->side);
	free(ce);
	ctx->user = NULL;
	return 0;
}

#endif /* PKB_CE_CUH */
