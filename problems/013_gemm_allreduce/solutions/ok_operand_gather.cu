/*
 * 013_gemm_allreduce, candidate: compute only this rank's rows of the sum,
 * from operands gathered by the copy engines under the GEMM, then all-gather
 * the row blocks chunk by chunk as each chunk's GEMM ends; at small shapes,
 * one GEMM and one two-shot all-reduce kernel.
 *
 * The math. Rank r's rows R_r = r*Ml .. (r+1)*Ml - 1 (Ml = M/W) of
 * C = sum_w A_w @ B_w are [A_0[R_r] | ... | A_{W-1}[R_r]] (Ml, W*K) @
 * [B_0; ...; B_{W-1}] (W*K, N): one GEMM with K' = W*K = 2048 at W = 4,
 * accumulated in fp32 and rounded once (the tolerance takes any order of
 * the sum over ranks, README "Correctness"). Same FLOPs per rank as the
 * reference (2*Ml*W*K*N = 2*M*K*N). 016's ok_operand_gather.cu with all
 * of K per rank, plus the all-gather of the row blocks.
 *
 * Why not chunked GEMMs each reduced in place (the design first proposed in
 * issue 41)? Bytes. A two-shot all-reduce of the (M, N) products moves what
 * NCCL's ring moves, 2 (W-1)/W * M*N*e in per rank: 192 MiB at M = N =
 * 8192, bf16, W = 4 (the reference: ~3/4 of its time is that all-reduce,
 * going by 016's measured reduce-scatter, 96 MiB in ~345 us on 4x H200).
 * Hiding the GEMM (68.7 GFLOP, ~100 us) under it caps the gain near 1.2x
 * even with a reduce kernel as fast as NCCL's, and the reduce kernels would
 * take SMs from the GEMM. Gathering operands instead: from each peer its
 * A rows R_r (Ml*K) and its B (K*N), then each peer's finished rows (Ml*N):
 * (W-1) * (Ml*K + K*N + Ml*N)*e = 3 * (2 + 8 + 32) = 126 MiB at 8192, W = 4
 * (42 MiB a link), 76 MiB at W = 2 (against 192 and 128 MiB), with the
 * operand pulls under the GEMMs and the row pulls under the later GEMMs.
 * Expected: link-bound, ~42 MiB at ~120 GB/s a link = ~370 us at W = 4
 * against ~550-760 us for the reference (>= 1.5x), and ~2x at W = 2. It
 * moves less only where K*(Ml + N) < Ml*N (large M and N against K = 512).
 *
 * Layout (pipeline). Symmetric: AS = A_local^T (K, M) (so a peer's rows R_r
 * are K rows of Ml contiguous elements: one 2D copy with wide rows), BC =
 * B_cat (W*K, N), row block w = rank w's B_local, CS = this rank's rows of
 * C (Ml, N). Local: ATC = A_cat^T (W*K, Ml), row block w = A_w[R_r]^T.
 * Chunk c, columns n0 .. n0+Nc-1 (row-major C = A B is the column-major
 * C^T = B^T A^T):
 *   cublasGemmEx(OP_N, OP_T, Nc, Ml, W*K, BC + n0 ld N, ATC ld Ml, CS + n0 ld N).
 *
 * One call (main = ctx->stream; pull[j-1] pulls from rank + j; sig is a
 * side stream):
 *   main:   transpose A_local into AS; B_local into BC's block `rank`; AS's
 *           columns R_r into ATC's block `rank`; barrier START; fork
 *   pull j: peer p's AS[:, R_r] into ATC's block p; then per chunk c, p's
 *           BC block columns n0.. into the same place here; landed[j][c]
 *   main:   per chunk c: wait landed[*][c]; GEMM c into CS; computed[c]
 *   sig:    per chunk c: wait computed[c]; CS columns n0.. into the output's
 *           rows R_r; barrier READY (every rank's GEMM c is done); ready[c]
 *   pull j: per chunk c: wait ready[c]; p's CS columns n0.. into the
 *           output's rows R_p
 *   pull 0: wait every pull stream; barrier END; end.   main: wait end
 *
 * Ordering (correctness), beyond include/pkb_tp.cuh's contract (START,
 * fork, landed, join, END): a peer's CS chunk is read after READY of that
 * chunk, which every rank passes only after its GEMM c (sig waits
 * computed[c], recorded behind the GEMM on main); the next call's GEMMs
 * rewrite CS only after its join, behind END, which every rank reaches
 * after all its pulls of this call. The ready waits are enqueued after the
 * records (gather_rows runs after gemm_chunks), so they bind to this call's.
 * READY barriers run on sig in the same order on every rank, one slot
 * (PKB_TP_SLOT_FREE); START and END keep theirs. sig rejoins main through
 * the pull streams (they wait ready[last]) and the join, so a call captures
 * in a CUDA graph.
 *
 * The size rule (fused path). Where the operands are not smaller than the
 * products (K*(Ml + N) >= Ml*N, the default 1024 x 1024: 1.25 MiB against
 * 0.5 MiB a link), or a link would carry under MIN_LINK_BYTES, or M is not
 * a multiple of W: one GEMM of the whole product into a symmetric P (M, N),
 * rounded as the reference rounds it, and one kernel (twoshot below): a
 * barrier, then block b sums its range of this rank's 1/W of P over every
 * rank in rank order in fp32, rounds once, writes the output and pushes the
 * sum into the same range of every peer's P (bytes only this rank read); a
 * barrier; then block b copies its range of the other W-1 shards of its own
 * P into the output. 2 (W-1)/W * M*N*e over NVLink, the ring's volume (1.5
 * MiB in at the default, W = 4), two launches like the reference's. Why no
 * trailing barrier: a rank rewrites P (next GEMM) only after its second
 * barrier, which no peer passes before it has finished its reads and pushes
 * of this call; a peer reads P again only after the next call's first
 * barrier, behind that GEMM. ok_fp32_partials.cu (one-shot, (W-1)*M*N*4
 * bytes) is the plain version.
 *
 * Knobs: NCHUNK (chunks of N, default 4), MIN_COLS (no narrower chunk,
 * default 256), MIN_LINK_BYTES (default 4 MiB; 0: the operand path wherever
 * it moves less; a huge value: always fused). Compiled, not run.
 */
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_tp.cuh"

