/*
 * 016_gemm_reducescatter, candidate: gather the operands of this rank's rows
 * instead of reducing partials, by the copy engines, chunk by chunk, each
 * chunk's GEMM launched as soon as it has landed.
 *
 * The math. Rank r returns rows R_r = r*Ml .. (r+1)*Ml - 1 (Ml = M/W) of
 * sum_w A_w @ B_w = [A_0[R_r] | ... | A_{W-1}[R_r]] (Ml, K) @ [B_0; ...; B_{W-1}]
 * (K, N), K = W*Kl: one GEMM with all of K, accumulated in fp32 and rounded
 * once (the tolerance allows any order of the sum; README "Sizes and
 * traffic" names this as the bound `pkb roofline 016` uses). Same FLOPs per
 * rank as the reference (2*Ml*K*N = 2*M*Kl*N).
 *
 * Traffic. From each peer: its A rows R_r (Ml*Kl) and its B (Kl*N), against
 * the partials' Ml*N. At M = N = 8192, bf16, W = 4: 7.5 MiB in per rank
 * instead of 96 MiB, and no (M, N) partial written to and read from HBM
 * (128 MiB each way). At the default 1024 x 1024: 960 KiB against 1.5 MiB.
 *
 * Layout. Symmetric, per rank: AS = A_local^T (Kl, M) (a transpose, so that
 * a peer's rows R_r are a block of Kl rows of Ml contiguous elements, one 2D
 * copy with wide rows) and BC = B (K, N), row block w = rank w's B_local
 * (this rank's block copied from the input, the peers' blocks pulled into
 * the same place). Local: ATC = A_cat^T (K, Ml), row block w = A_w[R_r]^T.
 * Chunk c of the output, columns n0 .. n0+Nc-1:
 *   row-major C[:, n0:n0+Nc] = A_cat @ BC[:, n0:n0+Nc] is the column-major
 *   C^T rows n0.. (Nc x Ml, ld N, at C + n0) = BC^T rows n0.. (Nc x K, ld N,
 *   at BC + n0) * ATC^T, ATC being the column-major Ml x K matrix with ld Ml:
 *   cublasGemmEx(OP_N, OP_T, Nc, Ml, K, BC + n0 ld N, ATC ld Ml, C + n0 ld N).
 *
 * One call, on ctx->stream (main) and W-1 copy streams (pull[j-1] pulls from
 * rank + j):
 *   main:   transpose A_local into AS; copy B_local into BC's block `rank`;
 *           copy AS[:, R_r] into ATC's block `rank`; barrier S0; fork
 *   pull j: copy peer p's AS[:, R_r] into ATC's block p; then for each chunk
 *           c, peer p's BC[pKl.., n0..] into the same place here; record
 *           landed[j][c]
 *   main:   for each chunk c: wait landed[*][c]; GEMM chunk c
 *   pull 0: wait every pull stream's last copy; barrier S1; record end
 *   main:   wait end
 *
 * Ordering (correctness): peers' AS and BC blocks are read after S0, which
 * each rank reaches after writing them (same stream); GEMM c waits for every
 * copy it reads (the A parts come first on each pull stream); the next call
 * rewrites AS and BC's block `rank` after its join behind S1, which every rank
 * reaches after all its pulls of this call; the next call's pulls into ATC and
 * BC wait for its S0, behind this call's GEMMs on main. S0 and S1 are each one
 * one-block kernel per call, in the same order on every rank.
 *
 * Knobs: NCHUNK (chunks of N, default 4), MIN_COLS (no chunk narrower,
 * default 256).
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
#ifndef MIN_COLS
#define MIN_COLS 256
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
	pkb_symm as;                    /* A_local^T (Kl, M) */
	pkb_symm bc;                    /* B (K, N); block w = rank w's B_local */
	void *atc;                      /* A_cat^T (K, Ml), local */
	int64_t cols;                   /* output columns per chunk */
	int nchunk;
	cudaStream_t pull[MAX_WORLD];   /* [j-1]: pulls from rank + j */
	cudaEvent_t start, end, done[MAX_WORLD];
	cudaEvent_t *landed;            /* [(j-1) * nchunk + c] */
};

