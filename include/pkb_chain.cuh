/*
 * pkb_chain.cuh -- a pipeline along a chain of ranks over symmetric memory,
 * for the rooted collectives at large sizes (003 broadcast, 004 reduce):
 * every link carries the tensor once, and all links work at once.
 *
 * Each thread block streams its share of the tensor chunk by chunk (chunks
 * b, b + G, b + 2G, ... of G blocks), from a rank to the next in the chain,
 * through a ring of `slots` slots of `chunk` bytes in the next rank's
 * staging buffer. Per block and slot, two flags: "full", set by the producer
 * in the consumer's memory, and "free", set by the consumer in the
 * producer's memory. Flags count uses of their slot and only grow, so no
 * reset, no barrier between calls, and a call can be replayed from a CUDA
 * graph: a block's chunk number runs on across calls (c.seq, one counter
 * per block, in device memory), the same on every rank because every rank's
 * block b handles as many chunks per call.
 *
 * All blocks of the grid wait on each other across ranks: the grid must fit
 * on the GPU at once (pkb_chain_resident gives how many do).
 *
 *   host:   blocks = pkb_chain_resident(ctx, kernel, threads, want),
 *           pkb_chain_init(ctx, &ch, blocks, slots, chunk) in pkb_init;
 *           kernel<<<pkb_chain_grid(&ch, bytes), threads>>> in pkb_run
 *   kernel: pkb_chain_dev c = pkb_chain_dev_of(&ch), passed by value;
 *           j = chunk number; per chunk, block-wide:
 *           pkb_chain_wait_full(comm, c, j)   before reading my slot
 *           pkb_chain_wait_free(comm, c, j)   before writing next's slot
 *           pkb_chain_slot(c, rank, j)        the slot of chunk j on a rank
 *           pkb_chain_post_free(comm, c, prev, j), pkb_chain_post_full(comm, c, next, j)
 */
#ifndef PKB_CHAIN_CUH
#define PKB_CHAIN_CUH

#include <stdint.h>
#include <stdlib.h>
#include <cuda_runtime.h>
#include "pkb.h"
#include "pkb_device.cuh"

struct pkb_chain {
	pkb_symm stage;         /* [blocks][slots][chunk] */
	pkb_symm flags;         /* full[blocks][slots], then free[blocks][slots] */
	uint32_t *seq;          /* per block: chunks handled so far (device) */
	int blocks, slots;
	size_t chunk;
};

struct pkb_chain_dev {
	char *const *stage;
	uint32_t *const *flags;
	uint32_t *seq;
	size_t chunk;
	int slots;
};

/* pkb_init (collective): staging and flags for `blocks` blocks, the least
 * any rank offers (every rank must run the same grid) */
static inline int pkb_chain_init(pkb_ctx *ctx, struct pkb_chain *c, int blocks, int slots,
				 size_t chunk)
{
	int *all = (int *)calloc(ctx->world, sizeof *all);
	int rc = !all || ctx->svc->host_allgather(ctx, &blocks, all, sizeof blocks);
	for (int r = 0; !rc && r < ctx->world; r++)
		blocks = all[r] < blocks ? all[r] : blocks;
	free(all);
	if (rc || blocks < 1)
		return 1;
	c->blocks = blocks;
	c->slots = slots;
	c->chunk = (chunk + 15) & ~(size_t)15;
	size_t nflags = 2 * (size_t)blocks * slots;
	if (cudaMalloc(&c->seq, blocks * sizeof(uint32_t)) != cudaSuccess ||
	    cudaMemset(c->seq, 0, blocks * sizeof(uint32_t)) != cudaSuccess)
		return 1;
	if (ctx->svc->symm_alloc(ctx, (size_t)blocks * slots * c->chunk, &c->stage) ||
	    ctx->svc->symm_alloc(ctx, nflags * sizeof(uint32_t), &c->flags))
		return 1;
	/* every flag is zero on every rank before any peer's first kernel can
	 * set one (the ABI does not promise zeroed memory) */
	if (cudaMemset(c->flags.local, 0, nflags * sizeof(uint32_t)) != cudaSuccess ||
	    cudaDeviceSynchronize() != cudaSuccess)
		return 1;
	return ctx->svc->host_barrier(ctx);
}