PKB_SOLUTION;

#ifndef NCHUNK
#define NCHUNK 4
#endif
#ifndef MIN_COLS
#define MIN_COLS 256
#endif
#ifndef MIN_LINK_BYTES
#define MIN_LINK_BYTES (4u << 20)
#endif
#define READY PKB_TP_SLOT_FREE          /* slot of the per-chunk barriers on sig */
#define MAX_CHUNKS 64

struct state {
	struct pkb_tp tp;               /* first (pkb_tp_new): chunks of N; fused: one */
	int64_t ml;                     /* rows of C this rank computes (pipeline) */
	pkb_symm as;                    /* A_local^T (K, M) */
	pkb_symm bc;                    /* B_cat (W*K, N); block w = rank w's B_local */
	pkb_symm cs;                    /* pipeline: rows R_r of C (Ml, N); fused: P (M, N) */
	void *atc;                      /* A_cat^T (W*K, Ml), local */
	cudaStream_t sig;               /* own rows out, READY barriers */
	cudaEvent_t computed[MAX_CHUNKS]; /* per chunk: its GEMM is done here */
	cudaEvent_t ready[MAX_CHUNKS];  /* per chunk: ... on every rank (after READY) */
};

/* ---- the fused path: two-shot all-reduce of P ----------------------------- */

template <typename T, int V>
struct alignas(sizeof(T) * V) pack {
	T v[V];
};

/* units [*lo, *hi) of part `i` of `n` units cut in `parts` */
__device__ __forceinline__ void cut(int64_t n, int parts, int i, int64_t *lo, int64_t *hi)
{
	*lo = n * i / parts;
	*hi = n * (i + 1) / parts;
}

/* P of every rank (part[w], units of V elements): shard q = part q of W of
 * the units, and block b its part b of gridDim.x; the same on every rank, so
 * block b's barriers cover exactly what it touches. */
