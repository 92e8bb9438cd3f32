/*
 * pkb_lamport.cuh -- raw data with an "empty" value, for small transfers
 * (TensorRT-LLM's "Lamport" all-reduce): a receiver buffer starts full of
 * negative zeros, senders store the data itself (with every negative zero
 * made a positive one), and a receiver spins until no element of a 16-byte
 * unit is negative zero. Like flagged lines (pkb_ll.cuh) there is no barrier,
 * one NVLink trip per exchange, but the wire carries the data alone: half
 * the bytes of a flagged line. Include it after pkb_device.cuh.
 *
 * Why a unit can be read element by element: an aligned element (2 or 4
 * bytes) is written whole, so an element that is not negative zero holds its
 * final value; a unit with no negative zero left has landed, whatever order
 * its bytes travelled in. The price of the "empty" value: a negative zero
 * arrives as a positive zero (equal in value; only the sign of a zero sum
 * can differ).
 *
 * Reuse. A reader stores "empty" back into every unit as it takes it, in the
 * same kernel. Buffers come in two halves, by call parity (pkb_call_half):
 * a sender writes the half of call e again in call e+2, which starts after
 * its call e+1 ended, which read our data of call e+1, which we sent after
 * our call e ended: so the clear of call e is done first. That needs only
 * the kernel boundaries between calls on each rank's stream.
 *
 *   - pkb_lp_load<T>(buf, bytes, i): bytes [16i, 16i+16) of a buffer of any
 *     size and alignment, zero past its end, negative zeros made positive;
 *   - pkb_lp_scrub<T>(v): negative zeros made positive (before a put of
 *     computed data: a sum can round to negative zero);
 *   - pkb_lp_store(buf, bytes, i, v): store what lies before the end;
 *   - pkb_lp_put(dst, v): one 16-byte store, to a peer;
 *   - pkb_lp_take<T>(comm, slot, &v): spin until the unit has landed
 *     (bounded, as pkb_wait_ge: false and the harness error word set when
 *     it gives up), then clear it;
 *   - pkb_lp_add<T>(acc, v) / pkb_lp_pack<T>(acc): a unit's elements into
 *     fp32 accumulators, and back;
 *   - struct pkb_lp, pkb_lp_init / pkb_lp_fini (host): the symmetric buffer
 *     (two halves of `units` 16-byte units, all "empty"), and the per-block
 *     call counters; pkb_lp_unit: where a unit goes.
 */
#ifndef PKB_LAMPORT_CUH
#define PKB_LAMPORT_CUH

#include <stdint.h>
#include <stdlib.h>
#include <cuda_runtime.h>
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_ll.cuh"   /* pkb_ll_load / pkb_ll_store / pkb_ll_add / pkb_ll_pack: 8-byte halves */

/* "empty" as a 32-bit word: negative zero in every element */
template <typename T>
__host__ __device__ __forceinline__ uint32_t pkb_lp_empty(void)
{
	return sizeof(T) == 2 ? 0x80008000u : 0x80000000u;
}

__host__ __device__ __forceinline__ uint32_t pkb_lp_scrub_word(uint32_t x, uint32_t empty)
{
	if (empty == 0x80000000u)
		return x == empty ? 0 : x;
	if ((x & 0xffffu) == 0x8000u)
		x &= 0xffff0000u;
	if ((x >> 16) == 0x8000u)
		x &= 0xffffu;
	return x;
}

template <typename T>
__host__ __device__ __forceinline__ uint4 pkb_lp_scrub(uint4 v)
{
	const uint32_t e = pkb_lp_empty<T>();
	return make_uint4(pkb_lp_scrub_word(v.x, e), pkb_lp_scrub_word(v.y, e),
			  pkb_lp_scrub_word(v.z, e), pkb_lp_scrub_word(v.w, e));
}

/* true when no element of the unit is "empty" */
template <typename T>
__host__ __device__ __forceinline__ bool pkb_lp_landed(uint4 v)
{
	const uint32_t e = pkb_lp_empty<T>();
	if (sizeof(T) == 4)
		return v.x != e && v.y != e && v.z != e && v.w != e;
	uint32_t w[4] = { v.x, v.y, v.z, v.w };
	for (int k = 0; k < 4; k++)
		if ((w[k] & 0xffffu) == 0x8000u || (w[k] >> 16) == 0x8000u)
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

template <typename T>
__device__ __forceinline__ bool pkb_lp_take(const pkb_dev_comm &comm, uint4 *slot, uint4 *out)
{
	uint64_t t0 = 0;
	for (uint32_t spins = 0;; spins++) {
		uint4 v = pkb_lp_peek(slot);
		if (pkb_lp_landed<T>(v)) {
			const uint32_t e = pkb_lp_empty<T>();
			pkb_lp_put(slot, make_uint4(e, e, e, e));
			*out = v;
			return true;
		}
		if (spins == 0)
			t0 = pkb_globaltimer();
		else if (pkb_spin_expired(comm, spins, t0))
			return false;
	}
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

/* unit i of area `at` (in units) of rank `rank`'s half `half` (pkb_call_half
 * of lp.units * 16) */
__device__ __forceinline__ uint4 *pkb_lp_unit(const pkb_lp &lp, int rank, size_t half,
					      int64_t at, int64_t i)
{
	return (uint4 *)((char *)lp.peers[rank] + half) + at + i;
}

__global__ void pkb_lp_fill(uint32_t *p, int64_t n, uint32_t v)
{
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x)
		p[i] = v;
}

/* In pkb_init: ctx->user = a struct pkb_lp_state with `units` units a half,
 * every one "empty" for the input's dtype, and a launch of `grid` blocks.
 * Returns 0 on success; pkb_lp_fini frees what it made. */
static inline int pkb_lp_init(pkb_ctx *ctx, int64_t units, int grid)
{
	struct pkb_lp_state *s = (struct pkb_lp_state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	s->grid = grid;
	s->lp.units = units;
	uint32_t empty = pkb_dtype_size(ctx->in[0].dtype) == 2 ? pkb_lp_empty<__half>()
							       : pkb_lp_empty<float>();
	if (cudaMalloc(&s->lp.calls, grid * sizeof(uint32_t)) != cudaSuccess ||
	    cudaMemset(s->lp.calls, 0, grid * sizeof(uint32_t)) != cudaSuccess ||
	    ctx->svc->symm_alloc(ctx, 2 * (size_t)units * 16, &s->symm))
		return 1;
	s->lp.peers = s->symm.peers_dev;
	pkb_lp_fill<<<264, 512>>>((uint32_t *)s->symm.local, 8 * units, empty);
	/* every rank's buffer is "empty" before any rank sends */
	if (cudaDeviceSynchronize() != cudaSuccess)
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
