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
 * for its S0, behind this call's GEMMs on main. S0 and S1 are
 * include/pkb_tp.cuh's barriers START and END; the streams, events, cuBLAS
 * set-up, fork and join are that header's, which states the contract in full.
 *
 * The size rule: the operand path pays only where it moves less than the
 * products (K*(M + Nl) < M*Nl) and a link carries at least MIN_LINK_BYTES of
 * operands (K*(M + Nl)*e) a call, enough to hide the pipeline's fixed cost.
 * Elsewhere the call is fused, the reference's shape of work: the own
 * block's GEMM into a symmetric CS (M, Nl), then one kernel that pulls every
 * rank's block (its own included) into its columns of C over NVLink, between
 * a barrier before (every rank's product is written) and one after (every
 * rank has read: the next call may rewrite CS); no concatenation pass.
 * Measured on 4x H200 (2026-11-28) the operand pipeline took 134.5 us
 * against the reference's 38.8 at the default (1.25 MiB of operands a link,
 * 13 GEMMs) and won 1.47x at 8192 x 8192 (10 MiB a link); the default 4 MiB
 * keeps 8192 on the pipeline and puts the default on the fused path, which
 * is compiled but has not run yet.
 *
 * Knobs: NCHUNK (row chunks of each peer's A, default 4), MIN_ROWS (no chunk
 * smaller, default 256), MIN_LINK_BYTES (the size rule, default 4 MiB; 0:
 * the operand path wherever it moves less).
 */
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_tp.cuh"

PKB_SOLUTION;

#ifndef NCHUNK
#define NCHUNK 4
#endif
#ifndef MIN_ROWS
#define MIN_ROWS 256
#endif
#ifndef MIN_LINK_BYTES
#define MIN_LINK_BYTES (4u << 20)
#endif

struct state {
	struct pkb_tp tp;               /* first (pkb_tp_new): chunks of A's rows */
	pkb_symm as;                    /* A (M, K) */
	pkb_symm bs;                    /* B (K, Nl) */
	pkb_symm cs;                    /* fused: this rank's product (M, Nl) */
	void *a_all, *b_all;            /* slot p: rank p's A, B (local) */
};

extern "C" int pkb_init(pkb_ctx *ctx)
{
	const pkb_tensor *a = &ctx->in[0], *b = &ctx->in[1];
	int64_t m = a->shape[0], k = a->shape[1], nl = b->shape[1];
	size_t ops = (size_t)(k * (m + nl)) * pkb_dtype_size(a->dtype);
	int pipe = k * (m + nl) < m * nl && ops >= MIN_LINK_BYTES;
	struct state *s = (struct state *)pkb_tp_new(ctx, sizeof *s, m, 0, pipe ? NCHUNK : 1,
						     MIN_ROWS);
	if (!s)
		return 1;
	if (s->tp.fused)   /* every rank decides alike: the same shapes */
		return ctx->svc->symm_alloc(ctx, ctx->out[0].bytes / ctx->world, &s->cs);
	if (pkb_tp_malloc(ctx, &s->tp, &s->a_all, ctx->in[0].bytes * ctx->world) ||
	    pkb_tp_malloc(ctx, &s->tp, &s->b_all, ctx->in[1].bytes * ctx->world))
		return 1;
	PKB_TP_CK(ctx, ctx->svc->symm_alloc(ctx, ctx->in[0].bytes, &s->as));
	return ctx->svc->symm_alloc(ctx, ctx->in[1].bytes, &s->bs);
}

/* This rank's operands into AS and BS, then every rank has its own (fused:
 * this rank's product into CS; the pull kernel meets). */
static int stage_and_meet(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	const pkb_tensor *a = &ctx->in[0], *b = &ctx->in[1];

	if (s->tp.fused)
		return pkb_tp_blas_on(ctx, &s->tp) ||
		       pkb_tp_gemm(ctx, &s->tp, CUBLAS_OP_N, b->shape[1], a->shape[0],
				   a->shape[1], b->data, b->shape[1], a->data, a->shape[1],
				   s->cs.local, b->shape[1]);

	PKB_TP_CK(ctx, cudaMemcpyAsync(s->as.local, a->data, a->bytes, cudaMemcpyDeviceToDevice, st));
	PKB_TP_CK(ctx, cudaMemcpyAsync(s->bs.local, b->data, b->bytes, cudaMemcpyDeviceToDevice, st));
	return pkb_tp_meet(ctx, st, PKB_TP_START);
}

