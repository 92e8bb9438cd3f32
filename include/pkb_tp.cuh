/*
 * pkb_tp.cuh -- tensor-parallel GEMMs whose operands arrive by the copy
 * engines while cuBLAS computes (async-TP / Flux "decomposition" on streams,
 * docs/TP_GEMM.md): the streams, events, barriers and cuBLAS state that 011
 * and 012 ok_ce_pipeline.cu, 013, 014 and 016 ok_operand_gather.cu (015
 * ok_push_once.cu: the cuBLAS set-up) share, and the
 * all-gather of A^T + chunked GEMM that is 011's and 012's whole algorithm
 * (the two problems have the same inputs and output).
 *
 * What it gives (include it after pkb_device.cuh):
 *   - struct pkb_tp: a cuBLAS handle and its workspace; one dimension cut in
 *     chunks (pkb_tp_init: `nchunk` wanted, none under `min` elements, each
 *     start a multiple of 8 elements, so 16-byte aligned); W-1 pull streams,
 *     pull[j-1] pulling from rank pkb_tp_peer(ctx, j) = (rank + j) % W, so a
 *     GPU's W-1 NVLink links carry one peer each; an event per (j, chunk);
 *   - pkb_tp_meet(ctx, st, slot): every rank's one-block barrier kernel
 *     meets every other's on stream st (PKB_TP_START before the pulls,
 *     PKB_TP_END after them: signal slots 0 and 1 are this header's, and
 *     2 .. 65 pkb_tp_pull's; a candidate's own start at PKB_TP_SLOT_FREE);
 *   - pkb_tp_fork, pkb_tp_landed, pkb_tp_wait / pkb_tp_wait_chunk,
 *     pkb_tp_join: the call's stream graph, below;
 *   - pkb_tp_blas_on (the handle on the main stream) and pkb_tp_gemm
 *     (cublasGemmEx) set up as the references of 011-016 use cuBLAS:
 *     CUBLAS_COMPUTE_32F, default math (no TF32), reduced-precision
 *     reduction disallowed, so every output element is one fp32-accumulated
 *     dot product rounded once;
 *   - pkb_tp_new / pkb_tp_delete: the candidate's state (its first member a
 *     struct pkb_tp) in ctx->user, and pkb_tp_malloc for its own buffers;
 *   - pkb_tp_transpose: out (cols, rows) = in (rows, cols)^T on a stream;
 *   - pkb_tp_ag_*: the A^T pipeline of 011 and 012, at the end.
 *
 * One call (main = ctx->stream; the candidate's pkb_run spells the order):
 *
 *   main:      stage this rank's operands into symmetric memory;
 *              pkb_tp_meet(START)
 *   pull[j-1]: pkb_tp_fork, then copies from peer pkb_tp_peer(ctx, j), and
 *              pkb_tp_landed(j, c) after those chunk c needs
 *   main:      per chunk: pkb_tp_wait(j, c) of every peer it reads; GEMM
 *   pull[0]:   pkb_tp_join: waits for every pull stream, pkb_tp_meet(END),
 *   main:      then waits for that (nothing of the call runs after pkb_run)
 *
 * The ordering contract:
 *   - a peer's staged operand is read only after START of this call, which
 *     the peer reaches after staging it (same stream);
 *   - a GEMM reads a chunk only after the event recorded behind its copies
 *     (stream order: a copy is complete when the event after it fires);
 *     pkb_tp_fork comes after the staging and START on main, and the waits
 *     after the fork, or they bind to the previous call's events;
 *   - the next call restages only after this call's join, behind END, which
 *     every rank reaches only after all its pulls of this call: nobody still
 *     reads the staging buffers;
 *   - the next call's pulls overwrite what this call's GEMMs read only after
 *     its START, behind those GEMMs on main;
 *   - START and END are one one-block kernel each per call, in the same order
 *     on every rank. Two barriers and not one with double-buffered staging:
 *     the copy engines take host addresses, and a half chosen by a host call
 *     counter would freeze in `--timing graph` (one graph, replayed). END
 *     runs on pull[0] while the last GEMM runs, so it is hidden unless that
 *     GEMM is short.
 * Every address is fixed at enqueue time and the barriers count on the
 * device, so a call can be captured in a CUDA graph and replayed.
 *
 * Errors: every helper logs file:line and the call (PKB_TP_CK) and returns
 * non-zero. pkb_tp_init refuses dtypes other than bf16, fp16 and fp32 (of
 * ctx->in[0], which every input shares) and W > PKB_TP_MAX_WORLD.
 */
