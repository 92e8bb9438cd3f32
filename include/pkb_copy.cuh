/*
 * pkb_copy.cuh -- block-wide copy loops for collective kernels over
 * symmetric memory (the expert candidates of 001-008 use them; include it
 * after pkb_device.cuh when they help).
 *
 *   - pkb_unit<B>::t: a B-byte unit type (B = 16, 8, 4, 2 or 1), and
 *     pkb_unit_bytes(size): the largest unit (16 bytes at most) that
 *     divides a size. Copying in units of that size keeps every slab of a
 *     tensor made of equal slabs aligned to the unit;
 *   - pkb_copy_units<NT>(dst, src, n): n units, four loads in flight per
 *     thread before the stores;
 *   - pkb_copy2_units<NT>(d0, d1, src, n): the same into two destinations,
 *     each unit loaded once;
 *   - pkb_copy_many<NT>(dst, src, np, at, n): for k < np, units
 *     [at, at + n) of src[k] into dst[k], with loads from different sources
 *     in flight together;
 *   - pkb_copy_flat<NT>(d0, d1, src, a, n, bytes): 16-byte units [a, a + n)
 *     of a buffer of any size into one or two destinations, the ragged end
 *     byte by byte;
 *   - pkb_sum_units<NT, T, VEC>(out, src, w, at, n), pkb_sum_flat<NT>(out,
 *     src, w, a, n, elems): out = the sum over k < w of src[k], accumulated
 *     in fp32 and rounded once, the loads from different sources in flight
 *     together (pkb_sum_flat: any length, the ragged end element by element);
 *     pkb_sum_units_to / pkb_sum_flat_to(dst, nd, ...): the same sum stored
 *     to nd outputs;
 *   - pkb_blocks_for(units, per_block, max_blocks): a grid size, host side.
 *
 * The copies are block-wide: every thread of the block calls them with the
 * same arguments, and NT is the block size (a compile-time constant, so the
 * strides are too).
 */
#ifndef PKB_COPY_CUH
#define PKB_COPY_CUH

#include <stdint.h>
#include <stddef.h>
#include "pkb_device.cuh"   /* pkb_to_float, pkb_from_float */

template <int B> struct pkb_unit;
template <> struct pkb_unit<16> { typedef int4 t; };
template <> struct pkb_unit<8> { typedef int2 t; };
template <> struct pkb_unit<4> { typedef int t; };
template <> struct pkb_unit<2> { typedef short t; };
template <> struct pkb_unit<1> { typedef char t; };

/* the largest unit (16 bytes at most) that divides `size` bytes: it only
 * depends on the shapes, so every rank picks the same one */
static inline int pkb_unit_bytes(size_t size)
{
	int b = 16;
	while (b > 1 && size % b)
		b >>= 1;
	return b;
}

/* n units from src to dst: four loads in flight per thread before the
 * stores, the ragged end included */
template <int NT, typename U>
__device__ __forceinline__ void pkb_copy_units(U *dst, const U *src, int n)
{
	for (int i = threadIdx.x; i < n; i += 4 * NT) {
		U x[4];
		for (int u = 0; u < 4; u++)
			if (i + u * NT < n)
				x[u] = src[i + u * NT];
		for (int u = 0; u < 4; u++)
			if (i + u * NT < n)
				dst[i + u * NT] = x[u];
	}
}

/* the same into two destinations, each unit loaded once */
template <int NT, typename U>
__device__ __forceinline__ void pkb_copy2_units(U *d0, U *d1, const U *src, int n)
{
	for (int i = threadIdx.x; i < n; i += 4 * NT) {
		U x[4];
		for (int u = 0; u < 4; u++)
			if (i + u * NT < n)
				x[u] = src[i + u * NT];
		for (int u = 0; u < 4; u++)
			if (i + u * NT < n) {
				d0[i + u * NT] = x[u];
				d1[i + u * NT] = x[u];
			}
	}
}

/* for k < np: n units from src[k] + at to dst[k] + at (the tables may be in
 * shared memory). The (source, unit) pairs are dealt out over the threads,
 * and a thread loads B of them before storing any, so loads from different
 * sources are in flight together: at small sizes one round trip serves
 * every peer instead of one round trip per peer. */
template <int NT, typename U>
__device__ __forceinline__ void pkb_copy_many(U *const *dst, const U *const *src, int np,
					      int64_t at, int n)
{
	const int B = sizeof(U) == 16 ? 6 : 8;   /* what fits in 64 registers */
	int total = np * n;
	for (int j0 = threadIdx.x; j0 < total; j0 += B * NT) {
		U x[B];
		for (int m = 0; m < B; m++) {
			int j = j0 + m * NT;
			if (j < total) {
				int k = j / n;
				x[m] = src[k][at + (j - k * n)];
			}
		}
		for (int m = 0; m < B; m++) {
			int j = j0 + m * NT;
			if (j < total) {
				int k = j / n;
				dst[k][at + (j - k * n)] = x[m];
			}
		}
	}
}

/* 16-byte units [a, a+n) of a flat buffer of `bytes` bytes into d0 and,
 * when d1 is not NULL, into d1. Unit bytes/16, when partial, is copied byte
 * by byte by the block that owns it. */