template <typename T, int V>
__global__ void __launch_bounds__(PKB_TP_THREADS)
twoshot(pkb_dev_comm comm, T *const *part, T *out, int64_t units)
{
	typedef pack<T, V> P;
	int slot = PKB_TP_SLOT0 + blockIdx.x, w = comm.world, r = comm.rank;
	int64_t s0, s1, b0, b1;

	/* every rank's GEMM has written its P */
	if (!pkb_barrier_block(comm, slot))
		return;
	cut(units, w, r, &s0, &s1);
	cut(s1 - s0, gridDim.x, blockIdx.x, &b0, &b1);
	for (int64_t t = s0 + b0 + threadIdx.x; t < s0 + b1; t += blockDim.x) {
		float acc[V];
		for (int v = 0; v < V; v++)
			acc[v] = 0.0f;
		for (int q = 0; q < w; q++) {           /* rank order, fp32 */
			P x = ((const P *)part[q])[t];
			for (int v = 0; v < V; v++)
				acc[v] += pkb_to_float(x.v[v]);
		}
		P y;
		for (int v = 0; v < V; v++)
			y.v[v] = pkb_from_float<T>(acc[v]);
		((P *)out)[t] = y;
		for (int j = 1; j < w; j++)             /* ring order from r + 1 */
			((P *)part[(r + j) % w])[t] = y;
	}
	/* every rank's sums of this block's ranges have landed here */
	if (!pkb_barrier_block(comm, slot))
		return;
	const P *mine = (const P *)part[r];
	for (int j = 1; j < w; j++) {
		cut(units, w, (r + j) % w, &s0, &s1);
		cut(s1 - s0, gridDim.x, blockIdx.x, &b0, &b1);
		for (int64_t t = s0 + b0 + threadIdx.x; t < s0 + b1; t += blockDim.x)
			((P *)out)[t] = mine[t];
	}
}

/* the kernel in 16-byte units where the element count allows (every buffer
 * starts 256-byte aligned, docs/ABI.md); the grid is a function of the shape
 * only, so it is the same on every rank */
template <typename T>
static int twoshot_launch(pkb_ctx *ctx, struct state *s)
{
	const int v = 16 / sizeof(T);
	int64_t n = ctx->out[0].numel, units = n % v == 0 ? n / v : n;
	int64_t shard = (units + ctx->world - 1) / ctx->world;
	int blocks = (int)((shard + PKB_TP_THREADS - 1) / PKB_TP_THREADS);
	blocks = blocks < 1 ? 1 : blocks > PKB_TP_BLOCKS ? PKB_TP_BLOCKS : blocks;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	T *const *part = (T *const *)s->cs.peers_dev;
	T *out = (T *)ctx->out[0].data;

	if (n % v == 0)
		twoshot<T, 16 / sizeof(T)><<<blocks, PKB_TP_THREADS, 0, st>>>(ctx->dev, part, out, units);
	else
		twoshot<T, 1><<<blocks, PKB_TP_THREADS, 0, st>>>(ctx->dev, part, out, units);
	PKB_TP_CK(ctx, cudaGetLastError());
	return 0;
}

static int allreduce_fused(pkb_ctx *ctx, struct state *s)
{
	switch (ctx->out[0].dtype) {
	case PKB_BF16: return twoshot_launch<__nv_bfloat16>(ctx, s);
	case PKB_FP16: return twoshot_launch<__half>(ctx, s);
	default: return twoshot_launch<float>(ctx, s);
	}
}

/* ---- set-up --------------------------------------------------------------- */

/* 1: gather operands (the pipeline). A link's elements: operands K*(Ml + N)
 * and rows Ml*N, against the two-shot's 2*Ml*N. */