#ifndef PKB_TP_CUH
#define PKB_TP_CUH

#include <stdlib.h>
#include <stdint.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include "pkb.h"
#include "pkb_device.cuh"

#define PKB_TP_MAX_WORLD 32          /* the barrier kernel's block size */
#define PKB_TP_START 0               /* signal slots of the two barriers */
#define PKB_TP_END 1
#define PKB_TP_WORKSPACE (32u << 20) /* cuBLAS workspace, bytes */
#define PKB_TP_SLOT0 2               /* slots of the multi-block kernels' barriers: */
#define PKB_TP_BLOCKS 64             /* PKB_TP_SLOT0 + blockIdx.x, this many at most */
#define PKB_TP_THREADS 512
#define PKB_TP_SLOT_FREE (PKB_TP_SLOT0 + PKB_TP_BLOCKS) /* the first signal slot the
					  header leaves to a candidate's own barriers */
#define PKB_TP_MEET_BEFORE 1         /* pkb_tp_pulls.meet */
#define PKB_TP_MEET_AFTER 2

#define PKB_TP_CK(ctx, call) do { if ((call) != 0) { \
	(ctx)->svc->log((ctx), "%s:%d %s failed", __FILE__, __LINE__, #call); \
	return 1; } } while (0)

struct pkb_tp {
	cublasHandle_t blas;
	void *workspace;
	cudaDataType type;                   /* of every operand */
	int64_t first;                       /* elements of chunk 0 (a head, or = chunk) */
	int64_t chunk;                       /* elements of every other chunk */
	int nchunk;
	int fused;                           /* the size rule's unchunked path: the call
						runs on main alone, and fork, landed,
						wait and join do nothing */
	cudaStream_t pull[PKB_TP_MAX_WORLD]; /* [j-1]: pulls from pkb_tp_peer(ctx, j) */
	cudaEvent_t start, end, done[PKB_TP_MAX_WORLD];
	cudaEvent_t *landed;                 /* [(j-1) * nchunk + c] */
	void *bufs[4];                       /* the candidate's, from pkb_tp_malloc */
	int nbufs;
};

/* ---- the skeleton -------------------------------------------------------- */

/* Every rank's block 0 meets here (one block, PKB_TP_MAX_WORLD threads >= W). */
__global__ void pkb_tp_barrier(pkb_dev_comm comm, int slot)
{
	pkb_barrier_block(comm, slot);
}

/* the rank that pull stream j-1 (1 <= j < W) pulls from */
static inline int pkb_tp_peer(const pkb_ctx *ctx, int j)
{
	return (ctx->rank + j) % ctx->world;
}

/* chunk c of a dimension of `total` elements: its start, and its length in *len */
static inline int64_t pkb_tp_span(const struct pkb_tp *tp, int c, int64_t total, int64_t *len)
{
	int64_t at = c == 0 ? 0 : tp->first + (c - 1) * tp->chunk;
	int64_t want = c == 0 ? tp->first : tp->chunk;
	*len = total - at < want ? total - at : want;
	return at;
}

/* a chunk length of at least `min`, a multiple of 8 elements (16-byte starts) */
static inline int64_t pkb_tp_round(int64_t len, int64_t min)
{
	return len < min ? min : (len + 7) / 8 * 8;
}

/* pkb_init: the handle, its workspace, the streams and events, and the cut of
 * a dimension of `total` elements into about `nchunk` chunks of `min` or
 * more. head > 0: chunk 0 is a head of about `head` elements, small so that
 * little transfer is exposed before the first GEMM, and the rest is cut into
 * nchunk - 1 chunks. nchunk <= 1: one chunk, and the call is `fused` (the
 * size rule's unchunked path, on main alone). */
