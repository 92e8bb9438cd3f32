/*
 * 077_magi1_cso_async_attention, known-good: ok_symm_pull.cu's exchange
 * (symmetric-memory pulls, the same kernels and barriers, unchanged) with
 * the attention as one fused FlashAttention-2-style forward kernel for
 * bf16 (and fp16, which 077 never hands: its fp16 instance computes in
 * bf16, as the original), instead of cuBLAS through an fp32 score matrix.
 * fp32 keeps ok_symm_pull's cuBLAS path.
 *
 * The kernel, flash_fwd: one CTA per (128 query positions, local query
 * head, range), 4 warps of 32 query rows each (two m16 blocks), keys in
 * tiles of BN = 64. Q (128 x 128) is loaded once into shared memory; key
 * and value tiles (64 x 128 each) go through a two-stage cp.async ring,
 * tile j+1 in flight while tile j is computed, one __syncthreads a tile
 * (96 KiB + 1 KiB for alignment: 2 CTAs per SM). Every 256-byte row is
 * stored with its 16-byte chunks XOR-swizzled by (row & 7), so that
 * ldmatrix (Q and K as is, V transposed) reads 8 rows without bank
 * conflicts. Per tile and warp: S = Q K^T with mma.sync m16n8k16 (32 x 64,
 * fp32 accumulators in registers), the online softmax on them, O += P V
 * with mma.sync; O (32 x 128 per warp, fp32) stays in registers to the
 * end. That is FlashAttention-2's forward for head dim 128 on A100/H100
 * (128 x 64 tiles, 4 warps): per warp and tile 40 KiB of ldmatrix for
 * 256 mma, Q re-read from shared memory every tile since it does not fit
 * in registers beside O and S.
 *
 * Where values are rounded to the dtype (everything else is fp32):
 *   - nowhere in S = q . k: fp32 accumulation, kept fp32 (README: scores
 *     rounded to bf16 fail);
 *   - nowhere in the softmax: p = 2^(S * sl2 - m * sl2), sl2 =
 *     log2(e)/sqrt(128), m the running row max of raw scores, in fp32
 *     (ex2.approx); the row sum l adds these fp32 p (unrounded, as flash
 *     attention keeps it); O and l are rescaled by 2^((m_old - m_new) *
 *     sl2) when the max grows;
 *   - P, rounded to nearest to the input dtype for the P V mma,
 *     unnormalised, as FlashAttention-2 does;
 *   - out = O / l, an fp32 division, rounded once to the dtype.
 * The order of ok_symm_pull.cu's cuBLAS version (flash order), which
 * passes against the reference's normalised P.
 *
 * Key tail: L = 12150 (W <= 4) or 21600 is not a multiple of 64
 * (12150 = 189*64 + 54, 21600 = 337*64 + 32). The last tile holds
 * tile_keys() = L - k0 keys; its rows past them are zero-filled by
 * cp.async (src-size 0: nothing read) and their scores set to -inf before
 * the row max, so they weigh exactly 0 and their V rows are zeros, never
 * garbage times 0. Query positions past W*spb (the last CTA of a range)
 * are zero-filled and not stored.
 *
 * Resources (nvcc 13.0 --resource-usage with eval's flags, sm_90a; the
 * same for flash_fwd<bf16> and <fp16>): 255 registers, 0 bytes stack,
 * 0 spill stores / loads; dynamic shared memory 99,328 bytes (97 KiB),
 * static 0 (cuobjdump -res-usage: REG:255 STACK:0 LOCAL:0 SHARED:1024,
 * the system's reserved KiB); 2 CTAs = 8 warps per SM (the register file
 * is the limit). One key tile of the loop, in SASS (cuobjdump -sass): 1097
 * instructions, of which 256 HMMA.16816.F32.BF16, 80 LDSM, 68 MUFU.EX2,
 * 136 FMUL, 16 LDGSTS, no LDL/STL. The 255 without spills needed the
 * loop-invariant values kept small: opaque() below.
 *
 * NOT RUN: written on a machine without a GPU. Compiled with `pkb build`
 * (eval's flags and symbol scan) and ptxas only; never run against the
 * reference, never timed. Its index math (loader, swizzle, ldmatrix
 * addresses, fragment layouts, stages, tail mask, output rows) was run in
 * a numpy mirror of the kernel with ldmatrix / mma semantics from the PTX
 * ISA (t_n = 150 and 140, L = 150 and 201: partial query and key tiles,
 * GQA ratio 2, bf16 and fp16): errors at bf16 / fp16 rounding, and the
 * mirror asserts no ldmatrix reads a row a cp.async still writes.
 * Expected speed: 4 * L^2 * 128 * Hq/W * 4 FLOPs per rank (3.63 TFLOP at
 * W = 2) at the 300-350 TFLOP/s FlashAttention-2 reaches with mma.sync on
 * H100: 10-12 ms of attention at W = 2, against the reference's 50 ms.
 * The original's 8.8 ms is ~410 TFLOP/s, wgmma territory (FA3, cuDNN).
 */