static int operand_path(const pkb_ctx *ctx)
{
	int64_t m = ctx->in[0].shape[0], k = ctx->in[0].shape[1], n = ctx->in[1].shape[1];
	int64_t w = ctx->world, ml = m / w;
	double ops = (double)k * (ml + n), rows = (double)ml * n;
	double link = (ops + rows) * pkb_dtype_size(ctx->in[0].dtype);

	return w >= 2 && m % w == 0 && ops < rows && link >= (double)MIN_LINK_BYTES;
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	const pkb_tensor *a = &ctx->in[0], *b = &ctx->in[1];
	int pipe = operand_path(ctx);
	struct state *s = (struct state *)pkb_tp_new(ctx, sizeof *s, b->shape[1], 0,
						     pipe ? NCHUNK : 1, MIN_COLS);
	if (!s || s->tp.nchunk > MAX_CHUNKS)
		return 1;
	if (s->tp.fused)
		return ctx->svc->symm_alloc(ctx, ctx->out[0].bytes, &s->cs);

	s->ml = a->shape[0] / ctx->world;
	/* A_cat^T (W*K, Ml): W * K * M/W = the elements of A_local */
	if (pkb_tp_malloc(ctx, &s->tp, &s->atc, a->bytes))
		return 1;
	PKB_TP_CK(ctx, cudaStreamCreateWithFlags(&s->sig, cudaStreamNonBlocking));
	for (int c = 0; c < s->tp.nchunk; c++) {
		PKB_TP_CK(ctx, cudaEventCreateWithFlags(&s->computed[c], cudaEventDisableTiming));
		PKB_TP_CK(ctx, cudaEventCreateWithFlags(&s->ready[c], cudaEventDisableTiming));
	}
	PKB_TP_CK(ctx, ctx->svc->symm_alloc(ctx, a->bytes, &s->as));
	PKB_TP_CK(ctx, ctx->svc->symm_alloc(ctx, b->bytes * ctx->world, &s->bc));
	return ctx->svc->symm_alloc(ctx, ctx->out[0].bytes / ctx->world, &s->cs);
}

/* ---- the pipeline ---------------------------------------------------------- */

/* rank p's AS[:, R_r] (K rows of Ml elements, pitch M) into ATC's row block
 * p (pitch Ml) */
static int copy_a_part(pkb_ctx *ctx, struct state *s, int p, cudaStream_t st)
{
	const pkb_tensor *a = &ctx->in[0];
	int64_t m = a->shape[0], k = a->shape[1], ml = s->ml;
	size_t e = pkb_dtype_size(a->dtype);

	PKB_TP_CK(ctx, cudaMemcpy2DAsync((char *)s->atc + (size_t)p * k * ml * e, (size_t)ml * e,
					 (const char *)s->as.peers[p] + (size_t)ctx->rank * ml * e,
					 (size_t)m * e, (size_t)ml * e, (size_t)k,
					 cudaMemcpyDeviceToDevice, st));
	return 0;
}

/* this rank's operands into AS, BC and ATC; then every rank has staged */
static int stage_and_meet(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	const pkb_tensor *a = &ctx->in[0], *b = &ctx->in[1];

	if (pkb_tp_transpose(ctx, a->data, s->as.local, a->shape[0], a->shape[1],
			     pkb_dtype_size(a->dtype), st))
		return 1;
	PKB_TP_CK(ctx, cudaMemcpyAsync((char *)s->bc.local + (size_t)ctx->rank * b->bytes, b->data,
				       b->bytes, cudaMemcpyDeviceToDevice, st));
	return copy_a_part(ctx, s, ctx->rank, st) || pkb_tp_meet(ctx, st, PKB_TP_START);
}

/* fork: pull[j-1] copies rank (rank + j)'s A part, then its B chunk by chunk */
static int pull_operands(pkb_ctx *ctx, struct state *s)
{
	const pkb_tensor *b = &ctx->in[1];
	int64_t k = b->shape[0], n = b->shape[1];
	size_t e = pkb_dtype_size(b->dtype);

	if (pkb_tp_fork(ctx, &s->tp))
		return 1;
	for (int j = 1; j < ctx->world; j++) {
		int p = pkb_tp_peer(ctx, j);
		cudaStream_t ps = s->tp.pull[j - 1];
		if (copy_a_part(ctx, s, p, ps))
			return 1;
		for (int c = 0; c < s->tp.nchunk; c++) {
			int64_t nc, n0 = pkb_tp_span(&s->tp, c, n, &nc);
			size_t off = ((size_t)p * k * n + n0) * e;
			PKB_TP_CK(ctx, cudaMemcpy2DAsync((char *)s->bc.local + off, (size_t)n * e,
							 (const char *)s->bc.peers[p] + off, (size_t)n * e,
							 (size_t)nc * e, (size_t)k,
							 cudaMemcpyDeviceToDevice, ps));
			if (pkb_tp_landed(ctx, &s->tp, j, c))
				return 1;
		}
	}
	return 0;
}

/* main: chunk c's GEMM into CS once its operands landed from every peer
 * (fused: the whole product into P) */
