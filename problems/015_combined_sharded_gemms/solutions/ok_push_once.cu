/*
 * 015_combined_sharded_gemms, candidate: the rows this rank needs pushed in
 * one kernel with one barrier, then the reference's GEMM, SiLU, GEMM: four
 * launches and one cross-rank wait, against the reference's six launches
 * and an NCCL exchange.
 *
 * The math (README): y_local = silu(X @ W1_r) @ W2_r, X (Ml, H) = row block
 * r of x_full = [x_local_0 | ... | x_local_{W-1}][r*Ml : (r+1)*Ml], h and
 * a = silu(h) rounded to the working dtype as the reference rounds them.
 * The reduce-scatter of the original adds zeros: skipped, as the reference
 * does.
 *
 * Napkin math, M = 8192 (N is unused), bf16, W = 4: Ml = 2048, H = 256,
 * Hl = 64, F = 512. In per rank: (W-1)*Ml*Hl*e = 768 KiB (256 KiB a link,
 * ~2 us at ~120 GB/s). GEMMs: 2 x 2*Ml*H*F = 2 x 0.54 GFLOP, K of 256 and
 * 512: a few us each, far from the tensor-core peak. SiLU: 2 MiB read and
 * written. Every part is a few microseconds, so the call is bound by its
 * launches and waits: the reference's copy, grouped ncclSend/ncclRecv (a
 * kernel and NCCL's handshakes), concatenation, GEMM, SiLU, GEMM.
 *
 * Why no row-chunked pipeline (all-gather chunk c+1 under the GEMMs of
 * chunk c, the plan first proposed in issue 41)? There is ~2 us of
 * transfer to hide at 8192; a pipeline adds an event or a barrier per chunk
 * and cuts 3-4 us GEMMs into smaller, less efficient ones, and the copy
 * engines would first need x_local staged into symmetric memory (one more
 * launch). Overlap would pay from M ~ 64K (2 MiB a link against 8.6 GFLOP).
 * Here the gain is in launches and waits:
 *
 * The push (gather_rows, one kernel): block b owns the same units of every
 * (Ml, Hl) row block on every rank. It stores its units of x_local's row
 * block d into column slice `rank` of rank d's landing buffer (16-byte
 * stores over NVLink, ring order from the rank itself), meets block b of
 * every rank (one pkb_barrier_block: every rank's units of this block have
 * landed here), then copies its units of every slice from the landing
 * buffer into a fixed local X, which the GEMM reads (cuBLAS needs one
 * address for every call and every graph replay).
 * One barrier, not two (ok_push_rows.cu has a barrier before the push, so
 * no peer overwrites X while this rank's previous GEMM reads it): the
 * landing buffer has two halves, alternated by a per-block call counter on
 * the device (pkb_call_half: the same parity on every rank, and it keeps
 * working in a replayed graph). A rank writes a half again two calls later,
 * after the barrier of the call between, which each peer reaches only after
 * its kernel that read that half has ended. The GEMM reads X, which only
 * this rank's next kernel rewrites, behind the GEMM on the same stream.
 * The local copy costs Ml*H*e = 1 MiB of HBM traffic (well under 1 us).
 *
 * Expected at 8192, W = 4: the push ~3-5 us (its barrier included), two
 * GEMMs and SiLU ~8-10 us: ~13-15 us against an estimated 30-40 us for the
 * reference, under its NCCL exchange alone. At the default (Ml = 256) the
 * same four launches against the same six.
 *
 * cuBLAS as in include/pkb_tp.cuh (the reference's math: fp32 compute, no
 * TF32, no reduced-precision reduction, a workspace). Knobs: THREADS
 * (threads a block, default 256), MAX_BLOCKS (default 64, at most
 * PKB_TP_BLOCKS: the barrier's slots). Compiled, not run.
 */
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_tp.cuh"

PKB_SOLUTION;

#ifndef THREADS
#define THREADS 256
#endif
#ifndef MAX_BLOCKS
#define MAX_BLOCKS PKB_TP_BLOCKS
#endif

struct state {
	struct pkb_tp tp;       /* first (pkb_tp_new): cuBLAS, one chunk */
	pkb_symm land;          /* two halves of (Ml, H): where the peers push */
	void *x;                /* X (Ml, H), what GEMM 1 reads */
	void *h;                /* h (Ml, F), then a = silu(h) in place */
	uint32_t *calls;        /* per block of gather_rows: its call count */
	int blocks;             /* gather_rows' grid, the same on every rank */
	size_t unit;            /* its store width: 16, 8, 4 or 2 bytes */
};

/* units [*lo, *hi) of part i of n units cut in `parts` */
__device__ __forceinline__ void cut(int64_t n, int parts, int i, int64_t *lo, int64_t *hi)
{
	*lo = n * i / parts;
	*hi = n * (i + 1) / parts;
}

/* Units of U: a slice row (Hl elements) is hu units, an X row w*hu. Item t
 * of an (Ml, Hl) block is row t / hu, unit t % hu. `half` = units in one
 * half of `land`. */
