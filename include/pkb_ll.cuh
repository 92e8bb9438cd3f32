/*
 * pkb_ll.cuh -- flagged lines (NCCL's "LL" protocol) for small transfers:
 * the data and its flag travel in one store, so a receiver needs no barrier,
 * only one NVLink trip per call.
 *
 * A line is two 8-byte words, each 4 bytes of data in the low half and the
 * call's epoch in the high half, written with one 16-byte store. An aligned
 * 8-byte word is read whole or not at all, so a reader that sees this call's
 * epoch in both words also sees their 8 data bytes. The price: the flags
 * double the bytes on the wire, the right trade while latency dominates (up
 * to a few hundred KiB per rank).
 *
 * The pieces:
 *   - pkb_ll_put / pkb_ll_get: store a line; spin until a line carries an
 *     epoch (bounded, as pkb_wait_ge: a wait that gives up sets the harness
 *     error word and returns false);
 *   - pkb_ll_load / pkb_ll_store: bytes [8i, 8i+8) of a buffer of any size and
 *     alignment (zero padded past its end; one access when 8-byte aligned);
 *   - pkb_ll_add<T> / pkb_ll_pack<T>: the elements of a line added into fp32
 *     accumulators, and rounded back into a line;
 *   - struct pkb_ll, struct pkb_ll_state, pkb_ll_init / pkb_ll_fini (host,
 *     in pkb_init / pkb_fini): the grid, the rounds and the symmetric
 *     buffers; pkb_ll_line: where a line goes;
 *   - pkb_ll_epochs: the first epoch of this call's rounds for this block;
 *   - pkb_ll_ack / pkb_ll_wait_ack: back-pressure for one-way traffic.
 *
 * Layout and rounds. A kernel of G blocks of NT threads moves at most G*NT
 * lines per source in a round: thread j of the grid owns line j of every
 * round's area, [2 halves][sources][G*NT] lines of the receiver's symmetric
 * memory, and round k carries lines k*G*NT + j. A thread with a line in the
 * first round takes part in every round, with padding lines past the end
 * (pkb_ll_load gives zeros there, pkb_ll_store drops them): then each thread
 * meets its peers' thread j in every round, which the reuse rule below
 * needs. Every round takes the next epoch of its block (one counter per
 * block in device memory, zeroed in init); the half is the epoch's parity.
 * Every rank must launch the same grid for the same call (compute it from
 * the shapes), so block b's epochs agree on all ranks. Epoch 0 is never used
 * and epochs only grow: a zeroed area (symm_alloc's) or a stale line is
 * never taken for a new one. A thread waits for the same block of its peers,
 * so keep the grid to what the GPU runs at once (264 blocks of 512 threads
 * of 40 registers fit an H200's 132 SMs): a block that waits for one not
 * yet started on a peer would wait for it to be scheduled.
 *
 * Reuse of a half. A sender may write round e+2 into the half of round e only
 * once the receiver finished reading round e there. When every rank sends to
 * and receives from every peer in the same block (all-reduce, all-gather,
 * reduce-scatter, all-to-all) that holds by itself: a thread that received
 * round e+1 from a peer knows the peer's thread j finished round e (it wrote
 * round e+1 after it read round e). Otherwise (a root that only sends, or
 * only receives) the receiver acknowledges each round (pkb_ll_ack into the
 * sender's ack table) and the sender waits for the acknowledgement of round
 * e-2 (pkb_ll_wait_ack) before it writes round e.
 * The receiver acknowledges round e-1 as it starts round e, not at the end of
 * round e-1: the store's NVLink trip then overlaps the wait for round e's
 * data, where at the end it held each receiving kernel's completion back
 * (by about 2 us per call, measured at W = 2). A sender of round e+1 needs
 * only that acknowledgement of round e-1.
 */
#ifndef PKB_LL_CUH
#define PKB_LL_CUH

#include <stdint.h>
#include <stdlib.h>
#include <cuda_runtime.h>
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_copy.cuh"   /* pkb_blocks_for */