static int gemm_chunks(pkb_ctx *ctx, struct state *s)
{
	const pkb_tensor *a = &ctx->in[0], *b = &ctx->in[1];
	int64_t m = a->shape[0], k = b->shape[0], n = b->shape[1];
	size_t e = pkb_dtype_size(b->dtype);

	if (pkb_tp_blas_on(ctx, &s->tp))
		return 1;
	if (s->tp.fused)
		return pkb_tp_gemm(ctx, &s->tp, CUBLAS_OP_N, n, m, k, b->data, n, a->data, k,
				   s->cs.local, n);
	for (int c = 0; c < s->tp.nchunk; c++) {
		int64_t nc, n0 = pkb_tp_span(&s->tp, c, n, &nc);
		if (pkb_tp_wait_chunk(ctx, &s->tp, c) ||
		    pkb_tp_gemm(ctx, &s->tp, CUBLAS_OP_T, nc, s->ml, k * ctx->world,
				(const char *)s->bc.local + (size_t)n0 * e, n, s->atc, s->ml,
				(char *)s->cs.local + (size_t)n0 * e, n))
			return 1;
		PKB_TP_CK(ctx, cudaEventRecord(s->computed[c], (cudaStream_t)ctx->stream));
	}
	return 0;
}

/* rows ml of columns n0 .. n0+nc-1 (pitch n) from src into the output's row
 * block q */
static int copy_rows(pkb_ctx *ctx, struct state *s, const void *src, int q, int64_t n0,
		     int64_t nc, cudaStream_t st)
{
	int64_t n = ctx->out[0].shape[1];
	size_t e = pkb_dtype_size(ctx->out[0].dtype);

	PKB_TP_CK(ctx, cudaMemcpy2DAsync((char *)ctx->out[0].data + ((size_t)q * s->ml * n + n0) * e,
					 (size_t)n * e, (const char *)src + (size_t)n0 * e,
					 (size_t)n * e, (size_t)nc * e, (size_t)s->ml,
					 cudaMemcpyDeviceToDevice, st));
	return 0;
}

/* sig: each chunk's own rows out, then READY; pull[j-1]: each ready chunk of
 * peer (rank + j)'s rows */
static int gather_rows(pkb_ctx *ctx, struct state *s)
{
	int64_t n = ctx->out[0].shape[1];

	for (int c = 0; c < s->tp.nchunk; c++) {
		int64_t nc, n0 = pkb_tp_span(&s->tp, c, n, &nc);
		PKB_TP_CK(ctx, cudaStreamWaitEvent(s->sig, s->computed[c], 0));
		if (copy_rows(ctx, s, s->cs.local, ctx->rank, n0, nc, s->sig) ||
		    pkb_tp_meet(ctx, s->sig, READY))
			return 1;
		PKB_TP_CK(ctx, cudaEventRecord(s->ready[c], s->sig));
	}
	for (int j = 1; j < ctx->world; j++) {
		int p = pkb_tp_peer(ctx, j);
		for (int c = 0; c < s->tp.nchunk; c++) {
			int64_t nc, n0 = pkb_tp_span(&s->tp, c, n, &nc);
			PKB_TP_CK(ctx, cudaStreamWaitEvent(s->tp.pull[j - 1], s->ready[c], 0));
			if (copy_rows(ctx, s, s->cs.peers[p], p, n0, nc, s->tp.pull[j - 1]))
				return 1;
		}
	}
	return 0;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;

	if (s->tp.fused)
		return gemm_chunks(ctx, s) || allreduce_fused(ctx, s);
	/* AS, BC and CS may be rewritten after the join */
	return stage_and_meet(ctx, s) || pull_operands(ctx, s) || gemm_chunks(ctx, s) ||
	       gather_rows(ctx, s) || pkb_tp_join(ctx, &s->tp);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;

	if (s && s->sig) {
		cudaDeviceSynchronize();
		for (int c = 0; c < s->tp.nchunk && c < MAX_CHUNKS; c++) {
			if (s->computed[c])
				cudaEventDestroy(s->computed[c]);
			if (s->ready[c])
				cudaEventDestroy(s->ready[c]);
		}
		cudaStreamDestroy(s->sig);
	}
	return pkb_tp_delete(ctx);
}