template <typename U>
__global__ void __launch_bounds__(THREADS)
gather_rows(pkb_dev_comm comm, const U *xl, U *const *land, U *x, int64_t ml, int64_t hu,
	    size_t half, uint32_t *calls)
{
	int w = comm.world, r = comm.rank;
	int64_t row = hu * w, b0, b1;
	size_t off = pkb_call_half(calls, half);

	cut(ml * hu, gridDim.x, blockIdx.x, &b0, &b1);
	for (int j = 0; j < w; j++) {
		int d = (r + j) % w;
		const U *src = xl + (size_t)d * ml * hu;
		U *dst = land[d] + off + r * hu;
		for (int64_t t = b0 + threadIdx.x; t < b1; t += blockDim.x)
			dst[t / hu * row + t % hu] = src[t];
	}
	/* every rank's units of this block are in this call's half here */
	if (!pkb_barrier_block(comm, PKB_TP_SLOT0 + blockIdx.x))
		return;
	const U *mine = land[r] + off;
	for (int p = 0; p < w; p++)
		for (int64_t t = b0 + threadIdx.x; t < b1; t += blockDim.x) {
			int64_t i = t / hu * row + p * hu + t % hu;
			x[i] = mine[i];
		}
}

/* torch's F.silu on the rounded h: fp32, rounded once (the reference's) */
template <typename T>
__global__ void silu_inplace(T *h, int64_t n)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x) {
		float v = pkb_to_float(h[i]);
		h[i] = pkb_from_float<T>(v / (1.0f + expf(-v)));
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	const pkb_tensor *xl = &ctx->in[0], *w1 = &ctx->in[1], *y = &ctx->out[0];
	int64_t ml = y->shape[0], hl = xl->shape[1], f = w1->shape[1];
	size_t e = pkb_dtype_size(xl->dtype), seg = (size_t)hl * e;
	struct state *s = (struct state *)pkb_tp_new(ctx, sizeof *s, ml, 0, 1, 1);

	if (!s)
		return 1;
	s->unit = seg % 16 == 0 ? 16 : seg % 8 == 0 ? 8 : seg % 4 == 0 ? 4 : 2;
	int64_t items = ml * (int64_t)(seg / s->unit);
	s->blocks = (int)((items + THREADS - 1) / THREADS);
	s->blocks = s->blocks < 1 ? 1 : s->blocks > MAX_BLOCKS ? MAX_BLOCKS : s->blocks;
	if (MAX_BLOCKS > PKB_TP_BLOCKS ||
	    pkb_tp_malloc(ctx, &s->tp, &s->x, y->bytes) ||
	    pkb_tp_malloc(ctx, &s->tp, &s->h, (size_t)(ml * f) * e) ||
	    pkb_tp_malloc(ctx, &s->tp, (void **)&s->calls, s->blocks * sizeof(uint32_t)))
		return 1;
	PKB_TP_CK(ctx, cudaMemset(s->calls, 0, s->blocks * sizeof(uint32_t)));
	return ctx->svc->symm_alloc(ctx, 2 * y->bytes, &s->land);
}

/* X: row block `rank` of x_full, from every rank */
static int gather(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	const pkb_tensor *xl = &ctx->in[0];
	int64_t ml = ctx->out[0].shape[0];
	int64_t hu = xl->shape[1] * (int64_t)pkb_dtype_size(xl->dtype) / (int64_t)s->unit;
	size_t half = ctx->out[0].bytes / s->unit;

#define GATHER(U) gather_rows<U><<<s->blocks, THREADS, 0, st>>>(ctx->dev, \
		(const U *)xl->data, (U *const *)s->land.peers_dev, (U *)s->x, ml, hu, half, s->calls)
	switch (s->unit) {
	case 16: GATHER(int4); break;
	case 8: GATHER(int2); break;
	case 4: GATHER(int); break;
	default: GATHER(short); break;
	}
#undef GATHER
	PKB_TP_CK(ctx, cudaGetLastError());
	return 0;
}

/* h = X @ W1; a = silu(h); y = a @ W2 (row-major C = A B is the
 * column-major C^T = B^T A^T: operands swapped, both op N) */
static int mlp(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	const pkb_tensor *w1 = &ctx->in[1], *w2 = &ctx->in[2];
	int64_t ml = ctx->out[0].shape[0], hd = w1->shape[0], f = w1->shape[1], n = ml * f;
	int blocks = (int)((n + 255) / 256);

	blocks = blocks > 1024 ? 1024 : blocks;
	if (pkb_tp_blas_on(ctx, &s->tp) ||
	    pkb_tp_gemm(ctx, &s->tp, CUBLAS_OP_N, f, ml, hd, w1->data, f, s->x, hd, s->h, f))
		return 1;
	switch (w1->dtype) {
	case PKB_BF16: silu_inplace<<<blocks, 256, 0, st>>>((__nv_bfloat16 *)s->h, n); break;
	case PKB_FP16: silu_inplace<<<blocks, 256, 0, st>>>((__half *)s->h, n); break;
	default: silu_inplace<<<blocks, 256, 0, st>>>((float *)s->h, n); break;
	}
	PKB_TP_CK(ctx, cudaGetLastError());
	return pkb_tp_gemm(ctx, &s->tp, CUBLAS_OP_N, hd, ml, f, w2->data, hd, s->h, f,
			   ctx->out[0].data, hd);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;

	return gather(ctx, s) || mlp(ctx, s);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_tp_delete(ctx);
}