/* pkb_init: at most `want` blocks of `kernel` (`threads` each), as many as
 * this GPU runs at once, the chain's requirement; 0 if that cannot be known
 * (pkb_chain_init then fails) */
template <typename K>
static inline int pkb_chain_resident(const pkb_ctx *ctx, K kernel, int threads, int want)
{
	int sms = 0, per = 0;
	if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ctx->device) ||
	    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, kernel, threads, 0))
		return 0;
	return sms * per < want ? sms * per : want;
}

/* pkb_run: the grid for a tensor of `bytes`, a block per chunk up to c->blocks
 * (the same on every rank, as the chain needs) */
static inline int pkb_chain_grid(const struct pkb_chain *c, size_t bytes)
{
	size_t chunks = (bytes + c->chunk - 1) / c->chunk;
	return chunks < (size_t)c->blocks ? (int)chunks : c->blocks;
}

static inline void pkb_chain_free(struct pkb_chain *c)
{
	cudaFree(c->seq);
	c->seq = NULL;
}

static inline struct pkb_chain_dev pkb_chain_dev_of(const struct pkb_chain *c)
{
	struct pkb_chain_dev d = { (char *const *)c->stage.peers_dev,
				   (uint32_t *const *)c->flags.peers_dev, c->seq, c->chunk,
				   c->slots };
	return d;
}

/* this block's slot of chunk j on `rank` */
__device__ __forceinline__ char *pkb_chain_slot(const pkb_chain_dev &c, int rank, uint32_t j)
{
	return c.stage[rank] + ((size_t)blockIdx.x * c.slots + j % c.slots) * c.chunk;
}

__device__ __forceinline__ uint32_t *pkb_chain_flag(const pkb_chain_dev &c, int rank, int kind,
						    uint32_t j)
{
	return c.flags[rank] + ((size_t)kind * gridDim.x + blockIdx.x) * c.slots + j % c.slots;
}

/* block-wide: wait until flag `kind` of chunk j's slot in this rank's memory
 * reaches `want`; false if the wait gave up (the harness reports it) */
__device__ __forceinline__ bool pkb_chain_wait(const pkb_dev_comm &comm, const pkb_chain_dev &c,
					       int kind, uint32_t j, uint32_t want)
{
	__shared__ int ok;
	__syncthreads();   /* every thread has read the last wait's `ok` */
	if (threadIdx.x == 0)
		ok = pkb_wait_ge(comm, pkb_chain_flag(c, comm.rank, kind, j), want);
	__syncthreads();
	return ok != 0;
}

/* block-wide: once the block's reads and writes of chunk j are done, set
 * flag `kind` of its slot on `rank` to the slot's use count */
__device__ __forceinline__ void pkb_chain_post(const pkb_chain_dev &c, int rank, int kind,
					       uint32_t j)
{
	__syncthreads();
	if (threadIdx.x == 0) {
		__threadfence_system();
		pkb_st_release_sys(pkb_chain_flag(c, rank, kind, j), j / c.slots + 1);
	}
}

/* my slot holds chunk j (its producer posted use j / slots + 1) */
__device__ __forceinline__ bool pkb_chain_wait_full(const pkb_dev_comm &comm,
						    const pkb_chain_dev &c, uint32_t j)
{
	return pkb_chain_wait(comm, c, 0, j, j / c.slots + 1);
}

/* the next rank has emptied the slot chunk j goes to (its previous use) */
__device__ __forceinline__ bool pkb_chain_wait_free(const pkb_dev_comm &comm,
						    const pkb_chain_dev &c, uint32_t j)
{
	return pkb_chain_wait(comm, c, 1, j, j / c.slots);
}

__device__ __forceinline__ void pkb_chain_post_full(const pkb_chain_dev &c, int next, uint32_t j)
{
	pkb_chain_post(c, next, 0, j);
}

__device__ __forceinline__ void pkb_chain_post_free(const pkb_chain_dev &c, int prev, uint32_t j)
{
	pkb_chain_post(c, prev, 1, j);
}

#endif /* PKB_CHAIN_CUH */
