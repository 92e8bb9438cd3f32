/*
 * 014_gemm_allgather, candidate: gather the peers' operands instead of their
 * products, by the copy engines, and compute every column block here; the
 * own block first (no communication), each peer's rows as they land.
 *
 * The math. C = [C_0 | ... | C_{W-1}], C_p = A_p @ B_p (M, Nl), so rank r can
 * compute C_p itself from A_p (M, K) and B_p (K, Nl): the same GEMM the
 * owner runs (fp32 accumulation, one rounding; the tolerance takes another
 * accumulation order), written straight into its columns of C (ldc = W*Nl),
 * so there is no concatenation pass either.
 *
 * Traffic and FLOPs. From each peer K*(M + Nl) elements instead of M*Nl: at
 * M = N = 8192, bf16, W = 4, 30 MiB in per rank instead of 96 MiB, for W
 * times the FLOPs (4 x 17.2 GFLOP, ~100 us on an H100 at ~700 TFLOPS). README
 * "Sizes and traffic" names this trade; it wins where K*(M + Nl) < M*Nl and
 * the GEMMs hide the transfer, i.e. large M and N. At the default
 * M = N = 1024 it moves 3.75 MiB against 1.5 MiB: measure before using it there.
 *
 * Layout. Symmetric, per rank: AS = A (M, K), BS = B (K, Nl), copies of the
 * inputs (a peer cannot read the harness's input buffers). Local: A_all and
 * B_all, slot p = rank p's A and B as pulled. Chunk c = rows m0 .. m0+R-1.
 *   row-major C[m0:m0+R, pNl:(p+1)Nl] = A_p[m0:m0+R, :] @ B_p is the
 *   column-major (Nl x R, ld W*Nl, at C + m0*W*Nl + p*Nl) = B_p^T (Nl x K,
 *   ld Nl) * A_p^T rows chunk (K x R, ld K, at A_p + m0*K):
 *   cublasGemmEx(OP_N, OP_N, Nl, R, K, B_p ld Nl, A_p + m0*K ld K, ...).
 *
 * One call, on ctx->stream (main) and W-1 copy streams (pull[j-1] pulls from
 * rank + j):
 *   main:   copy A, B into AS, BS; barrier S0; fork; GEMM of the own block
 *           from the inputs themselves (it waits for nothing)
 *   pull j: copy peer p's BS into B_all[p], then AS's row chunks into A_all[p],
 *           recording landed[j][c] after chunk c
 *   main:   for each chunk c, for each peer: wait landed[j][c]; GEMM (p, c)
 *   pull 0: wait every pull stream's last copy; barrier S1; record end
 *   main:   wait end
 *
 * Ordering (correctness): a peer's AS and BS are read after S0, which it
 * reaches after writing them (same stream); GEMM (p, c) waits for the event
 * after B_p and A_p's chunk c (one stream, in that order); the next call
 * rewrites AS and BS after its join behind S1, which every rank reaches after
 * all its pulls of this call; the next call's pulls into A_all and B_all wait
 * for its S0, behind this call's GEMMs on main. S0 and S1 are each one
 * one-block kernel per call, in the same order on every rank.
 *
 * Knobs: NCHUNK (row chunks of each peer's A, default 4), MIN_ROWS (no chunk
 * smaller, default 256).
 */
#include <stdlib.h>
#include <stdint.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#ifndef NCHUNK
#define NCHUNK 4
#endif
#ifndef MIN_ROWS
#define MIN_ROWS 256
#endif
#define MAX_WORLD 32
#define SLOT_START 0
#define SLOT_END 1
#define WORKSPACE (32u << 20)

#define CK(ctx, call) do { if ((call) != 0) { \
	(ctx)->svc->log((ctx), "%s:%d %s failed", __FILE__, __LINE__, #call); \
	return 1; } } while (0)

struct state {
	cublasHandle_t blas;
	void *workspace;
	pkb_symm as;                    /* A (M, K) */
	pkb_symm bs;                    /* B (K, Nl) */
	void *a_all, *b_all;            /* slot p: rank p's A, B (local) */
	int64_t rows;                   /* rows of A per chunk */
	int nchunk;
	cudaStream_t pull[MAX_WORLD];   /* [j-1]: pulls from rank + j */
	cudaEvent_t start, end, done[MAX_WORLD];
	cudaEvent_t *landed;            /* [(j-1) * nchunk + c] */
};