/* out (cols, rows) = in (rows, cols)^T, 32x32 tiles through shared memory. */
template <typename E>
__global__ void transpose(const E *in, E *out, int64_t rows, int64_t cols)
{
	__shared__ E tile[32][33];
	int64_t r0 = (int64_t)blockIdx.x * 32, c0 = (int64_t)blockIdx.y * 32;
	for (int y = threadIdx.y; y < 32; y += blockDim.y) {
		int64_t r = r0 + y, c = c0 + threadIdx.x;
		if (r < rows && c < cols)
			tile[y][threadIdx.x] = in[r * cols + c];
	}
	__syncthreads();
	for (int y = threadIdx.y; y < 32; y += blockDim.y) {
		int64_t c = c0 + y, r = r0 + threadIdx.x;
		if (r < rows && c < cols)
			out[c * rows + r] = tile[threadIdx.x][y];
	}
}

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
	int64_t n = ctx->in[1].shape[1];
	int64_t cols = (n + NCHUNK - 1) / NCHUNK;
	cols = cols < MIN_COLS ? MIN_COLS : (cols + 7) / 8 * 8;   /* 16-byte chunk starts */
	s->cols = cols;
	s->nchunk = (int)((n + cols - 1) / cols);
	s->landed = (cudaEvent_t *)calloc((size_t)w * s->nchunk, sizeof *s->landed);
	if (!s->landed)
		return 1;
	CK(ctx, cublasCreate(&s->blas));
	CK(ctx, cublasSetMathMode(s->blas, (cublasMath_t)(CUBLAS_DEFAULT_MATH |
		CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
	CK(ctx, cudaMalloc(&s->workspace, WORKSPACE));
	/* A_cat^T (K, Ml): W * Kl * M/W = the elements of A_local */
	CK(ctx, cudaMalloc(&s->atc, ctx->in[0].bytes));
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
	return ctx->svc->symm_alloc(ctx, ctx->in[1].bytes * w, &s->bc);
}

/* Copy rank p's AS[:, R_r] (Kl rows of Ml elements, pitch M) into ATC's
 * row block p (pitch Ml). */
static int copy_a_part(pkb_ctx *ctx, struct state *s, int p, cudaStream_t st)
{
	const pkb_tensor *a = &ctx->in[0];
	int64_t m = a->shape[0], kl = a->shape[1], ml = m / ctx->world;
	size_t e = pkb_dtype_size(a->dtype);

	CK(ctx, cudaMemcpy2DAsync((char *)s->atc + (size_t)p * kl * ml * e, (size_t)ml * e,
				  (const char *)s->as.peers[p] + (size_t)ctx->rank * ml * e,
				  (size_t)m * e, (size_t)ml * e, (size_t)kl,
				  cudaMemcpyDeviceToDevice, st));
	return 0;
}

/* This rank's operands into AS, BC and ATC, then every rank has its own. */
static int stage_and_meet(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	const pkb_tensor *a = &ctx->in[0], *b = &ctx->in[1];
	int64_t m = a->shape[0], kl = a->shape[1];
	size_t e = pkb_dtype_size(a->dtype);
	dim3 tb(32, 8), grid((unsigned)((m + 31) / 32), (unsigned)((kl + 31) / 32));

	if (e == 2)
		transpose<uint16_t><<<grid, tb, 0, st>>>((const uint16_t *)a->data,
							 (uint16_t *)s->as.local, m, kl);
	else
		transpose<uint32_t><<<grid, tb, 0, st>>>((const uint32_t *)a->data,
							 (uint32_t *)s->as.local, m, kl);
	CK(ctx, cudaGetLastError());
	CK(ctx, cudaMemcpyAsync((char *)s->bc.local + (size_t)ctx->rank * b->bytes, b->data,
				b->bytes, cudaMemcpyDeviceToDevice, st));
	if (copy_a_part(ctx, s, ctx->rank, st))
		return 1;
	meet<<<1, 32, 0, st>>>(ctx->dev, SLOT_START);
	CK(ctx, cudaGetLastError());
	return 0;
}

/* Fork: pull[j-1] copies rank (rank + j)'s A part, then its B chunk by chunk. */
static int pull_chunks(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	const pkb_tensor *b = &ctx->in[1];
	int64_t kl = b->shape[0], n = b->shape[1];
	size_t e = pkb_dtype_size(b->dtype);

	CK(ctx, cudaEventRecord(s->start, st));
	for (int j = 1; j < ctx->world; j++) {
		int p = (ctx->rank + j) % ctx->world;
		cudaStream_t ps = s->pull[j - 1];
		CK(ctx, cudaStreamWaitEvent(ps, s->start, 0));
		if (copy_a_part(ctx, s, p, ps))
			return 1;
		for (int c = 0; c < s->nchunk; c++) {
			int64_t n0 = c * s->cols, nc = n - n0 < s->cols ? n - n0 : s->cols;
			size_t off = ((size_t)p * kl * n + n0) * e;
			CK(ctx, cudaMemcpy2DAsync((char *)s->bc.local + off, (size_t)n * e,
						  (const char *)s->bc.peers[p] + off, (size_t)n * e,
						  (size_t)nc * e, (size_t)kl,
						  cudaMemcpyDeviceToDevice, ps));
			CK(ctx, cudaEventRecord(s->landed[(j - 1) * s->nchunk + c], ps));
		}
	}
	return 0;
}

/* On main: chunk c's GEMM once chunk c (and the A parts) landed from every peer. */
static int gemm_chunks(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	const pkb_tensor *b = &ctx->in[1];
	int64_t n = b->shape[1], k = b->shape[0] * ctx->world, ml = ctx->out[0].shape[0];
	size_t e = pkb_dtype_size(b->dtype);
	cudaDataType ct = blas_type(b->dtype);
	const float one = 1.0f, zero = 0.0f;

	CK(ctx, cublasSetStream(s->blas, st));
	CK(ctx, cublasSetWorkspace(s->blas, s->workspace, WORKSPACE));   /* SetStream drops it */
	for (int c = 0; c < s->nchunk; c++) {
		int64_t n0 = c * s->cols, nc = n - n0 < s->cols ? n - n0 : s->cols;
		for (int j = 1; j < ctx->world; j++)
			CK(ctx, cudaStreamWaitEvent(st, s->landed[(j - 1) * s->nchunk + c], 0));
		CK(ctx, cublasGemmEx(s->blas, CUBLAS_OP_N, CUBLAS_OP_T, (int)nc, (int)ml, (int)k,
				     &one, (const char *)s->bc.local + (size_t)n0 * e, ct, (int)n,
				     s->atc, ct, (int)ml,
				     &zero, (char *)ctx->out[0].data + (size_t)n0 * e, ct, (int)n,
				     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
	}
	return 0;
}

/* Join: once every pull of this call is done, meet (peers may then reuse
 * their AS and BC), and main waits for that. */
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
	cudaFree(s->atc);
	free(s->landed);
	free(s);
	ctx->user = NULL;
	return 0;
}