#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cublas_v2.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define THREADS 256
#define COPY_BLOCKS 1024
#define RANGES 4
#define D 128

/* flash_fwd's tiling */
#define BM 128                       /* query rows of a CTA: 4 warps x 32 */
#define BN 64                        /* keys of a tile */
#define FWD_THREADS 128
#define ROW_BYTES (D * 2)            /* a row of 128 bf16 / fp16 */
#define TILE_Q (BM * ROW_BYTES)      /* 32 KiB */
#define TILE_KV (BN * ROW_BYTES)     /* 16 KiB, keys or values */
#define FWD_SMEM (TILE_Q + 4 * TILE_KV)   /* Q, then (K, V) x 2 stages: 96 KiB */
#define FWD_SMEM_ALLOC (FWD_SMEM + 1024)  /* and room to start on 1 KiB */

struct dims {
	int64_t tok, spb, len, hq, hkv, qlh, klh;
	int64_t qrow, kvrow;   /* 16-byte units of a rank's q / kv row, all heads */
};

struct state {
	cublasHandle_t blas;   /* fp32 only */
	struct dims d;
	size_t e, q_bytes, kv_bytes;
	pkb_symm stage;        /* query | key_value | o_loc of this rank */
	void *kv_clip, *q_loc; /* (R*L + BN, klh, 256), (R, W*spb, qlh, 128) */
	float *s, *o, *l;      /* fp32 only: scores (W*spb, L), O (W*spb, 128), row sums */
	void *p;               /* fp32 only: exp(S - max) (W*spb, L) */
};

/* ------------------------------------------------------------------------
 * The exchange: ok_symm_pull.cu's, unchanged */

/* where the peer's data lies: its staging */
__device__ __forceinline__ const char *peer(void *const *stage, int me, int j)
{
	(void)me;
	return (const char *)stage[j];
}

__global__ void barrier(pkb_dev_comm comm)
{
	pkb_barrier_block(comm, 0);
}

/* kv_clip row i*L + g (klh heads) = peer g/spb's row i*spb + g%spb, heads
 * [me*klh, ...); q_loc[i] position j*spb + s (qlh heads) = peer j's row
 * i*spb + s, heads [me*qlh, ...) */
__global__ void pull_in(pkb_dev_comm comm, void *const *stage, size_t kv_off, int4 *kv_clip,
			int4 *q_loc, dims d)
{
	const int me = comm.rank;
	int64_t ku = d.kvrow / d.hkv * d.klh, qu = d.qrow / d.hq * d.qlh;
	int64_t nk = RANGES * d.len * ku, nq = RANGES * comm.world * d.spb * qu;
	for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < nk + nq;
	     o += (int64_t)gridDim.x * blockDim.x) {
		if (o < nk) {
			int64_t x = o / ku, c = o - x * ku;
			int64_t i = x / d.len, g = x - i * d.len;
			int64_t j = g / d.spb, s = g - j * d.spb;
			const int4 *src = (const int4 *)(peer(stage, me, (int)j) + kv_off);
			kv_clip[o] = src[(i * d.spb + s) * d.kvrow + me * ku + c];
		} else {
			int64_t a = o - nk, x = a / qu, c = a - x * qu;
			int64_t i = x / (comm.world * d.spb), y = x - i * comm.world * d.spb;
			int64_t j = y / d.spb, s = y - j * d.spb;
			const int4 *src = (const int4 *)peer(stage, me, (int)j);
			q_loc[a] = src[(i * d.spb + s) * d.qrow + me * qu + c];
		}
	}
}