/* Every rank's block 0 meets here (one block, 32 threads >= W). */
__global__ void meet(pkb_dev_comm comm, int slot)
{
	pkb_barrier_block(comm, slot);
}

static cudaDataType blas_type(pkb_dtype t)
{
	return t == PKB_BF16 ? CUDA_R_16BF : t == PKB_FP16 ? CUDA_R_16F : CUDA_R_32F;
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	pkb_dtype t = ctx->in[0].dtype;
	int w = ctx->world;
	if ((t != PKB_BF16 && t != PKB_FP16 && t != PKB_FP32) || w > MAX_WORLD)
		return 1;
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	int64_t m = ctx->in[0].shape[0];
	int64_t rows = (m + NCHUNK - 1) / NCHUNK;
	rows = rows < MIN_ROWS ? MIN_ROWS : (rows + 7) / 8 * 8;
	s->rows = rows;
	s->nchunk = (int)((m + rows - 1) / rows);
	s->landed = (cudaEvent_t *)calloc((size_t)w * s->nchunk, sizeof *s->landed);
	if (!s->landed)
		return 1;
	CK(ctx, cublasCreate(&s->blas));
	CK(ctx, cublasSetMathMode(s->blas, (cublasMath_t)(CUBLAS_DEFAULT_MATH |
		CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
	CK(ctx, cudaMalloc(&s->workspace, WORKSPACE));
	CK(ctx, cudaMalloc(&s->a_all, ctx->in[0].bytes * w));
	CK(ctx, cudaMalloc(&s->b_all, ctx->in[1].bytes * w));
	CK(ctx, cudaEventCreateWithFlags(&s->start, cudaEventDisableTiming));
	CK(ctx, cudaEventCreateWithFlags(&s->end, cudaEventDisableTiming));
	for (int j = 1; j < w; j++) {
		CK(ctx, cudaStreamCreateWithFlags(&s->pull[j - 1], cudaStreamNonBlocking));
		CK(ctx, cudaEventCreateWithFlags(&s->done[j - 1], cudaEventDisableTiming));
		for (int c = 0; c < s->nchunk; c++)
			CK(ctx, cudaEventCreateWithFlags(&s->landed[(j - 1) * s->nchunk + c],
							 cudaEventDisableTiming));
	}
	CK(ctx, ctx->svc->symm_alloc(ctx, ctx->in[0].bytes, &s->as));
	return ctx->svc->symm_alloc(ctx, ctx->in[1].bytes, &s->bs);
}

/* This rank's operands into AS and BS, then every rank has its own. */
static int stage_and_meet(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	const pkb_tensor *a = &ctx->in[0], *b = &ctx->in[1];

	CK(ctx, cudaMemcpyAsync(s->as.local, a->data, a->bytes, cudaMemcpyDeviceToDevice, st));
	CK(ctx, cudaMemcpyAsync(s->bs.local, b->data, b->bytes, cudaMemcpyDeviceToDevice, st));
	meet<<<1, 32, 0, st>>>(ctx->dev, SLOT_START);
	CK(ctx, cudaGetLastError());
	return 0;
}

/* Fork: pull[j-1] copies rank (rank + j)'s B, then its A chunk by chunk. */
static int pull_chunks(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	const pkb_tensor *a = &ctx->in[0], *b = &ctx->in[1];
	int64_t m = a->shape[0], k = a->shape[1];
	size_t e = pkb_dtype_size(a->dtype);

	CK(ctx, cudaEventRecord(s->start, st));
	for (int j = 1; j < ctx->world; j++) {
		int p = (ctx->rank + j) % ctx->world;
		cudaStream_t ps = s->pull[j - 1];
		CK(ctx, cudaStreamWaitEvent(ps, s->start, 0));
		CK(ctx, cudaMemcpyAsync((char *)s->b_all + (size_t)p * b->bytes, s->bs.peers[p],
					b->bytes, cudaMemcpyDeviceToDevice, ps));
		for (int c = 0; c < s->nchunk; c++) {
			int64_t m0 = c * s->rows, r = m - m0 < s->rows ? m - m0 : s->rows;
			CK(ctx, cudaMemcpyAsync((char *)s->a_all + (size_t)p * a->bytes +
						(size_t)m0 * k * e,
						(const char *)s->as.peers[p] + (size_t)m0 * k * e,
						(size_t)r * k * e, cudaMemcpyDeviceToDevice, ps));
			CK(ctx, cudaEventRecord(s->landed[(j - 1) * s->nchunk + c], ps));
		}
	}
	return 0;
}

/* C[m0:m0+r, p*Nl:(p+1)*Nl] = A_p[m0:m0+r, :] @ B_p on main. */
static int gemm_block(pkb_ctx *ctx, struct state *s, const void *ap, const void *bp,
		      int p, int64_t m0, int64_t r)
{
	const pkb_tensor *a = &ctx->in[0], *b = &ctx->in[1];
	int64_t k = a->shape[1], nl = b->shape[1], ldc = nl * ctx->world;
	size_t e = pkb_dtype_size(a->dtype);
	cudaDataType ct = blas_type(a->dtype);
	const float one = 1.0f, zero = 0.0f;

	CK(ctx, cublasGemmEx(s->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)nl, (int)r, (int)k,
			     &one, bp, ct, (int)nl,
			     (const char *)ap + (size_t)m0 * k * e, ct, (int)k,
			     &zero, (char *)ctx->out[0].data + ((size_t)m0 * ldc + (size_t)p * nl) * e,
			     ct, (int)ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
	return 0;
}

/* On main: the own block at once, then each peer's chunk c once it landed. */
static int gemm_chunks(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	const pkb_tensor *a = &ctx->in[0], *b = &ctx->in[1];
	int64_t m = a->shape[0];

	CK(ctx, cublasSetStream(s->blas, st));
	CK(ctx, cublasSetWorkspace(s->blas, s->workspace, WORKSPACE));   /* SetStream drops it */
	if (gemm_block(ctx, s, a->data, b->data, ctx->rank, 0, m))
		return 1;
	for (int c = 0; c < s->nchunk; c++) {
		int64_t m0 = c * s->rows, r = m - m0 < s->rows ? m - m0 : s->rows;
		for (int j = 1; j < ctx->world; j++) {
			int p = (ctx->rank + j) % ctx->world;
			CK(ctx, cudaStreamWaitEvent(st, s->landed[(j - 1) * s->nchunk + c], 0));
			if (gemm_block(ctx, s, (const char *)s->a_all + (size_t)p * a->bytes,
				       (const char *)s->b_all + (size_t)p * b->bytes, p, m0, r))
				return 1;
		}
	}
	return 0;
}

/* Join: once every pull of this call is done, meet (peers may then reuse
 * their AS and BS), and main waits for that. */
static int meet_and_join(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	if (ctx->world < 2)
		return 0;
	cudaStream_t last = s->pull[0];
	for (int j = 2; j < ctx->world; j++) {
		CK(ctx, cudaEventRecord(s->done[j - 1], s->pull[j - 1]));
		CK(ctx, cudaStreamWaitEvent(last, s->done[j - 1], 0));
	}
	meet<<<1, 32, 0, last>>>(ctx->dev, SLOT_END);
	CK(ctx, cudaGetLastError());
	CK(ctx, cudaEventRecord(s->end, last));
	CK(ctx, cudaStreamWaitEvent(st, s->end, 0));
	return 0;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;

	if (stage_and_meet(ctx, s))
		return 1;
	if (pull_chunks(ctx, s))
		return 1;
	if (gemm_chunks(ctx, s))
		return 1;
	return meet_and_join(ctx, s);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (!s)
		return 0;
	cudaDeviceSynchronize();
	for (int j = 1; j < ctx->world && j <= MAX_WORLD; j++) {
		if (s->pull[j - 1])
			cudaStreamDestroy(s->pull[j - 1]);
		if (s->done[j - 1])
			cudaEventDestroy(s->done[j - 1]);
		for (int c = 0; s->landed && c < s->nchunk; c++)
			if (s->landed[(j - 1) * s->nchunk + c])
				cudaEventDestroy(s->landed[(j - 1) * s->nchunk + c]);
	}
	if (s->start)
		cudaEventDestroy(s->start);
	if (s->end)
		cudaEventDestroy(s->end);
	if (s->blas)
		cublasDestroy(s->blas);
	cudaFree(s->workspace);
	cudaFree(s->a_all);
	cudaFree(s->b_all);
	free(s->landed);
	free(s);
	ctx->user = NULL;
	return 0;
}
