/*
 * 012_allgather_gemm, candidate: all-gather of the transposed shards by the
 * copy engines, chunk by chunk, each chunk's GEMM launched as soon as it has
 * landed (async-TP / Flux "decomposition" on streams). 012 has 011's inputs
 * and output, so this is 011's ok_ce_pipeline.cu: gathering A^T instead of A
 * replaces the reference's concatenation pass over all of A (M*K elements)
 * by a transpose of the local shard (M*K/W), and makes a chunk of A's rows a
 * block of wide rows that the copy engine moves well.
 *
 * Layout. Every rank owns a symmetric buffer AT = A^T (K, M), row-major: row
 * block w (rows w*Kl .. (w+1)*Kl - 1, Kl = K/W) is rank w's A_local^T. A row
 * chunk A[m0 : m0+R, :] of A is the column block AT[:, m0 : m0+R]: Kl rows of
 * R contiguous elements in each row block, which one cudaMemcpy2DAsync per
 * peer moves (rows of R*e bytes, 2 KiB at R = 1024 bf16: wide enough for the
 * copy engine, where the untransposed (M, K) layout would need rows of Kl*e =
 * 256 bytes). Chunk c of C is then one GEMM with all of K, rounded once as
 * the reference's:
 *   row-major C[m0:m0+R, :] = A[m0:m0+R, :] @ B is the column-major
 *   C^T (N x R, ld N, at C + m0*N) = B^T (N x K, ld N) * G^T, where
 *   G = AT as the column-major M x K matrix with ld M, starting at row m0:
 *   cublasGemmEx(OP_N, OP_T, N, R, K, B ld N, AT + m0 ld M, C + m0*N ld N).
 *
 * One call, on ctx->stream (main) and W-1 copy streams (pull[j-1] pulls from
 * rank + j, so the W-1 NVLink links carry one peer each):
 *   main:   transpose A_local into AT's row block `rank`; barrier S0; fork
 *   pull j: for each chunk c: copy peer p's block AT[pKl.., m0..] into the
 *           same place of AT here; record landed[j][c]
 *   main:   for each chunk c: wait landed[*][c]; GEMM chunk c
 *   pull 0: wait every pull stream's last copy; barrier S1; record end
 *   main:   wait end (the join: nothing of this call runs after pkb_run's work)
 *
 * Why faster than the reference (NCCL all-gather, then the GEMM): the GEMM of
 * chunk c runs while chunk c+1 is on the wire, so only the first chunk's
 * transfer, the transpose and one barrier are exposed; the copies use the copy
 * engines, not SMs, so the GEMM keeps every SM; and there is no concatenation
 * pass. At M = N = 8192, bf16, W = 4: 6 MiB in (2 MiB per link, ~10 us at
 * ~200 GB/s) under a 68.7 GFLOP GEMM (~100 us); with 4 chunks about 3 us of
 * transfer stays exposed.
 *
 * Ordering (correctness):
 *   - a peer's block is read only after barrier S0 of this call, which every
 *     rank reaches after its transpose of this call (same stream);
 *   - GEMM chunk c waits for the events after the copies of chunk c from
 *     every peer (stream order: the copy engine's writes are complete when
 *     the event fires);
 *   - the next call's transpose overwrites AT's block `rank`, which peers
 *     read: it runs after this call's join, i.e. after barrier S1, which every
 *     rank reaches only after all its pulls of this call completed;
 *   - this rank's pulls of the next call overwrite blocks that this call's
 *     GEMMs read: they wait for the next call's S0, behind those GEMMs on main.
 * Barrier slots S0 and S1 are each used by one one-block kernel at a time, in
 * the same order on every rank (each call: one S0, one S1).
 *
 * Knobs: NCHUNK (chunks of A's rows, default 4), MIN_ROWS (no chunk smaller,
 * default 256: a GEMM of fewer rows underfills the GPU).
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
	pkb_symm at;                    /* A^T (K, M); block w = rank w's shard */
	int64_t rows;                   /* rows of A per chunk */
	int nchunk;
	cudaStream_t pull[MAX_WORLD];   /* [j-1]: pulls from rank + j */
	cudaEvent_t start, end, done[MAX_WORLD];
	cudaEvent_t *landed;            /* [(j-1) * nchunk + c] */
};