/* out row i*spb + s, heads of rank j = peer j's o_loc[i] position
 * me*spb + s */
__global__ void pull_out(pkb_dev_comm comm, void *const *stage, size_t o_off, int4 *out, dims d)
{
	const int me = comm.rank;
	int64_t qu = d.qrow / d.hq * d.qlh, n = RANGES * d.spb * d.qrow;
	for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < n;
	     o += (int64_t)gridDim.x * blockDim.x) {
		int64_t x = o / d.qrow, c = o - x * d.qrow;
		int64_t i = x / d.spb, s = x - i * d.spb;
		int64_t j = c / qu, u = c - j * qu;
		const int4 *src = (const int4 *)(peer(stage, me, (int)j) + o_off);
		out[o] = src[((i * comm.world + me) * d.spb + s) * qu + u];
	}
}

/* ------------------------------------------------------------------------
 * flash_fwd's building blocks: cp.async, ldmatrix, mma.sync, ex2 */

__device__ __forceinline__ uint32_t smem_u32(const void *p)
{
	return (uint32_t)__cvta_generic_to_shared(p);
}

/* 16 bytes global -> shared, L2 only; bytes = 0 reads nothing and fills
 * the 16 bytes with zeros */
__device__ __forceinline__ void cp_async16(uint32_t dst, const void *src, int bytes)
{
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
		     :: "r"(dst), "l"(src), "r"(bytes) : "memory");
}

__device__ __forceinline__ void cp_async_commit(void)
{
	asm volatile("cp.async.commit_group;\n" ::: "memory");
}

__device__ __forceinline__ void cp_async_wait_all(void)
{
	asm volatile("cp.async.wait_group 0;\n" ::: "memory");
}

/* volatile: they read what cp.async wrote, and must stay between the
 * barriers they are written between */
__device__ __forceinline__ void ldsm_x4(uint32_t a, uint32_t r[4])
{
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
		     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}

__device__ __forceinline__ void ldsm_x4_t(uint32_t a, uint32_t r[4])
{
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
		     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}

