/*
 * pkb_ce.cuh -- large point-to-point transfers by the copy engines, in
 * lockstep steps, over pkb's symmetric memory (for the collectives of
 * 001, 002 and 005-008 at large sizes; include it after pkb_device.cuh and
 * pkb_copy.cuh).
 *
 * Why: a copy engine moves a peer-to-peer copy faster than SM stores (one
 * way 397 against 369 GB/s on the lent H200s, `pkb calibrate`) and uses no
 * SM, but several copies into or out of one GPU at once share its links
 * badly (all-to-all by concurrent copies: 195 GB/s per GPU). So the
 * transfers go in steps: in each, a rank sends at most one copy and
 * receives at most one, and every rank meets every other (a one-block
 * kernel, pkb_barrier_block) before the next step.
 *
 * A step, as one rank sees it (pkb_ce_step): send send_bytes from send_src
 * into slot send_slot of rank send_to's staging buffer (send_to < 0: nothing
 * to send), and copy recv_bytes of slot recv_slot of its own staging buffer to
 * recv_dst once they have arrived (recv_dst NULL: nothing to copy out). The
 * copy-out of step i runs on a side stream, under step i+1's transfer; with
 * `chunks` > 1 every step is cut into that many transfers of `bytes` /
 * `chunks` (`bytes`: the largest transfer of the call, the same on every
 * rank, so that all ranks cut at the same offsets), each with its barrier, so
 * that the last copy-out is short. With ce->tail set (bytes), the last step
 * is cut in halves instead (1/2, 1/4, ...) down to a part of at most that
 * many bytes: a short last part in few transfers (pkb_ce_cuts).
 *
 *   pkb_init: return pkb_ce_create(ctx, slots, bytes, tail);  // slots x bytes staging
 *   pkb_run:  return pkb_ce_run(ctx, (struct pkb_ce *)ctx->user, steps, n, bytes,
 *                               chunks, own_dst, own_src, sum);
 *   pkb_fini: return pkb_ce_destroy(ctx);
 *
 * pkb_ce_run also copies own_src to own_dst (a rank's own slab) on the side
 * stream, and joins the side stream into ctx->stream before it returns.
 *
 * Reductions (sum, not NULL): as each chunk of the last step lands, the side
 * stream sums that chunk of sum->own and of every staging slot but
 * sum->skip into sum->dst, in fp32 rounded once (pkb_sum_flat). For a
 * reduce-scatter, the steps send chunk d of the input to rank d and copy
 * nothing out; the sums of all chunks but the last run under transfers.
 * `sum` is given on every rank or on none (the barriers below depend on it).
 * Nothing waits on the steps before the last (a call with a sum copies
 * nothing out: pkb_ce_run refuses one that would), so no barrier follows
 * them: a rank's transfers follow each other on its stream, and the
 * barriers of the last step, which follow every earlier transfer of every
 * rank, say that every slot has landed (each slot is written once a call). 001 at 256 MiB, W = 4:
 * 1228 against 1253 us with the barriers; 007: 2206 against 2228.
 *
 * All-reduce (sum->gather set): the sums go into the rank's own slot
 * (sum->dst, slot sum->skip, which no peer writes), and chunk r of the
 * result, at gather + r * stride, is pulled from slot r of rank r by the
 * copy engine, part by part: before the barrier after part c+1 of the last
 * step, each rank's stream waits for its sum of part c, so past that
 * barrier every rank pulls part c from every peer while the side stream
 * sums part c+1 (one more barrier for the last part). No all-gather steps,
 * no staging for them and no copy-outs: 001 at 256 MiB, W = 4, 1158 us
 * (parts of 32 MiB) against 1228 with an all-gather in steps.
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
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_copy.cuh"

#define PKB_CE_MAX_EVENTS 256      /* parts of all steps of a call, at most */
#define PKB_CE_MAX_PARTS 64        /* parts of one step, at most */
#define PKB_CE_THREADS 512
#define PKB_CE_BLOCKS 132          /* copy-out grid: one block per SM of an H200 */
#define PKB_CE_MAX_WORLD 64        /* the barrier kernel's block size */

struct pkb_ce_step {
	const void *send_src;
	int send_to, send_slot;
	size_t send_bytes;
	void *recv_dst;
	int recv_slot;
	size_t recv_bytes;
};