/* Fork: pull[j-1] copies rank (rank + j)'s B, then its A chunk by chunk. */
static int pull_chunks(pkb_ctx *ctx, struct state *s)
{
	const pkb_tensor *a = &ctx->in[0], *b = &ctx->in[1];
	int64_t m = a->shape[0], k = a->shape[1];
	size_t e = pkb_dtype_size(a->dtype);

	if (s->tp.fused) {
		/* every rank's CS (M, Nl) into its columns of C (M, W*Nl), own included */
		size_t row = (size_t)b->shape[1] * e;
		struct pkb_tp_pulls pl = {
			.piece = { { .peers = s->cs.peers_dev, .base = s->cs.local,
				     .src = 0, .src_step = 0,
				     .dst = (char *)ctx->out[0].data, .dst_step = row,
				     .rows = (size_t)m, .width = row, .spitch = row,
				     .dpitch = row * ctx->world } },
			.n = 1, .self = 1, .meet = PKB_TP_MEET_BEFORE | PKB_TP_MEET_AFTER };
		return pkb_tp_pull(ctx, (cudaStream_t)ctx->stream, &pl);
	}
	if (pkb_tp_fork(ctx, &s->tp))
		return 1;
	for (int j = 1; j < ctx->world; j++) {
		int p = pkb_tp_peer(ctx, j);
		cudaStream_t ps = s->tp.pull[j - 1];
		PKB_TP_CK(ctx, cudaMemcpyAsync((char *)s->b_all + (size_t)p * b->bytes, s->bs.peers[p],
					       b->bytes, cudaMemcpyDeviceToDevice, ps));
		for (int c = 0; c < s->tp.nchunk; c++) {
			int64_t r, m0 = pkb_tp_span(&s->tp, c, m, &r);
			PKB_TP_CK(ctx, cudaMemcpyAsync((char *)s->a_all + (size_t)p * a->bytes +
						       (size_t)m0 * k * e,
						       (const char *)s->as.peers[p] + (size_t)m0 * k * e,
						       (size_t)r * k * e, cudaMemcpyDeviceToDevice, ps));
			if (pkb_tp_landed(ctx, &s->tp, j, c))
				return 1;
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

	return pkb_tp_gemm(ctx, &s->tp, CUBLAS_OP_N, nl, r, k, bp, nl,
			   (const char *)ap + (size_t)m0 * k * e, k,
			   (char *)ctx->out[0].data + ((size_t)m0 * ldc + (size_t)p * nl) * e, ldc);
}

/* On main: the own block at once, then each peer's chunk c once it landed. */
static int gemm_chunks(pkb_ctx *ctx, struct state *s)
{
	const pkb_tensor *a = &ctx->in[0], *b = &ctx->in[1];
	int64_t m = a->shape[0];

	if (s->tp.fused)   /* the product was the staging; the pull wrote C */
		return 0;
	if (pkb_tp_blas_on(ctx, &s->tp) ||
	    gemm_block(ctx, s, a->data, b->data, ctx->rank, 0, m))
		return 1;
	for (int c = 0; c < s->tp.nchunk; c++) {
		int64_t r, m0 = pkb_tp_span(&s->tp, c, m, &r);
		for (int j = 1; j < ctx->world; j++) {
			int p = pkb_tp_peer(ctx, j);
			if (pkb_tp_wait(ctx, &s->tp, j, c) ||
			    gemm_block(ctx, s, (const char *)s->a_all + (size_t)p * a->bytes,
				       (const char *)s->b_all + (size_t)p * b->bytes, p, m0, r))
				return 1;
		}
	}
	return 0;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;

	/* AS and BS may be restaged after the join */
	return stage_and_meet(ctx, s) || pull_chunks(ctx, s) || gemm_chunks(ctx, s) ||
	       pkb_tp_join(ctx, &s->tp);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_tp_delete(ctx);
}
