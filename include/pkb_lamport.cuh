/*
 * pkb_lamport.cuh -- raw data with an "empty" value, for small transfers
 * (TensorRT-LLM's "Lamport" all-reduce): a receiver buffer starts full of
 * "empty" elements, senders store the data itself (with every "empty"
 * element changed), and a receiver spins until no element of a 16-byte unit
 * is "empty". Like flagged lines (pkb_ll.cuh) there is no barrier, one
 * NVLink trip per exchange, but the wire carries the data alone: half the
 * bytes of a flagged line. Include it after pkb_device.cuh.
 *
 * The "empty" value is the NaN with every bit set (0xffff in bf16 and fp16,
 * 0xffffffff in fp32), so a buffer is emptied by a memset of 0xff. A sender
 * clears its sign bit (pkb_lp_scrub): it arrives as another NaN, equal in
 * class, and every other value, negative zeros and infinities included,
 * arrives bit for bit. (TensorRT-LLM uses negative zero, which arrives as a
 * positive zero: harmless in a sum, a changed bit in a copy.)
 *
 * Why a unit can be read element by element: an aligned element (2 or 4
 * bytes) is written whole, so an element that is not "empty" holds its final
 * value; a unit with no "empty" element left has landed, whatever order its
 * bytes travelled in.
 *
 * Reuse. A reader stores "empty" back into every unit as it takes it, in the
 * same kernel. Buffers come in two halves, by call parity (pkb_call_half):
 * a sender writes the half of call e again in call e+2, which starts after
 * its call e+1 ended, which read our data of call e+1, which we sent after
 * our call e ended: so the clear of call e is done first. That needs only
 * the kernel boundaries between calls on each rank's stream, and that every
 * rank receives from every rank that sends to it, in every call.
 *
 *   - pkb_lp_load<T>(buf, bytes, i): bytes [16i, 16i+16) of a buffer of any
 *     size and alignment, zero past its end, "empty" elements changed;
 *   - pkb_lp_scrub<T>(v): "empty" elements changed (before a put of
 *     computed data);
 *   - pkb_lp_store(buf, bytes, i, v): store what lies before the end;
 *   - pkb_lp_put(dst, v): one 16-byte store, to a peer;
 *   - pkb_lp_take<T>(comm, slot, &v): spin until the unit has landed
 *     (bounded, as pkb_wait_ge: false and the harness error word set when
 *     it gives up), then empty it;
 *   - pkb_lp_take_all<T, N>(comm, slot, stride, wait, v): the same for the
 *     units of up to N ranks at once, every load in flight together (one
 *     after another, each waits out the last one's memory latency);
 *     pkb_lp_peers(comm): the `wait` of every rank but this one;
 *   - pkb_lp_sum_all<T, N>(comm, slot, stride, wait, own, &sum): the same,
 *     then their sum with this rank's unit in rank order (fp32, one rounding);
 *   - pkb_lp_add<T>(acc, v) / pkb_lp_pack<T>(acc): a unit's elements into
 *     fp32 accumulators, and back;
 *   - pkb_lp_ack / pkb_lp_take_acks<N>: acknowledgements, for a root that
 *     only sends or only receives;
 *   - struct pkb_lp, pkb_lp_init / pkb_lp_fini (host): the grid, the
 *     symmetric buffer (two halves of areas of 16-byte units, and an ack
 *     area if asked, all "empty"), and the per-block call counters;
 *     pkb_lp_half: this call's half; pkb_lp_unit: where a unit goes.
 */
#ifndef PKB_LAMPORT_CUH
#define PKB_LAMPORT_CUH

#include <stdint.h>
#include <stdlib.h>
#include <cuda_runtime.h>
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_ll.cuh"   /* pkb_ll_load / pkb_ll_store / pkb_ll_add / pkb_ll_pack: 8-byte halves */

/* "empty" in every element of a 32-bit word: the NaN with every bit set */
#define PKB_LP_EMPTY 0xffffffffu

/* a word's "empty" elements changed into the NaN without the sign bit
 * (elements of `size` bytes) */
__host__ __device__ __forceinline__ uint32_t pkb_lp_scrub_word(uint32_t x, int size)
{
	if (size == 4)
		return x == PKB_LP_EMPTY ? 0x7fffffffu : x;
	if ((x & 0xffffu) == 0xffffu)
		x &= 0xffff7fffu;
	if ((x >> 16) == 0xffffu)
		x &= 0x7fffffffu;
	return x;
}

template <typename T>
__host__ __device__ __forceinline__ uint4 pkb_lp_scrub(uint4 v)
{
	const int e = (int)sizeof(T);
	return make_uint4(pkb_lp_scrub_word(v.x, e), pkb_lp_scrub_word(v.y, e),
			  pkb_lp_scrub_word(v.z, e), pkb_lp_scrub_word(v.w, e));
}