/* dst = own + every staging slot but slot `skip`, `bytes` of `dtype` each.
 * An all-reduce (gather not NULL): dst is this rank's own staging slot
 * (`skip`), and chunk r of the result, the bytes of [r * stride, (r+1) *
 * stride) that lie within `all`, is pulled from slot r of rank r into
 * gather + r * stride as the sums land. */
struct pkb_ce_sum {
	void *dst;
	const void *own;
	int skip;
	size_t bytes;
	pkb_dtype dtype;
	char *gather;
	size_t stride, all;
};

struct pkb_ce_srcs {
	const void *p[PKB_CE_MAX_WORLD];
	int n;
};

struct pkb_ce {
	pkb_symm stage;
	size_t slot;                  /* bytes per slot, a multiple of 16 */
	size_t tail;                  /* 0, or the last step's last part at most (pkb_ce_cuts) */
	cudaStream_t side;
	cudaEvent_t go, side_done, landed[PKB_CE_MAX_EVENTS], summed[PKB_CE_MAX_PARTS];
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

/* dst[e] = the sum over k < s.n of s.p[k][e], e < elems; VEC elements a unit
 * (16 bytes, or 1 element where an address is not 16-byte aligned) */
template <typename T, int VEC>
__global__ void __launch_bounds__(PKB_CE_THREADS)
pkb_ce_sum_kernel(T *dst, struct pkb_ce_srcs s, int64_t elems)
{
	__shared__ const T *src[PKB_CE_MAX_WORLD];
	if (threadIdx.x < s.n)
		src[threadIdx.x] = (const T *)s.p[threadIdx.x];
	__syncthreads();
	int64_t n = (elems + VEC - 1) / VEC;   /* units, the partial last one too */
	int64_t per = (n + gridDim.x - 1) / gridDim.x;
	int64_t u0 = min(n, per * (int64_t)blockIdx.x), u1 = min(n, u0 + per);
	for (int64_t a = u0; a < u1; a += 1 << 20) {
		int m = (int)min((int64_t)1 << 20, u1 - a);
		if (VEC == 1)
			pkb_sum_units<PKB_CE_THREADS, T, 1>(dst, src, s.n, a, m);
		else
			pkb_sum_flat<PKB_CE_THREADS, T>(dst, src, s.n, a, m, elems);
	}
}

template <typename T>
static inline void pkb_ce_sum_typed(void *dst, const struct pkb_ce_srcs *s, size_t bytes,
				    cudaStream_t st)
{
	uintptr_t at = (uintptr_t)dst;
	for (int k = 0; k < s->n; k++)
		at |= (uintptr_t)s->p[k];
	int64_t elems = (int64_t)(bytes / sizeof(T));
	const int VEC = 16 / sizeof(T);
	if (at & 15) {
		int grid = pkb_blocks_for(elems, PKB_CE_THREADS, PKB_CE_BLOCKS);
		pkb_ce_sum_kernel<T, 1><<<grid, PKB_CE_THREADS, 0, st>>>((T *)dst, *s, elems);
	} else {
		int grid = pkb_blocks_for((elems + VEC - 1) / VEC, PKB_CE_THREADS / 2, PKB_CE_BLOCKS);
		pkb_ce_sum_kernel<T, VEC><<<grid, PKB_CE_THREADS, 0, st>>>((T *)dst, *s, elems);
	}
}

/* The three kinds of work pkb_ce_run puts on a stream besides copies and
 * events: a barrier of every rank, a local copy, a sum. tests/unit/
 * hosttest_ce_sim.cu defines PKB_CE_SIM and versions of its own that record
 * each operation (and renames the CUDA calls below by macro), to replay the
 * candidates' calls on the host at any world size. */
#ifndef PKB_CE_SIM
/* every rank's barrier kernel meets every other's, on stream st */
static inline void pkb_ce_meet(const pkb_dev_comm &comm, cudaStream_t st)
{
	pkb_ce_barrier<<<1, PKB_CE_MAX_WORLD, 0, st>>>(comm);
}

/* bytes [off, off+n) of sum->dst <- the sum of that range of sum->own and of
 * every slot of the local staging buffer but sum->skip, on stream st */
static inline int pkb_ce_sum_range(const struct pkb_ce *ce, int world,
				   const struct pkb_ce_sum *sum, size_t off, size_t n,
				   cudaStream_t st)
{
	struct pkb_ce_srcs s;
	s.n = 0;
	s.p[s.n++] = (const char *)sum->own + off;
	for (int k = 0; k < world; k++)
		if (k != sum->skip)
			s.p[s.n++] = (const char *)ce->stage.local + (size_t)k * ce->slot + off;
	void *dst = (char *)sum->dst + off;
	switch (sum->dtype) {
	case PKB_BF16: pkb_ce_sum_typed<__nv_bfloat16>(dst, &s, n, st); return 0;
	case PKB_FP16: pkb_ce_sum_typed<__half>(dst, &s, n, st); return 0;
	case PKB_FP32: pkb_ce_sum_typed<float>(dst, &s, n, st); return 0;
	default: return 1;
	}
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
#endif /* PKB_CE_SIM */

/* pkb_init: ctx->user = a struct pkb_ce with a staging buffer of `slots`
 * slots of `bytes` each (collective); tail: 0 or the last step's last part
 * at most, in bytes (pkb_ce_cuts) */
static inline int pkb_ce_create(pkb_ctx *ctx, int slots, size_t bytes, size_t tail)
{
	struct pkb_ce *ce = (struct pkb_ce *)calloc(1, sizeof *ce);
	if (!ce)
		return 1;
	ctx->user = ce;
	if (ctx->world > PKB_CE_MAX_WORLD)
		return 1;
	ce->slot = (bytes + 15) & ~(size_t)15;
	ce->tail = tail;
	if (cudaStreamCreateWithFlags(&ce->side, cudaStreamNonBlocking) != cudaSuccess ||
	    cudaEventCreateWithFlags(&ce->go, cudaEventDisableTiming) != cudaSuccess ||
	    cudaEventCreateWithFlags(&ce->side_done, cudaEventDisableTiming) != cudaSuccess)
		return 1;
	for (; ce->nevents < PKB_CE_MAX_EVENTS; ce->nevents++)
		if (cudaEventCreateWithFlags(&ce->landed[ce->nevents], cudaEventDisableTiming) !=
		    cudaSuccess ||
		    (ce->nevents < PKB_CE_MAX_PARTS &&
		     cudaEventCreateWithFlags(&ce->summed[ce->nevents], cudaEventDisableTiming) !=
			     cudaSuccess))
			return 1;
	return ctx->svc->symm_alloc(ctx, (size_t)slots * ce->slot, &ce->stage);
}

/* The ends of the parts a step is cut into, in cut[], their number returned:
 * `chunks` equal parts, or, for the last step when ce->tail is set, halves
 * of what is left until a part is at most ce->tail bytes (bytes/2, bytes/4,
 * ..., then the rest): the work behind the last part (its copy-out or sum)
 * is all that follows the last transfer, and the earlier parts' runs under
 * the later transfers. Ends on 16 bytes keep every part aligned to the unit;
 * they depend on bytes alone, the same on every rank. */
static inline int pkb_ce_cuts(const struct pkb_ce *ce, size_t bytes, int chunks, int last,
			      size_t *cut)
{
	int n = 0;
	if (last && ce->tail) {
		size_t at = 0;
		while (n < PKB_CE_MAX_PARTS - 1 && bytes - at > ce->tail) {
			size_t half = ((bytes - at) / 2 + 15) & ~(size_t)15;
			if (half >= bytes - at)
				break;
			cut[n++] = at += half;
		}
		cut[n++] = bytes;
		return n;
	}
	size_t part = ((bytes + chunks - 1) / chunks + 15) & ~(size_t)15;
	for (size_t at = 0; at < bytes && n < PKB_CE_MAX_PARTS; at += part)
		cut[n++] = bytes - at < part ? bytes : at + part;
	if (!n)
		cut[n++] = 0;
	return n;
}

/* the bytes of [0, len) that lie in [off, off + part) */
static inline size_t pkb_ce_within(size_t len, size_t off, size_t part)
{
	size_t n = len > off ? len - off : 0;
	return n < part ? n : part;
}

static inline int pkb_ce_run(pkb_ctx *ctx, struct pkb_ce *ce, const struct pkb_ce_step *steps,
			     int nsteps, size_t bytes, int chunks, void *own_dst, const void *own_src,
			     const struct pkb_ce_sum *sum)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	/* cut[0]: every step but the last; cut[1]: the last */
	size_t cut[2][PKB_CE_MAX_PARTS];
	int ncut[2] = { pkb_ce_cuts(ce, bytes, chunks, 0, cut[0]),
			pkb_ce_cuts(ce, bytes, chunks, 1, cut[1]) };
	int parts = (nsteps - 1) * ncut[0] + ncut[1], too_long = sum && sum->bytes > bytes;
	for (int i = 0; i < nsteps; i++) {
		too_long |= steps[i].send_bytes > bytes || steps[i].recv_bytes > bytes;
		if (sum && steps[i].recv_dst) {   /* no barrier would follow its step */
			ctx->svc->log(ctx, "pkb_ce_run: a copy-out in a call with a sum");
			return 1;
		}
	}
	if (parts > PKB_CE_MAX_EVENTS || chunks > PKB_CE_MAX_PARTS || bytes > ce->slot ||
	    too_long) {
		ctx->svc->log(ctx, "pkb_ce_run: %d steps in %d parts (%d chunks), or a transfer "
			      "over %zu bytes or over a slot (%zu): too many",
			      nsteps, parts, chunks, bytes, ce->slot);
		return 1;
	}
	if (cudaEventRecord(ce->go, st) || cudaStreamWaitEvent(ce->side, ce->go, 0))
		return 1;
	pkb_ce_local_copy(own_dst, own_src, own_dst ? bytes : 0, ce->side);
	pkb_ce_meet(ctx->dev, st);
	const int pull = sum && sum->gather, me = ctx->rank, w = ctx->world;
	/* part c of the last step's cuts of every peer's chunk, from its slot */
	auto pull_part = [&](int c) {
		size_t off = c ? cut[1][c - 1] : 0, part = cut[1][c] - off;
		for (int k = 1; k < w; k++) {
			int r = (me - k + w) % w;
			size_t at = (size_t)r * sum->stride;
			size_t n = pkb_ce_within(pkb_ce_within(sum->all, at, sum->stride), off, part);
			if (n && cudaMemcpyAsync(sum->gather + at + off,
						 (const char *)ce->stage.peers[r] +
							 (size_t)r * ce->slot + off,
						 n, cudaMemcpyDeviceToDevice, st))
				return 1;
		}
		return 0;
	};
	int e = 0;
	for (int i = 0; i < nsteps; i++) {
		const struct pkb_ce_step *s = &steps[i];
		const int last = i == nsteps - 1, sum_here = sum && last;
		const size_t *end = cut[last];
		for (int c = 0; c < ncut[last]; c++, e++) {
			/* what of this part lies within the send, the copy-out, the sum */
			size_t off = c ? end[c - 1] : 0, part = end[c] - off;
			size_t ns = pkb_ce_within(s->send_bytes, off, part);
			size_t nr = s->recv_dst ? pkb_ce_within(s->recv_bytes, off, part) : 0;
			size_t nm = sum_here ? pkb_ce_within(sum->bytes, off, part) : 0;
			if (s->send_to >= 0 && ns &&
			    cudaMemcpyAsync((char *)ce->stage.peers[s->send_to] +
						    (size_t)s->send_slot * ce->slot + off,
					    (const char *)s->send_src + off, ns,
					    cudaMemcpyDeviceToDevice, st))
				return 1;
			/* the same on every rank: every rank meets at the same barriers */
			if (sum && !last)
				continue;
			/* pulls: this barrier also says that every rank summed part c-1 */
			if (pull && last && c && cudaStreamWaitEvent(st, ce->summed[c - 1], 0))
				return 1;
			pkb_ce_meet(ctx->dev, st);
			if (nr || nm) {
				if (cudaEventRecord(ce->landed[e], st) ||
				    cudaStreamWaitEvent(ce->side, ce->landed[e], 0))
					return 1;
				if (nr)
					pkb_ce_local_copy((char *)s->recv_dst + off,
							  (const char *)ce->stage.local +
								  (size_t)s->recv_slot * ce->slot + off,
							  nr, ce->side);
				if (nm && pkb_ce_sum_range(ce, w, sum, off, nm, ce->side))
					return 1;
			}
			if (pull && last) {
				if (cudaEventRecord(ce->summed[c], ce->side))
					return 1;
				pkb_ce_local_copy(sum->gather + (size_t)me * sum->stride + off,
						  (const char *)sum->dst + off, nm, ce->side);
				if (c && pull_part(c - 1))
					return 1;
			}
		}
	}
	if (pull && nsteps) {   /* the last part */
		if (cudaStreamWaitEvent(st, ce->summed[ncut[1] - 1], 0))
			return 1;
		pkb_ce_meet(ctx->dev, st);
		if (pull_part(ncut[1] - 1))
			return 1;
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
	for (int i = 0; i < ce->nevents; i++) {
		cudaEventDestroy(ce->landed[i]);
		if (i < PKB_CE_MAX_PARTS)
			cudaEventDestroy(ce->summed[i]);
	}
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