static inline int pkb_tp_init(pkb_ctx *ctx, struct pkb_tp *tp, int64_t total, int64_t head,
			      int nchunk, int64_t min)
{
	pkb_dtype t = ctx->in[0].dtype;
	int w = ctx->world;
	if ((t != PKB_BF16 && t != PKB_FP16 && t != PKB_FP32) || w > PKB_TP_MAX_WORLD)
		return 1;
	tp->type = t == PKB_BF16 ? CUDA_R_16BF : t == PKB_FP16 ? CUDA_R_16F : CUDA_R_32F;
	if (nchunk <= 1) {
		tp->fused = 1;
		tp->first = tp->chunk = total;
		tp->nchunk = 1;
	} else if (head > 0 && pkb_tp_round(head, min) < total) {
		tp->first = pkb_tp_round(head, min);
		tp->chunk = pkb_tp_round((total - tp->first + nchunk - 2) / (nchunk - 1), min);
		tp->nchunk = 1 + (int)((total - tp->first + tp->chunk - 1) / tp->chunk);
	} else {
		tp->first = tp->chunk = pkb_tp_round((total + nchunk - 1) / nchunk, min);
		tp->nchunk = (int)((total + tp->chunk - 1) / tp->chunk);
	}
	tp->landed = (cudaEvent_t *)calloc((size_t)w * tp->nchunk, sizeof *tp->landed);
	if (!tp->landed)
		return 1;
	PKB_TP_CK(ctx, cublasCreate(&tp->blas));
	PKB_TP_CK(ctx, cublasSetMathMode(tp->blas, (cublasMath_t)(CUBLAS_DEFAULT_MATH |
		CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
	PKB_TP_CK(ctx, cudaMalloc(&tp->workspace, PKB_TP_WORKSPACE));
	PKB_TP_CK(ctx, cudaEventCreateWithFlags(&tp->start, cudaEventDisableTiming));
	PKB_TP_CK(ctx, cudaEventCreateWithFlags(&tp->end, cudaEventDisableTiming));
	for (int j = 1; j < w; j++) {
		PKB_TP_CK(ctx, cudaStreamCreateWithFlags(&tp->pull[j - 1], cudaStreamNonBlocking));
		PKB_TP_CK(ctx, cudaEventCreateWithFlags(&tp->done[j - 1], cudaEventDisableTiming));
		for (int c = 0; c < tp->nchunk; c++)
			PKB_TP_CK(ctx, cudaEventCreateWithFlags(&tp->landed[(j - 1) * tp->nchunk + c],
								cudaEventDisableTiming));
	}
	return 0;
}

/* pkb_fini: what pkb_tp_init made, after the device has finished */
static inline void pkb_tp_fini(pkb_ctx *ctx, struct pkb_tp *tp)
{
	cudaDeviceSynchronize();
	for (int j = 1; j < ctx->world && j <= PKB_TP_MAX_WORLD; j++) {
		if (tp->pull[j - 1])
			cudaStreamDestroy(tp->pull[j - 1]);
		if (tp->done[j - 1])
			cudaEventDestroy(tp->done[j - 1]);
		for (int c = 0; tp->landed && c < tp->nchunk; c++)
			if (tp->landed[(j - 1) * tp->nchunk + c])
				cudaEventDestroy(tp->landed[(j - 1) * tp->nchunk + c]);
	}
	if (tp->start)
		cudaEventDestroy(tp->start);
	if (tp->end)
		cudaEventDestroy(tp->end);
	if (tp->blas)
		cublasDestroy(tp->blas);
	cudaFree(tp->workspace);
	for (int i = 0; i < tp->nbufs; i++)
		cudaFree(tp->bufs[i]);
	free(tp->landed);
}

/* pkb_init: device memory of the candidate's own, freed by pkb_tp_fini */
static inline int pkb_tp_malloc(pkb_ctx *ctx, struct pkb_tp *tp, void **p, size_t bytes)
{
	if (tp->nbufs == (int)(sizeof tp->bufs / sizeof tp->bufs[0]))
		return 1;
	PKB_TP_CK(ctx, cudaMalloc(p, bytes));
	tp->bufs[tp->nbufs++] = *p;
	return 0;
}

/* pkb_init: ctx->user = a zeroed state of `bytes` whose first member is a
 * struct pkb_tp, set up by pkb_tp_init; NULL on failure (pkb_tp_delete still
 * frees what was made) */
static inline void *pkb_tp_new(pkb_ctx *ctx, size_t bytes, int64_t total, int64_t head,
			       int nchunk, int64_t min)
{
	void *s = calloc(1, bytes);
	ctx->user = s;
	return s && !pkb_tp_init(ctx, (struct pkb_tp *)s, total, head, nchunk, min) ? s : NULL;
}

/* pkb_fini: the state pkb_tp_new made, and all it holds */
static inline int pkb_tp_delete(pkb_ctx *ctx)
{
	if (!ctx->user)
		return 0;
	pkb_tp_fini(ctx, (struct pkb_tp *)ctx->user);
	free(ctx->user);
	ctx->user = NULL;
	return 0;
}

/* every rank's barrier at `slot` (PKB_TP_START or PKB_TP_END), on stream st */
static inline int pkb_tp_meet(pkb_ctx *ctx, cudaStream_t st, int slot)
{
	pkb_tp_barrier<<<1, PKB_TP_MAX_WORLD, 0, st>>>(ctx->dev, slot);
	PKB_TP_CK(ctx, cudaGetLastError());
	return 0;
}

/* the pull streams start behind what main holds now (the staging and START) */
static inline int pkb_tp_fork(pkb_ctx *ctx, struct pkb_tp *tp)
{
	if (tp->fused)
		return 0;
	PKB_TP_CK(ctx, cudaEventRecord(tp->start, (cudaStream_t)ctx->stream));
	for (int j = 1; j < ctx->world; j++)
		PKB_TP_CK(ctx, cudaStreamWaitEvent(tp->pull[j - 1], tp->start, 0));
	return 0;
}

/* on pull stream j-1: chunk c from peer pkb_tp_peer(ctx, j) is enqueued */
static inline int pkb_tp_landed(pkb_ctx *ctx, struct pkb_tp *tp, int j, int c)
{
	if (tp->fused)
		return 0;
	PKB_TP_CK(ctx, cudaEventRecord(tp->landed[(j - 1) * tp->nchunk + c], tp->pull[j - 1]));
	return 0;
}

/* main waits for chunk c from peer pkb_tp_peer(ctx, j) */
static inline int pkb_tp_wait(pkb_ctx *ctx, struct pkb_tp *tp, int j, int c)
{
	if (tp->fused)
		return 0;
	PKB_TP_CK(ctx, cudaStreamWaitEvent((cudaStream_t)ctx->stream,
					   tp->landed[(j - 1) * tp->nchunk + c], 0));
	return 0;
}

/* main waits for chunk c from every peer */
static inline int pkb_tp_wait_chunk(pkb_ctx *ctx, struct pkb_tp *tp, int c)
{
	for (int j = 1; j < ctx->world; j++)
		if (pkb_tp_wait(ctx, tp, j, c))
			return 1;
	return 0;
}

/* Join: once every pull of this call is done, END (peers may then restage),
 * and main waits for that. */
static inline int pkb_tp_join(pkb_ctx *ctx, struct pkb_tp *tp)
{
	if (ctx->world < 2 || tp->fused)
		return 0;
	cudaStream_t last = tp->pull[0];
	for (int j = 2; j < ctx->world; j++) {
		PKB_TP_CK(ctx, cudaEventRecord(tp->done[j - 1], tp->pull[j - 1]));
		PKB_TP_CK(ctx, cudaStreamWaitEvent(last, tp->done[j - 1], 0));
	}
	if (pkb_tp_meet(ctx, last, PKB_TP_END))
		return 1;
	PKB_TP_CK(ctx, cudaEventRecord(tp->end, last));
	PKB_TP_CK(ctx, cudaStreamWaitEvent((cudaStream_t)ctx->stream, tp->end, 0));
	return 0;
}

/* the handle on main, with its workspace (cublasSetStream drops it) */
static inline int pkb_tp_blas_on(pkb_ctx *ctx, struct pkb_tp *tp)
{
	PKB_TP_CK(ctx, cublasSetStream(tp->blas, (cudaStream_t)ctx->stream));
	PKB_TP_CK(ctx, cublasSetWorkspace(tp->blas, tp->workspace, PKB_TP_WORKSPACE));
	return 0;
}

/* column-major c (m x n, ld ldc) = a (m x k, ld lda) * op_b(b) (ld ldb), fp32
 * accumulation, one rounding; a row-major product C = A B is the column-major
 * C^T = B^T A^T, so a candidate passes its B as `a` */
static inline int pkb_tp_gemm(pkb_ctx *ctx, struct pkb_tp *tp, cublasOperation_t op_b,
			      int64_t m, int64_t n, int64_t k, const void *a, int64_t lda,
			      const void *b, int64_t ldb, void *c, int64_t ldc)
{
	const float one = 1.0f, zero = 0.0f;
	PKB_TP_CK(ctx, cublasGemmEx(tp->blas, CUBLAS_OP_N, op_b, (int)m, (int)n, (int)k,
				    &one, a, tp->type, (int)lda, b, tp->type, (int)ldb,
				    &zero, c, tp->type, (int)ldc,
				    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
	return 0;
}

/* out (cols, rows) = in (rows, cols)^T, 32x32 tiles through shared memory
 * (011's reference kernel): both the reads and the writes are coalesced. */
template <typename E>
__global__ void pkb_tp_transpose_kernel(const E *in, E *out, int64_t rows, int64_t cols)
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

/* the transpose of `e`-byte elements (2 or 4), on stream st */
static inline int pkb_tp_transpose(pkb_ctx *ctx, const void *in, void *out, int64_t rows,
				   int64_t cols, size_t e, cudaStream_t st)
{
	dim3 tb(32, 8), grid((unsigned)((rows + 31) / 32), (unsigned)((cols + 31) / 32));
	if (e == 2)
		pkb_tp_transpose_kernel<uint16_t><<<grid, tb, 0, st>>>((const uint16_t *)in,
									(uint16_t *)out, rows, cols);
	else
		pkb_tp_transpose_kernel<uint32_t><<<grid, tb, 0, st>>>((const uint32_t *)in,
									(uint32_t *)out, rows, cols);
	PKB_TP_CK(ctx, cudaGetLastError());
	return 0;
}

/* ---- the fused pull: the size rule's unchunked path ---------------------- */
/*
 * One kernel on main that copies, with NVLink loads, one or two 2D pieces
 * from every peer's symmetric buffer (and the rank's own with `self`), between
 * an optional barrier before (every rank has staged what is read) and one after
 * (every rank has read what it needed: the staging may be rewritten once the
 * kernel is done). Where the data is too small for chunking to pay, this is
 * the whole communication of a call, so a candidate's floor is the
 * reference's shape of work: stage, one collective, one GEMM.
 *
 * Block b meets block b of every rank at slot PKB_TP_SLOT0 + b. The barrier
 * after is enough because block b's part of the work is the same function of
 * b on every rank (the same grid, from the same shapes): when this rank's
 * kernel is done, every block of every rank has passed it, i.e. every read
 * of this call is done. Rank p's source: peers[p] + src + p*src_step, row i
 * at + i*spitch; its destination dst + p*dst_step + i*dpitch; width bytes a
 * row. Peers in ring order from rank + 1, so the links are loaded evenly.
 */
struct pkb_tp_piece {
	void *const *peers;             /* the symmetric buffer's device table (peers_dev) */
	const void *base;               /* its local address, for the alignment test */
	size_t src, src_step;
	char *dst;
	size_t dst_step;
	size_t rows, width, spitch, dpitch;
};

struct pkb_tp_pulls {
	struct pkb_tp_piece piece[2];
	int n;                          /* pieces */
	int self;                       /* 1: the rank's own part too */
	int meet;                       /* PKB_TP_MEET_BEFORE | PKB_TP_MEET_AFTER */
};

template <typename U>
__global__ void __launch_bounds__(PKB_TP_THREADS)
pkb_tp_pull_kernel(pkb_dev_comm comm, struct pkb_tp_pulls pl)
{
	int slot = PKB_TP_SLOT0 + blockIdx.x;
	if ((pl.meet & PKB_TP_MEET_BEFORE) && !pkb_barrier_block(comm, slot))
		return;
	int npeer = pl.self ? comm.world : comm.world - 1, from = pl.self ? 0 : 1;
	for (int i = 0; i < pl.n; i++) {
		const struct pkb_tp_piece pc = pl.piece[i];
		size_t wu = pc.width / sizeof(U), per = pc.rows * wu, total = per * npeer;
		for (size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x; t < total;
		     t += (size_t)gridDim.x * blockDim.x) {
			size_t q = t / per, row = t % per / wu, u = t % wu;
			int p = (comm.rank + from + (int)q) % comm.world;
			const U *src = (const U *)((const char *)pc.peers[p] + pc.src +
						   p * pc.src_step + row * pc.spitch);
			U *dst = (U *)(pc.dst + p * pc.dst_step + row * pc.dpitch);
			dst[u] = src[u];
		}
	}
	if (pl.meet & PKB_TP_MEET_AFTER)
		pkb_barrier_block(comm, slot);
}

/* the pulls of `pl` on stream st, in the widest unit (16, 8, 4 or 2 bytes)
 * that every address, step, pitch and width allows */
static inline int pkb_tp_pull(pkb_ctx *ctx, cudaStream_t st, const struct pkb_tp_pulls *pl)
{
	size_t al = 0, units = 0;
	int npeer = pl->self ? ctx->world : ctx->world - 1;
	for (int i = 0; i < pl->n; i++) {
		const struct pkb_tp_piece *pc = &pl->piece[i];
		al |= (size_t)(uintptr_t)pc->base | pc->src | pc->src_step |
		      (size_t)(uintptr_t)pc->dst | pc->dst_step | pc->width | pc->spitch | pc->dpitch;
		units += pc->rows * pc->width / 2 * npeer;
	}
	size_t unit = al % 16 == 0 ? 16 : al % 8 == 0 ? 8 : al % 4 == 0 ? 4 : 2;
	units /= unit / 2;
	/* about four units a thread, at most PKB_TP_BLOCKS blocks (their slots) */
	int blocks = (int)((units + PKB_TP_THREADS * 4 - 1) / (PKB_TP_THREADS * 4));
	blocks = blocks < 1 ? 1 : blocks > PKB_TP_BLOCKS ? PKB_TP_BLOCKS : blocks;
	switch (unit) {
	case 16: pkb_tp_pull_kernel<int4><<<blocks, PKB_TP_THREADS, 0, st>>>(ctx->dev, *pl); break;
	case 8: pkb_tp_pull_kernel<int2><<<blocks, PKB_TP_THREADS, 0, st>>>(ctx->dev, *pl); break;
	case 4: pkb_tp_pull_kernel<int><<<blocks, PKB_TP_THREADS, 0, st>>>(ctx->dev, *pl); break;
	default: pkb_tp_pull_kernel<short><<<blocks, PKB_TP_THREADS, 0, st>>>(ctx->dev, *pl); break;
	}
	PKB_TP_CK(ctx, cudaGetLastError());
	return 0;
}

/* ---- 011 and 012: all-gather of A^T by the copy engines + chunked GEMM ---- */
/*
 * C (M, N) = A (M, K) @ B (K, N), A K-sharded: in[0] = A_local (M, Kl), in[1]
 * = B, out[0] = C.
 *
 * Layout. A symmetric buffer AT = A^T (K, M), row-major: row block w (rows
 * w*Kl .. (w+1)*Kl - 1, Kl = K/W) is rank w's A_local^T. A row chunk
 * A[m0 : m0+R, :] of A is the column block AT[:, m0 : m0+R]: Kl rows of R
 * contiguous elements in each row block, which one cudaMemcpy2DAsync per peer
 * moves (rows of R*e bytes, 2 KiB at R = 1024 bf16: wide enough for the copy
 * engine, where the untransposed (M, K) layout would need rows of Kl*e = 256
 * bytes). Chunk c of C is then one GEMM with all of K, rounded once as the
 * reference's:
 *   row-major C[m0:m0+R, :] = A[m0:m0+R, :] @ B is the column-major
 *   C^T (N x R, ld N, at C + m0*N) = B^T (N x K, ld N) * G^T, where
 *   G = AT as the column-major M x K matrix with ld M, starting at row m0:
 *   cublasGemmEx(OP_N, OP_T, N, R, K, B ld N, AT + m0 ld M, C + m0*N ld N).
 *
 * pkb_init: pkb_tp_ag_init; pkb_fini: pkb_tp_delete; pkb_run: pkb_tp_ag_stage (transpose A_local into AT's row block `rank`;
 * START), pkb_tp_ag_pull (fork; pull[j-1] copies chunk c of peer p's block
 * AT[pKl.., m0..] into the same place here, then landed(j, c)),
 * pkb_tp_ag_gemm (per chunk: wait for it from every peer; GEMM), pkb_tp_join.
 *
 * Chunks: a head of about M/head_div rows, then the rest in nchunk - 1
 * chunks (default 2 in all: a head and one big GEMM). Measured on 4x H200
 * (2026-11-28, docs/TP_GEMM.md) with 4 equal chunks, the pipeline lost to
 * the reference at every shape: 83 vs 35 us at the default (12 copies, 12
 * events, 4 GEMMs and 2 barriers against 3 launches), 267 vs 222 us at
 * 8192 x 8192 (4 GEMMs of 2048 rows and 6 MiB of copy-engine pulls against
 * one GEMM after NCCL's all-gather). A head chunk keeps the exposed transfer
 * small (M/8 rows: 256 KiB a link at 8192, W = 4) and the second GEMM big
 * (7M/8 rows), which hides the rest of the gather. Why not K-split, the
 * local shard's GEMM first (it needs no communication)? Every row of C needs
 * all of K, so the shards' products would have to be summed: an fp32 (M, N)
 * accumulator written and read once per shard (256 MiB each way at 8192 x
 * 8192), more HBM time than the whole GEMM, or W roundings of C, which the
 * tolerance (one rounding) refuses.
 *
 * The size rule (pkb_tp_ag_init): the pipeline runs only where each link
 * carries at least `min_link_bytes` (M*Kl*e, one shard); below, the call is
 * fused: transpose, one pkb_tp_pull of the W-1 shards (a barrier before and
 * after), one GEMM, the reference's shape of work (transpose, all-gather,
 * GEMM) with a barrier kernel in place of NCCL's. The measured 4-chunk
 * overhead, ~48 us over the reference at the default, against the transfer
 * a pipeline hides, 7/8 of a link's bytes at ~120 GB/s: break-even near
 * 6 MiB a link; the default 8 MiB keeps 8192 x 8192 (2 MiB a link at W = 4,
 * 4 MiB at W = 2, both lost as pipelines) on the fused path. A guess from
 * one measurement, to be tuned with tools/bench-variants (MIN_LINK_BYTES).
 */
struct pkb_tp_ag {
	struct pkb_tp tp;       /* chunks of A's rows */
	pkb_symm at;            /* A^T (K, M); block w = rank w's shard */
};

/* pkb_init: ctx->user = a struct pkb_tp_ag, A's M rows cut into a head of
 * about M/head_div rows and nchunk - 1 more of `min_rows` or more; one chunk
 * (fused) where a shard is under `min_link_bytes` */
static inline int pkb_tp_ag_init(pkb_ctx *ctx, int nchunk, int head_div, int64_t min_rows,
				 size_t min_link_bytes)
{
	int64_t m = ctx->in[0].shape[0];
	int n = ctx->in[0].bytes < min_link_bytes ? 1 : nchunk;
	struct pkb_tp_ag *s = (struct pkb_tp_ag *)pkb_tp_new(ctx, sizeof *s, m,
							     head_div > 0 ? m / head_div : 0,
							     n, min_rows);
	if (!s)
		return 1;
	return ctx->svc->symm_alloc(ctx, ctx->in[0].bytes * ctx->world, &s->at);
}

/* This rank's shard into its block of AT, then (pipeline) START: every rank
 * has its block. The fused path meets inside its pull kernel. */
static inline int pkb_tp_ag_stage(pkb_ctx *ctx, struct pkb_tp_ag *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	const pkb_tensor *a = &ctx->in[0];
	int64_t m = a->shape[0], kl = a->shape[1];
	size_t e = pkb_dtype_size(a->dtype);
	void *mine = (char *)s->at.local + (size_t)ctx->rank * kl * m * e;

	if (pkb_tp_transpose(ctx, a->data, mine, m, kl, e, st))
		return 1;
	return s->tp.fused ? 0 : pkb_tp_meet(ctx, st, PKB_TP_START);
}

/* Fused: one kernel on main pulls every peer's block. Pipeline: fork;
 * pull[j-1] copies peer (rank + j)'s block, chunk by chunk. */
static inline int pkb_tp_ag_pull(pkb_ctx *ctx, struct pkb_tp_ag *s)
{
	const pkb_tensor *a = &ctx->in[0];
	int64_t m = a->shape[0], kl = a->shape[1];
	size_t e = pkb_dtype_size(a->dtype);

	if (s->tp.fused) {
		size_t block = (size_t)kl * m * e;
		struct pkb_tp_pulls pl = {
			.piece = { { .peers = s->at.peers_dev, .base = s->at.local,
				     .src = 0, .src_step = block, .dst = (char *)s->at.local,
				     .dst_step = block, .rows = 1, .width = block,
				     .spitch = block, .dpitch = block } },
			.n = 1, .self = 0, .meet = PKB_TP_MEET_BEFORE | PKB_TP_MEET_AFTER };
		return pkb_tp_pull(ctx, (cudaStream_t)ctx->stream, &pl);
	}
	if (pkb_tp_fork(ctx, &s->tp))
		return 1;
	for (int j = 1; j < ctx->world; j++) {
		int p = pkb_tp_peer(ctx, j);
		size_t block = (size_t)p * kl * m * e;
		for (int c = 0; c < s->tp.nchunk; c++) {
			int64_t r, m0 = pkb_tp_span(&s->tp, c, m, &r);
			size_t off = block + (size_t)m0 * e;
			PKB_TP_CK(ctx, cudaMemcpy2DAsync((char *)s->at.local + off, (size_t)m * e,
							 (const char *)s->at.peers[p] + off,
							 (size_t)m * e, (size_t)r * e, (size_t)kl,
							 cudaMemcpyDeviceToDevice, s->tp.pull[j - 1]));
			if (pkb_tp_landed(ctx, &s->tp, j, c))
				return 1;
		}
	}
	return 0;
}

/* On main: chunk c's GEMM once chunk c has landed from every peer (fused:
 * one GEMM, behind the pull kernel on main). */
static inline int pkb_tp_ag_gemm(pkb_ctx *ctx, struct pkb_tp_ag *s)
{
	const pkb_tensor *a = &ctx->in[0], *b = &ctx->in[1];
	int64_t m = a->shape[0], k = b->shape[0], n = b->shape[1];
	size_t e = pkb_dtype_size(a->dtype);

	if (pkb_tp_blas_on(ctx, &s->tp))
		return 1;
	for (int c = 0; c < s->tp.nchunk; c++) {
		int64_t r, m0 = pkb_tp_span(&s->tp, c, m, &r);
		if (pkb_tp_wait_chunk(ctx, &s->tp, c) ||
		    pkb_tp_gemm(ctx, &s->tp, CUBLAS_OP_T, n, r, k, b->data, n,
				(const char *)s->at.local + (size_t)m0 * e, m,
				(char *)ctx->out[0].data + (size_t)m0 * n * e, n))
			return 1;
	}
	return 0;
}

#endif /* PKB_TP_CUH */
