/*
 * pkb_device.cuh -- device-side building blocks for multi-GPU candidates.
 *
 * Small on purpose: it is pasted into every prompt. What it gives:
 *   - system-scope acquire/release loads and stores (the memory ordering a
 *     flag between GPUs needs: data written before a release store is
 *     visible to a peer that sees the flag with an acquire load);
 *   - pkb_wait_ge: a bounded spin on a flag. When it gives up it sets the
 *     harness error word and returns false, so a deadlock becomes a reported
 *     timeout instead of a hung GPU (pkb_spin_until: the same spin on any
 *     test; pkb_spin_expired: its give-up test);
 *   - pkb_barrier_block: all ranks' copies of one thread block meet, using
 *     the harness signal pads in ctx->dev (slot = a block index). Writes made
 *     by the block before the barrier are visible to every peer's block
 *     after it;
 *   - pkb_call_half: which half of a two-half staging buffer this call uses
 *     (alternating per call, the same on every rank), so that a call never
 *     overwrites what a slower peer may still be reading from the last one;
 *   - pkb_to_float / pkb_from_float<T>: bf16, fp16 and fp32 to and from fp32,
 *     for kernels templated on the element type.
 *
 * Usage (one kernel, `comm` = ctx->dev passed by value):
 *
 *   __global__ void k(pkb_dev_comm comm, ...) {
 *       ... write into peers' symmetric buffers ...
 *       pkb_barrier_block(comm, blockIdx.x);   // everyone's writes landed
 *       ... read what the peers wrote ...
 *   }
 */
#ifndef PKB_DEVICE_CUH
#define PKB_DEVICE_CUH

#include <stdint.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "pkb.h"

__device__ __forceinline__ float pkb_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float pkb_to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float pkb_to_float(float v) { return v; }
template <typename T> __device__ __forceinline__ T pkb_from_float(float v);
template <> __device__ __forceinline__ __nv_bfloat16 pkb_from_float(float v) { return __float2bfloat16(v); }
template <> __device__ __forceinline__ __half pkb_from_float(float v) { return __float2half(v); }
template <> __device__ __forceinline__ float pkb_from_float(float v) { return v; }

__device__ __forceinline__ uint32_t pkb_ld_acquire_sys(const uint32_t *p)
{
	uint32_t v;
	asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
}

__device__ __forceinline__ void pkb_st_release_sys(uint32_t *p, uint32_t v)
{
	asm volatile("st.release.sys.global.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ uint32_t pkb_ld_relaxed_sys(const uint32_t *p)
{
	uint32_t v;
	asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
}

__device__ __forceinline__ uint64_t pkb_globaltimer(void)
{
	uint64_t t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

/* The give-up test of a bounded spin that started at t0 (pkb_globaltimer):
 * on every 1024th spin, true -- with PKB_DEV_ERR_TIMEOUT set in the harness
 * error word -- once comm.timeout_ns has passed or another wait gave up. */
__device__ __forceinline__ bool pkb_spin_expired(const pkb_dev_comm &comm, uint32_t spins,
						 uint64_t t0)
{
	if ((spins & 1023u) != 0)
		return false;
	if (*(volatile uint32_t *)comm.err || pkb_globaltimer() - t0 > comm.timeout_ns) {
		atomicOr(comm.err, PKB_DEV_ERR_TIMEOUT);
		return true;
	}
	return false;
}

/* Spin until poll() returns true (a callable: a lambda that loads what it
 * waits for). Returns false, and sets PKB_DEV_ERR_TIMEOUT in the harness
 * error word, if comm.timeout_ns passes first or another wait already gave
 * up. The clock is read only once the first poll has failed. */
template <typename Poll>
__device__ __forceinline__ bool pkb_spin_until(const pkb_dev_comm &comm, Poll poll)
{
	uint64_t t0 = 0;
	for (uint32_t spins = 0;; spins++) {
		if (poll())
			return true;
		if (spins == 0)
			t0 = pkb_globaltimer();
		else if (pkb_spin_expired(comm, spins, t0))
			return false;
	}
}

/* Spin until *flag >= want (acquire, system scope; pkb_spin_until's bound).
 * Compare with >= so that flags can count up forever (no reset, no ABA,
 * CUDA-graph friendly). */
__device__ __forceinline__ bool pkb_wait_ge(const pkb_dev_comm &comm,
					    const uint32_t *flag, uint32_t want)
{
	return pkb_spin_until(comm, [&] { return pkb_ld_acquire_sys(flag) >= want; });
}

/* Cross-rank barrier of one thread block: block `slot` on every rank meets
 * block `slot` on every other rank. Every thread of the block must call it;
 * needs blockDim.x >= world. Counts up per slot, so the block's slot must be
 * the same across calls in sequence (blockIdx.x is the usual choice) and no
 * two concurrently running blocks may share a slot. Returns false if the
 * wait gave up (the harness then reports a timeout). */
__device__ __forceinline__ bool pkb_barrier_block(const pkb_dev_comm &comm, int slot)
{
	__shared__ uint32_t epoch;
	__shared__ int ok;
	__syncthreads();   /* the block's earlier writes happen before ours */
	if (threadIdx.x == 0) {
		epoch = comm.epochs[slot] + 1;
		comm.epochs[slot] = epoch;
		ok = 1;
	}
	__syncthreads();
	int t = threadIdx.x;
	if (t < comm.world) {
		uint32_t *slot_base = comm.pads[t] + (size_t)slot * comm.world;
		/* tell rank t that we arrived (release: our block's writes first) */
		__threadfence_system();
		pkb_st_release_sys(slot_base + comm.rank, epoch);
		/* wait for rank t to arrive at ours */
		const uint32_t *mine = comm.pads[comm.rank] + (size_t)slot * comm.world + t;
		if (!pkb_wait_ge(comm, mine, epoch))
			ok = 0;
	}
	__syncthreads();
	return ok != 0;
}

/* This call's half of a staging buffer of two halves, `half` bytes apart:
 * 0 on even calls of this thread block, `half` on odd ones. calls[] holds a
 * counter per block (device memory of this rank, zeroed in pkb_init, one
 * per blockIdx.x). Block b runs the same number of calls on every rank, so
 * every rank picks the same half. Every thread of the block must call it. */
__device__ __forceinline__ size_t pkb_call_half(uint32_t *calls, size_t half)
{
	__shared__ uint32_t parity;
	if (threadIdx.x == 0) {
		uint32_t c = calls[blockIdx.x];
		calls[blockIdx.x] = c + 1;
		parity = c & 1;
	}
	__syncthreads();
	return parity * half;
}

#endif /* PKB_DEVICE_CUH */