template <int NT>
__device__ __forceinline__ void pkb_copy_flat(void *d0, void *d1, const void *src, int64_t a,
					      int n, int64_t bytes)
{
	int64_t full = bytes >> 4;
	int nv = (int)max((int64_t)0, min((int64_t)n, full - a));
	if (nv > 0) {
		int4 *v0 = (int4 *)d0 + a, *v1 = d1 ? (int4 *)d1 + a : NULL;
		const int4 *vs = (const int4 *)src + a;
		for (int i = threadIdx.x; i < nv; i += 4 * NT) {
			int4 x[4];
			for (int u = 0; u < 4; u++)
				if (i + u * NT < nv)
					x[u] = vs[i + u * NT];
			for (int u = 0; u < 4; u++)
				if (i + u * NT < nv) {
					v0[i + u * NT] = x[u];
					if (v1)
						v1[i + u * NT] = x[u];
				}
		}
	}
	if (a <= full && full < a + n)
		for (int64_t j = full * 16 + threadIdx.x; j < bytes; j += NT) {
			char c = ((const char *)src)[j];
			((char *)d0)[j] = c;
			if (d1)
				((char *)d1)[j] = c;
		}
}

/* n units (VEC elements of T each) at unit offset `at`: the sum over k < w
 * of src[k] (a table in shared memory), accumulated in fp32, rounded once,
 * and stored to dst[k] for k < nd (a table too). A thread loads UNR of its
 * units from KB sources -- 8 loads in flight, from different peers -- before
 * adding them into 8 fp32 accumulators. */
template <int NT, typename T, int VEC>
__device__ __forceinline__ void pkb_sum_units_to(T *const *dst, int nd, const T *const *src,
						 int w, int64_t at, int n)
{
	typedef typename pkb_unit<VEC * sizeof(T)>::t U;
	const int UNR = VEC >= 8 ? 1 : VEC == 4 ? 2 : 8 / VEC;
	const int KB = 8 / UNR;
	for (int i = threadIdx.x; i < n; i += UNR * NT) {
		float acc[UNR][VEC];
		for (int u = 0; u < UNR; u++)
			for (int v = 0; v < VEC; v++)
				acc[u][v] = 0.f;
#pragma unroll 1
		for (int k0 = 0; k0 < w; k0 += KB) {
			U r[KB][UNR];
			for (int k = 0; k < KB; k++) {
				const U *s = (const U *)src[min(k0 + k, w - 1)] + at;
				for (int u = 0; u < UNR; u++)
					if (k0 + k < w && i + u * NT < n)
						r[k][u] = s[i + u * NT];
			}
			for (int k = 0; k < KB; k++)
				for (int u = 0; u < UNR; u++)
					if (k0 + k < w && i + u * NT < n) {
						const T *e = (const T *)&r[k][u];
						for (int v = 0; v < VEC; v++)
							acc[u][v] += pkb_to_float(e[v]);
					}
		}
		for (int u = 0; u < UNR; u++)
			if (i + u * NT < n) {
				U r;
				T *f = (T *)&r;
				for (int v = 0; v < VEC; v++)
					f[v] = pkb_from_float<T>(acc[u][v]);
				for (int k = 0; k < nd; k++)
					((U *)dst[k] + at)[i + u * NT] = r;
			}
	}
}

/* the same into one output */
template <int NT, typename T, int VEC>
__device__ __forceinline__ void pkb_sum_units(T *out, const T *const *src, int w, int64_t at,
					      int n)
{
	T *const dst[1] = { out };
	pkb_sum_units_to<NT, T, VEC>(dst, 1, src, w, at, n);
}

/* 16-byte units [a, a+n) of a flat array of `elems` T, summed as by
 * pkb_sum_units_to into dst[k] for k < nd: the partial last unit, if any,
 * is summed element by element by the block that owns it */
template <int NT, typename T>
__device__ __forceinline__ void pkb_sum_flat_to(T *const *dst, int nd, const T *const *src,
						int w, int64_t a, int n, int64_t elems)
{
	const int VEC = 16 / sizeof(T);
	int64_t full = elems / VEC;
	int nv = (int)max((int64_t)0, min((int64_t)n, full - a));
	if (nv > 0)
		pkb_sum_units_to<NT, T, VEC>(dst, nd, src, w, a, nv);
	if (a <= full && full < a + n) {
		int64_t j = full * VEC + threadIdx.x;
		if (j < elems) {
			float acc = 0.f;
			for (int p = 0; p < w; p++)
				acc += pkb_to_float(src[p][j]);
			T v = pkb_from_float<T>(acc);
			for (int k = 0; k < nd; k++)
				dst[k][j] = v;
		}
	}
}

/* the same into one output */
template <int NT, typename T>
__device__ __forceinline__ void pkb_sum_flat(T *out, const T *const *src, int w, int64_t a,
					     int n, int64_t elems)
{
	T *const dst[1] = { out };
	pkb_sum_flat_to<NT, T>(dst, 1, src, w, a, n, elems);
}

/* Blocks for `units` units when a block takes `per_block` of them before the
 * grid grows, up to max_blocks: at small sizes a block's share then fits in
 * one batch of loads per thread, one round trip. */
static inline int pkb_blocks_for(int64_t units, int per_block, int max_blocks)
{
	int64_t blocks = (units + per_block - 1) / per_block;
	return blocks < 1 ? 1 : blocks > max_blocks ? max_blocks : (int)blocks;
}

#endif /* PKB_COPY_CUH */
