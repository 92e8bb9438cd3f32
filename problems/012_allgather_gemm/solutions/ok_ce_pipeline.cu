/*
 * 012_allgather_gemm, candidate: all-gather of the transposed shards by the
 * copy engines, chunk by chunk, each chunk's GEMM launched as soon as it has
 * landed (async-TP / Flux "decomposition" on streams). 012 has 011's inputs
 * and output, so this is 011's ok_ce_pipeline.cu: gathering A^T instead of A
 * replaces the reference's concatenation pass over all of A (M*K elements)
 * by a transpose of the local shard (M*K/W), and makes a chunk of A's rows a
 * block of wide rows that the copy engine moves well.
 *
 * The algorithm is include/pkb_tp.cuh's pkb_tp_ag_* (layout, GEMM call,
 * napkin math and ordering are described there): a candidate cannot include
 * another problem's folder, so the code 011 and 012 share lives there once.
 * pkb_run spells the order: stage (transpose the shard into this rank's
 * block of the symmetric A^T; barrier START), pull (fork; each peer's block,
 * chunk by chunk), GEMM (chunk c once it landed from every peer), join
 * (barrier END behind every pull).
 *
 * The size rule: where one shard (M*Kl*e bytes, what each link carries) is
 * under MIN_LINK_BYTES, chunking cannot pay and the call is fused: the
 * transpose, one kernel that pulls the W-1 shards over NVLink between two
 * barriers, one GEMM -- the reference's shape of work (transpose, NCCL
 * all-gather, GEMM), so never much slower than it. Measured on 4x H200 with
 * 4 equal chunks, the pipeline cost ~48 us more than the reference at the
 * default (83 vs 35 us: 12 copies, 12 events, 4 GEMMs, 2 barriers) and still
 * lost at 8192 x 8192 (269 vs 215 us at W = 4; 011's, the same code: 231 vs
 * 217 at W = 2), where a
 * shard is 2 MiB (W = 4) or 4 MiB (W = 2). A pipeline hides about 7/8 of a
 * link's transfer (~120 GB/s): it beats its own overhead only from ~6 MiB
 * a link, hence 8 MiB. The pipeline itself: a head chunk of M/HEAD_DIV rows
 * (little exposed transfer), then the rest in NCHUNK-1 chunks (one big GEMM
 * at the default NCHUNK = 2), not 4 small GEMMs. include/pkb_tp.cuh's
 * pkb_tp_ag_* comment has the reasoning, and why the local shard's product
 * cannot go first (it would need a K-split sum of the products).
 * The fused path is compiled but has not run yet (no GPU on the branch).
 *
 * Knobs: NCHUNK (chunks of A's rows, head included, default 2), HEAD_DIV
 * (the head is M/HEAD_DIV rows, default 8; 0: equal chunks), MIN_ROWS (no
 * chunk smaller, default 256: a GEMM of fewer rows underfills the GPU),
 * MIN_LINK_BYTES (the size rule, default 8 MiB; 0: always the pipeline).
 */
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_tp.cuh"

PKB_SOLUTION;

#ifndef NCHUNK
#define NCHUNK 2
#endif
#ifndef HEAD_DIV
#define HEAD_DIV 8
#endif
#ifndef MIN_ROWS
#define MIN_ROWS 256
#endif
#ifndef MIN_LINK_BYTES
#define MIN_LINK_BYTES (8u << 20)
#endif

extern "C" int pkb_init(pkb_ctx *ctx)
{
	return pkb_tp_ag_init(ctx, NCHUNK, HEAD_DIV, MIN_ROWS, MIN_LINK_BYTES);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct pkb_tp_ag *s = (struct pkb_tp_ag *)ctx->user;

	return pkb_tp_ag_stage(ctx, s) || pkb_tp_ag_pull(ctx, s) || pkb_tp_ag_gemm(ctx, s) ||
	       pkb_tp_join(ctx, &s->tp);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_tp_delete(ctx);
}