/* true when no element of the unit is "empty" */
template <typename T>
__host__ __device__ __forceinline__ bool pkb_lp_landed(uint4 v)
{
	if (sizeof(T) == 4)
		return v.x != PKB_LP_EMPTY && v.y != PKB_LP_EMPTY && v.z != PKB_LP_EMPTY &&
		       v.w != PKB_LP_EMPTY;
	uint32_t w[4] = { v.x, v.y, v.z, v.w };
	for (int k = 0; k < 4; k++)
		if ((w[k] & 0xffffu) == 0xffffu || (w[k] >> 16) == 0xffffu)
			return false;
	return true;
}

template <typename T>
__device__ __forceinline__ uint4 pkb_lp_load(const void *buf, int64_t bytes, int64_t i)
{
	const char *b = (const char *)buf + 16 * i;
	uint4 v;
	if (bytes - 16 * i >= 16 && ((uintptr_t)b & 15) == 0) {
		v = *(const uint4 *)b;
	} else {
		uint64_t lo = pkb_ll_load(buf, bytes, 2 * i), hi = pkb_ll_load(buf, bytes, 2 * i + 1);
		v = make_uint4((uint32_t)lo, (uint32_t)(lo >> 32), (uint32_t)hi, (uint32_t)(hi >> 32));
	}
	return pkb_lp_scrub<T>(v);
}

__device__ __forceinline__ void pkb_lp_store(void *buf, int64_t bytes, int64_t i, uint4 v)
{
	char *b = (char *)buf + 16 * i;
	if (bytes - 16 * i >= 16 && ((uintptr_t)b & 15) == 0) {
		*(uint4 *)b = v;
		return;
	}
	pkb_ll_store(buf, bytes, 2 * i, (uint64_t)v.y << 32 | v.x);
	pkb_ll_store(buf, bytes, 2 * i + 1, (uint64_t)v.w << 32 | v.z);
}

__device__ __forceinline__ void pkb_lp_put(uint4 *dst, uint4 v)
{
	asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};"
		     :: "l"(dst), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}

__device__ __forceinline__ uint4 pkb_lp_peek(const uint4 *src)
{
	uint4 v;
	asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
		     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(src) : "memory");
	return v;
}

/* every rank but this one, as a pkb_lp_take_all `wait` */
__device__ __forceinline__ uint32_t pkb_lp_peers(const pkb_dev_comm &comm)
{
	return ((1u << comm.world) - 1) & ~(1u << comm.rank);
}

/* Spin until the unit slot + r * stride has landed for every rank r whose
 * bit is set in `wait` (r < N), then empty those units; v[r] gets
 * rank r's unit (the other entries are left as they are). Each pass issues
 * the loads of every unit still missing before it tests any. False when the
 * wait gave up (bounded as pkb_lp_take). v is an array of N the caller
 * indexes by constants (unrolled loops), so that it stays in registers: N
 * is the world size rounded up (a kernel templated on it), not a fixed
 * maximum, since every entry takes four registers. */
template <typename T, int N>
__device__ __forceinline__ bool pkb_lp_take_all(const pkb_dev_comm &comm, uint4 *slot,
						int64_t stride, uint32_t wait, uint4 *v)
{
	const uint32_t all = wait;
	bool ok = pkb_spin_until(comm, [&] {
#pragma unroll
		for (int r = 0; r < N; r++)
			if (wait >> r & 1)
				v[r] = pkb_lp_peek(slot + r * stride);
#pragma unroll
		for (int r = 0; r < N; r++)
			if ((wait >> r & 1) && pkb_lp_landed<T>(v[r]))
				wait &= ~(1u << r);
		return wait == 0;
	});
	if (!ok)
		return false;
#pragma unroll
	for (int r = 0; r < N; r++)
		if (all >> r & 1)
			pkb_lp_put(slot + r * stride, make_uint4(PKB_LP_EMPTY, PKB_LP_EMPTY,
								 PKB_LP_EMPTY, PKB_LP_EMPTY));
	return true;
}

/* pkb_lp_take_all of one unit */
template <typename T>
__device__ __forceinline__ bool pkb_lp_take(const pkb_dev_comm &comm, uint4 *slot, uint4 *out)
{
	return pkb_lp_take_all<T, 1>(comm, slot, 0, 1u, out);
}

template <typename T>
__device__ __forceinline__ void pkb_lp_add(float *acc, uint4 v)
{
	pkb_ll_add<T>(acc, (uint64_t)v.y << 32 | v.x);
	pkb_ll_add<T>(acc + 8 / sizeof(T), (uint64_t)v.w << 32 | v.z);
}

template <typename T>
__device__ __forceinline__ uint4 pkb_lp_pack(const float *acc)
{
	uint64_t lo = pkb_ll_pack<T>(acc), hi = pkb_ll_pack<T>(acc + 8 / sizeof(T));
	return make_uint4((uint32_t)lo, (uint32_t)(lo >> 32), (uint32_t)hi, (uint32_t)(hi >> 32));
}

/* pkb_lp_take_all of the units of the ranks in `wait`, then their sum with
 * `own` (this rank's unit) in rank order, the same order on every rank, in
 * fp32 rounded once, into *sum. False when the wait gave up. */