/* c (16 x 8, fp32) += a (16 x 16) b (16 x 8) */
__device__ __forceinline__ void mma(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1,
				    __nv_bfloat16 *)
{
	asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
	    "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
	    : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
	    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void mma(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1,
				    __half *)
{
	asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
	    "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
	    : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
	    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* two fp32 rounded to nearest, lo in the low half (the lower column) */
__device__ __forceinline__ uint32_t pack2(float lo, float hi, __nv_bfloat16 *)
{
	__nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
	return *(uint32_t *)&v;
}

__device__ __forceinline__ uint32_t pack2(float lo, float hi, __half *)
{
	__half2 v = __floats2half2_rn(lo, hi);
	return *(uint32_t *)&v;
}

/* x, as an asm's output: the compiler must recompute what depends on it
 * where it is used, instead of hoisting 8 swizzled ldmatrix addresses per
 * operand out of the key loop into registers (which spilled) */
__device__ __forceinline__ uint32_t opaque(uint32_t x)
{
	asm volatile("" : "+r"(x));
	return x;
}

/* 2^x, MUFU.EX2 (2^-inf = 0) */
__device__ __forceinline__ float ex2(float x)
{
	float y;
	asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
	return y;
}

/* keys of the tile that starts at key k0: the tail tile's rows past them
 * are zero-filled and masked */
__device__ __forceinline__ int tile_keys(int len, int k0)
{
	return min(BN, len - k0);
}

/* shared byte offset of 16-byte chunk c of row r: chunks XOR-swizzled by
 * r & 7, so that the 8 rows an ldmatrix reads at one logical chunk land
 * in 8 different bank groups */
#define SW(r, c) ((uint32_t)(r) * ROW_BYTES + ((uint32_t)((c) ^ ((r) & 7)) << 4))

/* one key/value tile (n <= BN rows) into a stage: thread tid copies
 * chunk tid % 16 of rows tid/16 + 8*it, keys then values (+128 elements in
 * key_value's row), from src, its chunk of the tile's row tid/16; rows
 * past n are zero-filled (src-size 0: nothing is read) */
template <typename T>
__device__ __forceinline__ void load_kv(uint32_t sk, const T *src, int ldkv, int n, int tid)
{
	const int lc = tid % 16, lr = tid / 16;
#pragma unroll
	for (int it = 0; it < BN / 8; it++) {
		int bytes = lr + 8 * it < n ? 16 : 0;
		uint32_t dst = sk + SW(lr + 8 * it, lc);
		cp_async16(dst, src, bytes);
		cp_async16(dst + TILE_KV, src + D, bytes);
		src += 8 * ldkv;
	}
}

/* ------------------------------------------------------------------------
 * flash_fwd: o = softmax(q k^T / sqrt(128)) v for one (query tile, local
 * head h, range i). q_loc, o_loc (R, t_n, qlh, 128); kv_clip (R*L, klh,
 * 256), kv head h / ratio. Warp w owns rows w*32 + [0, 32): m16 blocks
 * mb = 0, 1; in a block, lane holds rows g = lane/4 and g + 8, columns
 * 2*(lane%4) + {0, 1} of every n8 block (the mma's C layout). */
template <typename T>
__global__ void __launch_bounds__(FWD_THREADS, 2)
flash_fwd(const T *__restrict__ q_loc, const T *__restrict__ kv_clip, T *__restrict__ o_loc,
	  int t_n, int len, int qlh, int klh, int ratio, float sl2)
{
	extern __shared__ __align__(128) char smem[];
	const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
	const int q0 = blockIdx.x * BM, h = blockIdx.y, i = blockIdx.z, hk = h / ratio;
	const int ldq = qlh * D, ldkv = klh * 2 * D;
	const T *q = q_loc + ((int64_t)i * t_n * qlh + h) * D;
	/* this thread's chunk of row tid/16 of key/value tile 0 */
	const T *kv = kv_clip + ((int64_t)i * len * klh + hk) * 2 * D +
		      (tid / 16) * ldkv + (tid % 16) * 8;
	/* from a 1 KiB boundary (the launch adds 1 KiB): every row starts on
	 * 256 bytes, so a swizzled address is the row's XOR (chunk << 4) */
	const uint32_t sq = (smem_u32(smem) + 1023) & ~1023u, skv = sq + TILE_Q;

	/* Q, positions past t_n zero-filled; with key/value tile 0: group 0 */
	{
		const int lc = tid % 16, lr = tid / 16;
#pragma unroll
		for (int it = 0; it < BM / 8; it++) {
			int r = lr + 8 * it;
			bool in = q0 + r < t_n;
			const T *src = q + (in ? (int64_t)(q0 + r) * ldq : 0) + lc * 8;
			cp_async16(sq + SW(r, lc), src, in ? 16 : 0);
		}
	}
	load_kv(skv, kv, ldkv, tile_keys(len, 0), tid);
	cp_async_commit();

	/* ldmatrix addresses. Q (A, x4): lane gives row lane % 16, chunk
	 * 2*kk + lane/16 -> a0..a3 = rows 0-7 | 8-15 x k 0-7 | 8-15. K (B, x4,
	 * two n8 blocks): key (lane/16)*8 + lane%8, chunk 2*kk + (lane/8)%2 ->
	 * b0, b1 of keys 0-7, then of keys 8-15. V (B, x4 transposed): key
	 * ((lane/8)%2)*8 + lane%8, chunk 2*nd + lane/16 -> b0, b1 of dims 0-7,
	 * then 8-15. Every row offset is a multiple of 8 plus lane % 8, so the
	 * swizzle is chunk ^ (lane % 8), and chunk = 2*x + bit: 2*x ^ y, with
	 * y = bit ^ (lane % 8) fixed per lane. The addresses below hold the
	 * lane's row and y << 4; an ldmatrix XORs in (2*x) << 4 and adds the
	 * m16 / k16 block's row offset. */
	const int l8 = lane % 8;
	const uint32_t qa = (sq + (warp * 32 + lane % 16) * ROW_BYTES) ^ (((lane / 16) ^ l8) << 4);
	const uint32_t ka = (((lane / 16) * 8 + l8) * ROW_BYTES) ^ ((((lane / 8) % 2) ^ l8) << 4);
	const uint32_t va = ((((lane / 8) % 2) * 8 + l8) * ROW_BYTES) ^ (((lane / 16) ^ l8) << 4);

	float acc[2][16][4];   /* O: 2 m16 blocks x 16 n8 blocks of D */
	float m[4], l[4];      /* row r = 2*mb + half (rows g, g + 8) */
#pragma unroll
	for (int mb = 0; mb < 2; mb++)
#pragma unroll
		for (int nd = 0; nd < 16; nd++)
#pragma unroll
			for (int c = 0; c < 4; c++)
				acc[mb][nd][c] = 0;
#pragma unroll
	for (int r = 0; r < 4; r++) {
		m[r] = -INFINITY;
		l[r] = 0;
	}

	/* tile k0 / BN in stage (k0 / BN) % 2 */
#pragma unroll 1
	for (int k0 = 0; k0 < len; k0 += BN) {
		/* this tile has landed for every thread, and every warp is
		 * done with the one before, whose stage the next tile now
		 * fills */
		cp_async_wait_all();
		__syncthreads();
		const uint32_t stage = (k0 / BN) % 2 * 2 * TILE_KV;
		if (k0 + BN < len) {
			kv += BN * ldkv;
			load_kv(skv + (2 * TILE_KV - stage), kv, ldkv, tile_keys(len, k0 + BN),
				(int)opaque(tid));
		}
		cp_async_commit();
		const uint32_t qb = opaque(qa);
		const uint32_t kb = opaque(skv + stage + ka);
		const uint32_t vb = opaque(skv + stage + TILE_KV + va);

		/* S = Q K^T, fp32 */
		float s[2][8][4];
#pragma unroll
		for (int mb = 0; mb < 2; mb++)
#pragma unroll
			for (int nb = 0; nb < 8; nb++)
#pragma unroll
				for (int c = 0; c < 4; c++)
					s[mb][nb][c] = 0;
#pragma unroll
		for (int kk = 0; kk < D / 16; kk++) {
			uint32_t a[2][4];
#pragma unroll
			for (int mb = 0; mb < 2; mb++)
				ldsm_x4((qb ^ ((2 * kk) << 4)) + mb * 16 * ROW_BYTES, a[mb]);
#pragma unroll
			for (int np = 0; np < BN / 16; np++) {
				uint32_t b[4];
				ldsm_x4((kb ^ ((2 * kk) << 4)) + np * 16 * ROW_BYTES, b);
#pragma unroll
				for (int mb = 0; mb < 2; mb++) {
					mma(s[mb][2 * np], a[mb], b[0], b[1], (T *)0);
					mma(s[mb][2 * np + 1], a[mb], b[2], b[3], (T *)0);
				}
			}
		}

		/* the tail tile: keys past len weigh exactly 0 */
		const int valid = tile_keys(len, k0);
		if (valid < BN) {
#pragma unroll
			for (int nb = 0; nb < 8; nb++)
#pragma unroll
				for (int c = 0; c < 4; c++)
					if (nb * 8 + 2 * (lane % 4) + c % 2 >= valid) {
						s[0][nb][c] = -INFINITY;
						s[1][nb][c] = -INFINITY;
					}
		}

		/* online softmax: the row max over the 4 lanes sharing a row;
		 * O and l rescaled by 2^((m_old - m_new) * sl2) (0 on tile 0,
		 * m_old = -inf); S becomes p in fp32 */
#pragma unroll
		for (int mb = 0; mb < 2; mb++)
#pragma unroll
			for (int hf = 0; hf < 2; hf++) {
				const int r = 2 * mb + hf;
				float mx = m[r];
#pragma unroll
				for (int nb = 0; nb < 8; nb++)
					mx = fmaxf(mx, fmaxf(s[mb][nb][2 * hf], s[mb][nb][2 * hf + 1]));
				mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
				mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
				const float corr = ex2((m[r] - mx) * sl2), base = mx * sl2;
				m[r] = mx;
				float sum = 0;
#pragma unroll
				for (int nb = 0; nb < 8; nb++)
#pragma unroll
					for (int c = 2 * hf; c < 2 * hf + 2; c++) {
						float p = ex2(fmaf(s[mb][nb][c], sl2, -base));
						s[mb][nb][c] = p;
						sum += p;
					}
				l[r] = l[r] * corr + sum;
#pragma unroll
				for (int nd = 0; nd < 16; nd++) {
					acc[mb][nd][2 * hf] *= corr;
					acc[mb][nd][2 * hf + 1] *= corr;
				}
			}

		/* O += P V, P rounded to T: the C layout of S's n8 blocks 2kk
		 * and 2kk + 1 is the A layout of keys 16kk .. 16kk + 15 */
#pragma unroll
		for (int kk = 0; kk < BN / 16; kk++) {
			uint32_t a[2][4];
#pragma unroll
			for (int mb = 0; mb < 2; mb++) {
				a[mb][0] = pack2(s[mb][2 * kk][0], s[mb][2 * kk][1], (T *)0);
				a[mb][1] = pack2(s[mb][2 * kk][2], s[mb][2 * kk][3], (T *)0);
				a[mb][2] = pack2(s[mb][2 * kk + 1][0], s[mb][2 * kk + 1][1], (T *)0);
				a[mb][3] = pack2(s[mb][2 * kk + 1][2], s[mb][2 * kk + 1][3], (T *)0);
			}
#pragma unroll
			for (int np = 0; np < D / 16; np++) {
				uint32_t b[4];
				ldsm_x4_t((vb ^ ((2 * np) << 4)) + kk * 16 * ROW_BYTES, b);
#pragma unroll
				for (int mb = 0; mb < 2; mb++) {
					mma(acc[mb][2 * np], a[mb], b[0], b[1], (T *)0);
					mma(acc[mb][2 * np + 1], a[mb], b[2], b[3], (T *)0);
				}
			}
		}
	}

	/* out = O / l in fp32, rounded once; rows past t_n not stored */
#pragma unroll
	for (int mb = 0; mb < 2; mb++)
#pragma unroll
		for (int hf = 0; hf < 2; hf++) {
			const int r = 2 * mb + hf;
			float sum = l[r];
			sum += __shfl_xor_sync(0xffffffffu, sum, 1);
			sum += __shfl_xor_sync(0xffffffffu, sum, 2);
			const int row = q0 + warp * 32 + mb * 16 + hf * 8 + lane / 4;
			/* opaque: computed here, not kept from Q's through the loop */
			T *o = o_loc + ((int64_t)opaque(i) * t_n * qlh + opaque(h)) * D;
			if (row < t_n) {
				uint32_t *dst = (uint32_t *)(o + (int64_t)row * ldq + 2 * (lane % 4));
#pragma unroll
				for (int nd = 0; nd < 16; nd++)
					dst[nd * 4] = pack2(acc[mb][nd][2 * hf] / sum,
							    acc[mb][nd][2 * hf + 1] / sum, (T *)0);
			}
		}
}

/* ------------------------------------------------------------------------
 * fp32: ok_symm_pull.cu's cuBLAS attention in flash order */

/* P = exp(S - rowmax), l = its row sum */
__global__ void __launch_bounds__(THREADS) exp_rows(const float *s, float *p, float *l, int64_t n)
{
	__shared__ float red[THREADS / 32];
	const float *row = s + blockIdx.x * n;
	float *out = p + blockIdx.x * n;
	float m = -INFINITY;
	for (int64_t c = threadIdx.x; c < n; c += THREADS)
		m = fmaxf(m, row[c]);
	for (int o = 16; o > 0; o /= 2)
		m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
	if (threadIdx.x % 32 == 0)
		red[threadIdx.x / 32] = m;
	__syncthreads();
	m = red[0];
	for (int k = 1; k < THREADS / 32; k++)
		m = fmaxf(m, red[k]);
	__syncthreads();
	float sum = 0;
	for (int64_t c = threadIdx.x; c < n; c += THREADS) {
		float x = __expf(row[c] - m);
		sum += x;
		out[c] = x;
	}
	for (int o = 16; o > 0; o /= 2)
		sum += __shfl_xor_sync(0xffffffffu, sum, o);
	if (threadIdx.x % 32 == 0)
		red[threadIdx.x / 32] = sum;
	__syncthreads();
	if (threadIdx.x == 0) {
		float tot = 0;
		for (int k = 0; k < THREADS / 32; k++)
			tot += red[k];
		l[blockIdx.x] = tot;
	}
}

/* o_loc head rows (ld) = O / l */
__global__ void scale_rows(const float *o, const float *l, float *dst, int64_t rows, int64_t ld)
{
	for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < rows * D;
	     k += (int64_t)gridDim.x * blockDim.x) {
		int64_t r = k / D;
		dst[r * ld + (k - r * D)] = o[k] / l[r];
	}
}

static int attend_fp32(struct state *s, cudaStream_t st, char *o_loc, int64_t t_n)
{
	const struct dims *d = &s->d;
	int64_t ratio = d->qlh / d->klh;
	const float scale = 1 / sqrtf((float)D), one = 1, zero = 0;
	if (cublasSetStream(s->blas, st) != CUBLAS_STATUS_SUCCESS)
		return 1;
	for (int i = 0; i < RANGES; i++)
		for (int64_t h = 0; h < d->qlh; h++) {
			size_t qo = (i * t_n * d->qlh + h) * D * 4;
			const char *k = (const char *)s->kv_clip +
					(i * d->len * d->klh + h / ratio) * 2 * D * 4;
			const char *q = (const char *)s->q_loc + qo;
			int ldq = (int)(d->qlh * D), ldk = (int)(d->klh * 2 * D);
			/* row-major S (T, L) = scale Q K^T: column-major S^T = K Q^T */
			if (cublasGemmEx(s->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)d->len, (int)t_n, D,
					 &scale, k, CUDA_R_32F, ldk, q, CUDA_R_32F, ldq, &zero, s->s,
					 CUDA_R_32F, (int)d->len, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT))
				return 1;
			exp_rows<<<(unsigned)t_n, THREADS, 0, st>>>(s->s, (float *)s->p, s->l, d->len);
			/* O (T, D) = P V: column-major O^T = V^T P^T */
			if (cublasGemmEx(s->blas, CUBLAS_OP_N, CUBLAS_OP_N, D, (int)t_n, (int)d->len,
					 &one, k + D * 4, CUDA_R_32F, ldk, s->p, CUDA_R_32F,
					 (int)d->len, &zero, s->o, CUDA_R_32F, D, CUBLAS_COMPUTE_32F,
					 CUBLAS_GEMM_DEFAULT))
				return 1;
			scale_rows<<<1024, THREADS, 0, st>>>(s->o, s->l, (float *)(o_loc + qo), t_n,
							     d->qlh * D);
		}
	return 0;
}