/* one line: 8 data bytes, each 4-byte half beside the epoch */
__device__ __forceinline__ void pkb_ll_put(uint64_t *line, uint64_t data, uint32_t epoch)
{
	uint64_t lo = (uint64_t)epoch << 32 | (uint32_t)data;
	uint64_t hi = (uint64_t)epoch << 32 | (uint32_t)(data >> 32);
	asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" :: "l"(line), "l"(lo), "l"(hi)
		     : "memory");
}

/* the data of a line once both its words carry `epoch`; false when the wait
 * gave up (the harness error word is then set) */
__device__ __forceinline__ bool pkb_ll_get(const pkb_dev_comm &comm, const uint64_t *line,
					   uint32_t epoch, uint64_t *data)
{
	return pkb_spin_until(comm, [&] {
		uint64_t lo, hi;
		asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];"
			     : "=l"(lo), "=l"(hi) : "l"(line) : "memory");
		*data = hi << 32 | (uint32_t)lo;
		return (uint32_t)(lo >> 32) == epoch && (uint32_t)(hi >> 32) == epoch;
	});
}

/* bytes [8i, 8i+8) of a buffer of `bytes` bytes, zero past its end */
__device__ __forceinline__ uint64_t pkb_ll_load(const void *buf, int64_t bytes, int64_t i)
{
	int64_t left = bytes - 8 * i;
	if (left <= 0)
		return 0;
	const unsigned char *b = (const unsigned char *)buf + 8 * i;
	if (left >= 8 && ((uintptr_t)b & 7) == 0)
		return *(const uint64_t *)b;
	uint64_t v = 0;
	for (int k = 0; k < 8 && k < left; k++)
		v |= (uint64_t)b[k] << (8 * k);
	return v;
}

/* store bytes [8i, 8i+8) of a buffer of `bytes` bytes (those before its end) */
__device__ __forceinline__ void pkb_ll_store(void *buf, int64_t bytes, int64_t i, uint64_t v)
{
	int64_t left = bytes - 8 * i;
	if (left <= 0)
		return;
	unsigned char *b = (unsigned char *)buf + 8 * i;
	if (left >= 8 && ((uintptr_t)b & 7) == 0) {
		*(uint64_t *)b = v;
		return;
	}
	for (int k = 0; k < 8 && k < left; k++)
		b[k] = (unsigned char)(v >> (8 * k));
}

/* the 8 / sizeof(T) elements of a line added into fp32 accumulators */
template <typename T>
__device__ __forceinline__ void pkb_ll_add(float *acc, uint64_t v)
{
	T e[8 / sizeof(T)];
	memcpy(e, &v, 8);
	for (int k = 0; k < (int)(8 / sizeof(T)); k++)
		acc[k] += pkb_to_float(e[k]);
}

/* accumulators rounded to T, as a line */
template <typename T>
__device__ __forceinline__ uint64_t pkb_ll_pack(const float *acc)
{
	T e[8 / sizeof(T)];
	for (int k = 0; k < (int)(8 / sizeof(T)); k++)
		e[k] = pkb_from_float<T>(acc[k]);
	uint64_t v;
	memcpy(&v, e, 8);
	return v;
}

/* A kernel's view of its LL buffers (pkb_ll_init fills it, host side):
 * per rank, [2 halves][sources][per_round] lines then the ack table,
 * [grid][world] uint32 */
struct pkb_ll {
	void *const *peers;   /* symmetric buffer of every rank (device table) */
	uint32_t *epochs;     /* per-block epoch counters, this rank */
	int64_t lines;        /* lines per source in a call */
	int64_t per_round;    /* lines per source in a round: grid * threads */
	uint32_t rounds;
	int sources;
	size_t acks;          /* byte offset of the ack table */
};

/* A candidate's host state (in ctx->user): its buffers, and the launch's
 * block count for every call, kernel<<<s->grid, NT>>>(ctx->dev, s->ll, ...) */
struct pkb_ll_state {
	pkb_symm symm;
	struct pkb_ll ll;
	int grid;
};

/* In pkb_init: the grid (`threads` per block, up to max_blocks blocks) for
 * `bytes` bytes per source, and the buffers for `sources` sources per
 * receiver. Returns 0 on success; pkb_ll_fini frees what it made. */