template <typename T, int N>
__device__ __forceinline__ bool pkb_lp_sum_all(const pkb_dev_comm &comm, uint4 *slot,
					       int64_t stride, uint32_t wait, uint4 own,
					       uint4 *sum)
{
	uint4 v[N];
#pragma unroll
	for (int r = 0; r < N; r++)
		if (r == comm.rank)
			v[r] = own;
	if (!pkb_lp_take_all<T, N>(comm, slot, stride, wait, v))
		return false;
	const uint32_t terms = wait | 1u << comm.rank;
	float acc[16 / sizeof(T)] = {};
#pragma unroll
	for (int r = 0; r < N; r++)
		if (terms >> r & 1)
			pkb_lp_add<T>(acc, v[r]);
	*sum = pkb_lp_pack<T>(acc);
	return true;
}

/* A kernel's view of its buffers: per rank, two halves of `units` units */
struct pkb_lp {
	void *const *peers;   /* symmetric buffer of every rank (device table) */
	uint32_t *calls;      /* per-block call counters, this rank (pkb_call_half) */
	int64_t units;        /* 16-byte units per half */
};

struct pkb_lp_state {
	pkb_symm symm;
	struct pkb_lp lp;
	int grid;
};

/* this call's half (pkb_call_half of lp.units units): every thread of the
 * block must call it, once per call */
__device__ __forceinline__ size_t pkb_lp_half(const pkb_lp &lp)
{
	return pkb_call_half(lp.calls, (size_t)lp.units * 16);
}

/* unit i of area `at` (in units) of rank `rank`'s half `half` (pkb_lp_half) */
__device__ __forceinline__ uint4 *pkb_lp_unit(const pkb_lp &lp, int rank, size_t half,
					      int64_t at, int64_t i)
{
	return (uint4 *)((char *)lp.peers[rank] + half) + at + i;
}

/* Acknowledgements, for rooted exchanges. The reuse rule above needs every
 * rank to receive from every rank that sends to it; a root that only sends
 * (or only receives) hears nothing back. So each rank that only receives
 * puts one unit into its senders' ack area as its block starts a call
 * (pkb_lp_ack: the block's last call, and its clears, ended before), and a
 * sender's block takes it before the call ends (pkb_lp_take_acks): its
 * next call, which writes the other half, then starts after the receivers
 * began this one, and the call after it, which writes this half again,
 * after they read it. The ack area is `grid` x `world` units of each half at
 * unit `at`: slot [block][sender of the ack]. One thread of the block each. */
__device__ __forceinline__ void pkb_lp_ack(const pkb_dev_comm &comm, const pkb_lp &lp,
					   size_t half, int64_t at, int to)
{
	pkb_lp_put(pkb_lp_unit(lp, to, half, at + (int64_t)blockIdx.x * comm.world, comm.rank),
		   make_uint4(0, 0, 0, 0));
}

/* take the acks of this block from the ranks in `from` (pkb_lp_take_all) */
template <int N>
__device__ __forceinline__ bool pkb_lp_take_acks(const pkb_dev_comm &comm, const pkb_lp &lp,
						 size_t half, int64_t at, uint32_t from)
{
	uint4 v[N];
	return pkb_lp_take_all<uint32_t, N>(
		comm, pkb_lp_unit(lp, comm.rank, half, at + (int64_t)blockIdx.x * comm.world, 0),
		1, from, v);
}

/* In pkb_init: ctx->user = a struct pkb_lp_state for a launch of as many
 * blocks of `threads` as `units` units take (at most max_blocks: keep them
 * all resident), and halves of `areas` areas of `units` units each, then,
 * when `acks`, an ack area of grid x world units (pkb_lp_ack: its unit
 * offset is areas * units); every unit "empty".
 * Returns 0 on success; pkb_lp_fini frees what it made. */
static inline int pkb_lp_init(pkb_ctx *ctx, int64_t units, int areas, bool acks, int threads,
			      int max_blocks)
{
	struct pkb_lp_state *s = (struct pkb_lp_state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	const int grid = pkb_blocks_for(units, threads, max_blocks);
	s->grid = grid;
	units = units * areas + (acks ? (int64_t)grid * ctx->world : 0);
	s->lp.units = units;
	if (cudaMalloc(&s->lp.calls, grid * sizeof(uint32_t)) != cudaSuccess ||
	    cudaMemset(s->lp.calls, 0, grid * sizeof(uint32_t)) != cudaSuccess ||
	    ctx->svc->symm_alloc(ctx, 2 * (size_t)units * 16, &s->symm))
		return 1;
	s->lp.peers = s->symm.peers_dev;
	/* every rank's buffer is "empty" before any rank sends */
	if (cudaMemset(s->symm.local, 0xff, 2 * (size_t)units * 16) != cudaSuccess ||
	    cudaDeviceSynchronize() != cudaSuccess)
		return 1;
	return ctx->svc->host_barrier(ctx);
}

static inline int pkb_lp_fini(pkb_ctx *ctx)
{
	struct pkb_lp_state *s = (struct pkb_lp_state *)ctx->user;
	if (s)
		cudaFree(s->lp.calls);
	free(s);
	ctx->user = NULL;
	return 0;
}

#endif /* PKB_LAMPORT_CUH */