/* out (cols, rows) = in (rows, cols)^T, 32x32 tiles through shared memory
 * (the reference's kernel): both the reads and the writes are coalesced. */
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
	int64_t m = ctx->in[0].shape[0];
	int64_t rows = (m + NCHUNK - 1) / NCHUNK;
	rows = rows < MIN_ROWS ? MIN_ROWS : (rows + 7) / 8 * 8;   /* 16-byte chunk starts */
	s->rows = rows;
	s->nchunk = (int)((m + rows - 1) / rows);
	s->landed = (cudaEvent_t *)calloc((size_t)w * s->nchunk, sizeof *s->landed);
	if (!s->landed)
		return 1;
	CK(ctx, cublasCreate(&s->blas));
	CK(ctx, cublasSetMathMode(s->blas, (cublasMath_t)(CUBLAS_DEFAULT_MATH |
		CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
	CK(ctx, cudaMalloc(&s->workspace, WORKSPACE));
	CK(ctx, cudaEventCreateWithFlags(&s->start, cudaEventDisableTiming));
	CK(ctx, cudaEventCreateWithFlags(&s->end, cudaEventDisableTiming));
	for (int j = 1; j < w; j++) {
		CK(ctx, cudaStreamCreateWithFlags(&s->pull[j - 1], cudaStreamNonBlocking));
		CK(ctx, cudaEventCreateWithFlags(&s->done[j - 1], cudaEventDisableTiming));
		for (int c = 0; c < s->nchunk; c++)
			CK(ctx, cudaEventCreateWithFlags(&s->landed[(j - 1) * s->nchunk + c],
							 cudaEventDisableTiming));
	}
	return ctx->svc->symm_alloc(ctx, ctx->in[0].bytes * w, &s->at);
}

/* This rank's shard into its block of AT, then every rank has its block. */
static int stage_and_meet(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	const pkb_tensor *a = &ctx->in[0];
	int64_t m = a->shape[0], kl = a->shape[1];
	size_t e = pkb_dtype_size(a->dtype);
	void *mine = (char *)s->at.local + (size_t)ctx->rank * kl * m * e;
	dim3 tb(32, 8), grid((unsigned)((m + 31) / 32), (unsigned)((kl + 31) / 32));

	if (e == 2)
		transpose<uint16_t><<<grid, tb, 0, st>>>((const uint16_t *)a->data,
							 (uint16_t *)mine, m, kl);
	else
		transpose<uint32_t><<<grid, tb, 0, st>>>((const uint32_t *)a->data,
							 (uint32_t *)mine, m, kl);
	meet<<<1, 32, 0, st>>>(ctx->dev, SLOT_START);
	CK(ctx, cudaGetLastError());
	return 0;
}

/* Fork: pull[j-1] copies rank (rank + j)'s block, chunk by chunk. */
static int pull_chunks(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	const pkb_tensor *a = &ctx->in[0];
	int64_t m = a->shape[0], kl = a->shape[1];
	size_t e = pkb_dtype_size(a->dtype);

	CK(ctx, cudaEventRecord(s->start, st));
	for (int j = 1; j < ctx->world; j++) {
		int p = (ctx->rank + j) % ctx->world;
		size_t block = (size_t)p * kl * m * e;
		cudaStream_t ps = s->pull[j - 1];
		CK(ctx, cudaStreamWaitEvent(ps, s->start, 0));
		for (int c = 0; c < s->nchunk; c++) {
			int64_t m0 = c * s->rows, r = m - m0 < s->rows ? m - m0 : s->rows;
			size_t off = block + (size_t)m0 * e;
			CK(ctx, cudaMemcpy2DAsync((char *)s->at.local + off, (size_t)m * e,
						  (const char *)s->at.peers[p] + off, (size_t)m * e,
						  (size_t)r * e, (size_t)kl,
						  cudaMemcpyDeviceToDevice, ps));
			CK(ctx, cudaEventRecord(s->landed[(j - 1) * s->nchunk + c], ps));
		}
	}
	return 0;
}

/* On main: chunk c's GEMM once chunk c has landed from every peer. */
static int gemm_chunks(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	const pkb_tensor *a = &ctx->in[0], *b = &ctx->in[1];
	int64_t m = a->shape[0], k = b->shape[0], n = b->shape[1];
	size_t e = pkb_dtype_size(a->dtype);
	cudaDataType ct = blas_type(a->dtype);
	const float one = 1.0f, zero = 0.0f;

	CK(ctx, cublasSetStream(s->blas, st));
	CK(ctx, cublasSetWorkspace(s->blas, s->workspace, WORKSPACE));   /* SetStream drops it */
	for (int c = 0; c < s->nchunk; c++) {
		int64_t m0 = c * s->rows, r = m - m0 < s->rows ? m - m0 : s->rows;
		for (int j = 1; j < ctx->world; j++)
			CK(ctx, cudaStreamWaitEvent(st, s->landed[(j - 1) * s->nchunk + c], 0));
		CK(ctx, cublasGemmEx(s->blas, CUBLAS_OP_N, CUBLAS_OP_T, (int)n, (int)r, (int)k,
				     &one, b->data, ct, (int)n,
				     (const char *)s->at.local + (size_t)m0 * e, ct, (int)m,
				     &zero, (char *)ctx->out[0].data + (size_t)m0 * n * e, ct, (int)n,
				     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
	}
	return 0;
}

/* Join: once every pull of this call is done, meet (peers may then reuse
 * their blocks), and main waits for that. */
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
	free(s->landed);
	free(s);
	ctx->user = NULL;
	return 0;
}