static inline int pkb_ll_init(pkb_ctx *ctx, size_t bytes, int sources, int threads,
			      int max_blocks)
{
	struct pkb_ll_state *s = (struct pkb_ll_state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	struct pkb_ll *ll = &s->ll;
	ll->lines = (int64_t)((bytes + 7) / 8);
	s->grid = pkb_blocks_for(ll->lines, threads, max_blocks);
	ll->per_round = (int64_t)s->grid * threads;
	ll->rounds = (uint32_t)((ll->lines + ll->per_round - 1) / ll->per_round);
	if (ll->rounds < 1)
		ll->rounds = 1;
	ll->sources = sources;
	ll->acks = 2 * (size_t)sources * (size_t)ll->per_round * 16;
	if (cudaMalloc(&ll->epochs, s->grid * sizeof(uint32_t)) != cudaSuccess ||
	    cudaMemset(ll->epochs, 0, s->grid * sizeof(uint32_t)) != cudaSuccess)
		return 1;
	if (ctx->svc->symm_alloc(ctx, ll->acks + (size_t)s->grid * ctx->world * 4, &s->symm))
		return 1;
	ll->peers = s->symm.peers_dev;
	return 0;
}

static inline int pkb_ll_fini(pkb_ctx *ctx)
{
	struct pkb_ll_state *s = (struct pkb_ll_state *)ctx->user;
	if (s)
		cudaFree(s->ll.epochs);
	free(s);
	return 0;
}

/* line j of source `src`'s area in rank `rank`'s buffer, for round `epoch` */
__device__ __forceinline__ uint64_t *pkb_ll_line(const pkb_ll &ll, int rank, uint32_t epoch,
						 int src, int64_t j)
{
	int64_t at = ((int64_t)(epoch & 1) * ll.sources + src) * ll.per_round + j;
	return (uint64_t *)ll.peers[rank] + 2 * at;
}

/* The first of this call's ll.rounds epochs for this thread block; the
 * block's counter moves past them. Every thread of the block must call it,
 * once per call. */
__device__ __forceinline__ uint32_t pkb_ll_epochs(const pkb_ll &ll)
{
	__shared__ uint32_t first;
	if (threadIdx.x == 0) {
		first = ll.epochs[blockIdx.x] + 1;
		ll.epochs[blockIdx.x] = first - 1 + ll.rounds;
	}
	__syncthreads();
	return first;
}

/* Receiver side, at the start of round `epoch`: this block finished reading
 * round epoch-1 (in this call or the last) from every rank in
 * senders[0..ns) (a table the block's threads agree on); tell each of them,
 * in entry [blockIdx.x][me] of its ack table. Every thread of the block
 * must call it. */
__device__ __forceinline__ void pkb_ll_ack(const pkb_dev_comm &comm, const pkb_ll &ll,
					   const int *senders, int ns, uint32_t epoch)
{
	__syncthreads();   /* the block's reads of the last round are done */
	if (epoch > 1 && (int)threadIdx.x < ns) {
		uint32_t *acks = (uint32_t *)((char *)ll.peers[senders[threadIdx.x]] + ll.acks);
		pkb_st_release_sys(acks + (size_t)blockIdx.x * comm.world + comm.rank, epoch - 1);
	}
}

/* Sender side: before writing round `epoch`, wait until every receiver in
 * recvs[0..nr) acknowledged round epoch-2 in our ack table (the half we are
 * about to overwrite is then free). Every thread of the block must call it;
 * false if the wait gave up. */
__device__ __forceinline__ bool pkb_ll_wait_ack(const pkb_dev_comm &comm, const pkb_ll &ll,
						const int *recvs, int nr, uint32_t epoch)
{
	__shared__ int ok;
	if (threadIdx.x == 0)
		ok = 1;
	__syncthreads();
	const uint32_t *mine = (const uint32_t *)((const char *)ll.peers[comm.rank] + ll.acks);
	if (epoch > 2 && (int)threadIdx.x < nr &&
	    !pkb_wait_ge(comm, mine + (size_t)blockIdx.x * comm.world + recvs[threadIdx.x],
			 epoch - 2))
		ok = 0;
	__syncthreads();
	return ok != 0;
}

#endif /* PKB_LL_CUH */