/* ------------------------------------------------------------------------
 * Entry points */

template <typename T>
static void attend_flash(const struct state *s, cudaStream_t st, char *o_loc, int64_t t_n)
{
	const struct dims *d = &s->d;
	/* scores in raw units, softmax in base 2: exp(x/sqrt(128)) = 2^(x*sl2) */
	const float sl2 = (float)(1.4426950408889634 / sqrt((double)D));
	dim3 grid((unsigned)((t_n + BM - 1) / BM), (unsigned)d->qlh, RANGES);
	flash_fwd<T><<<grid, FWD_THREADS, FWD_SMEM_ALLOC, st>>>(
		(const T *)s->q_loc, (const T *)s->kv_clip, (T *)o_loc, (int)t_n, (int)d->len,
		(int)d->qlh, (int)d->klh, (int)(d->qlh / d->klh), sl2);
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	pkb_dtype t = ctx->in[0].dtype;
	if (t != PKB_BF16 && t != PKB_FP16 && t != PKB_FP32)
		return 1;
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	int w = ctx->world;
	struct dims *d = &s->d;
	s->e = pkb_dtype_size(t);
	d->tok = ctx->in[0].shape[0];
	d->hq = ctx->in[0].shape[1];
	d->hkv = ctx->in[1].shape[1];
	d->spb = d->tok / RANGES;
	d->len = (int64_t)pkb_param_get(ctx, "clip_token_nums", 0);
	d->qlh = d->hq / w;
	d->klh = d->hkv / w;
	d->qrow = d->hq * D * s->e / 16;
	d->kvrow = d->hkv * 2 * D * s->e / 16;
	if (d->hkv % w != 0 || d->hq % w != 0 || d->qlh % d->klh != 0 || d->len > w * d->spb)
		return 1;
	s->q_bytes = ctx->in[0].bytes;
	s->kv_bytes = ctx->in[1].bytes;
	int64_t t_n = w * d->spb;
	/* kv_clip ends with a tile (BN rows) of zeros: flash_fwd clips its
	 * tail tile at L and never reads them, but a loader that forgot to
	 * (bad_flash_tail_unmasked.cu) reads zeros there, not past the
	 * allocation */
	size_t clip = RANGES * d->len * d->klh * 2 * D * s->e, pad = BN * d->klh * 2 * D * s->e;
	if (cudaMalloc(&s->kv_clip, clip + pad) != cudaSuccess ||
	    cudaMemset((char *)s->kv_clip + clip, 0, pad) != cudaSuccess ||
	    cudaDeviceSynchronize() != cudaSuccess ||   /* before any stream uses it */
	    cudaMalloc(&s->q_loc, s->q_bytes) != cudaSuccess)
		return 1;
	if (t == PKB_FP32) {
		if (cublasCreate(&s->blas) != CUBLAS_STATUS_SUCCESS ||
		    cudaMalloc(&s->s, t_n * d->len * sizeof(float)) != cudaSuccess ||
		    cudaMalloc(&s->p, t_n * d->len * s->e) != cudaSuccess ||
		    cudaMalloc(&s->o, t_n * D * sizeof(float)) != cudaSuccess ||
		    cudaMalloc(&s->l, t_n * sizeof(float)) != cudaSuccess)
			return 1;
	} else if (cudaFuncSetAttribute(flash_fwd<__nv_bfloat16>,
					cudaFuncAttributeMaxDynamicSharedMemorySize,
					FWD_SMEM_ALLOC) != cudaSuccess ||
		   cudaFuncSetAttribute(flash_fwd<__half>,
					cudaFuncAttributeMaxDynamicSharedMemorySize,
					FWD_SMEM_ALLOC) != cudaSuccess) {
		return 1;
	}
	return ctx->svc->symm_alloc(ctx, 2 * s->q_bytes + s->kv_bytes, &s->stage);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	const struct dims *d = &s->d;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	pkb_dtype t = ctx->in[0].dtype;
	int w = ctx->world;
	size_t o_off = s->q_bytes + s->kv_bytes;
	char *mine = (char *)s->stage.local;
	int64_t t_n = w * d->spb;

	if (cudaMemcpyAsync(mine, ctx->in[0].data, s->q_bytes, cudaMemcpyDeviceToDevice, st) ||
	    cudaMemcpyAsync(mine + s->q_bytes, ctx->in[1].data, s->kv_bytes,
			    cudaMemcpyDeviceToDevice, st))
		return 1;
	barrier<<<1, 64, 0, st>>>(ctx->dev);
	pull_in<<<COPY_BLOCKS, THREADS, 0, st>>>(ctx->dev, s->stage.peers_dev, s->q_bytes,
						 (int4 *)s->kv_clip, (int4 *)s->q_loc, *d);
	if (t == PKB_BF16)
		attend_flash<__nv_bfloat16>(s, st, mine + o_off, t_n);
	else if (t == PKB_FP16)
		attend_flash<__half>(s, st, mine + o_off, t_n);
	else if (attend_fp32(s, st, mine + o_off, t_n))
		return 1;
	barrier<<<1, 64, 0, st>>>(ctx->dev);
	pull_out<<<COPY_BLOCKS, THREADS, 0, st>>>(ctx->dev, s->stage.peers_dev, o_off,
						  (int4 *)ctx->out[0].data, *d);
	barrier<<<1, 64, 0, st>>>(ctx->dev);   /* peers are done reading ours */
	return cudaGetLastError() != cudaSuccess;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (!s)
		return 0;
	if (s->blas)
		cublasDestroy(s->blas);
	cudaFree(s->kv_clip);
	cudaFree(s->q_loc);
	cudaFree(s->s);
	cudaFree(s->p);
	cudaFree(s->o);
	cudaFree(s->l);
	free(s);
	return 0;
}
