/*
 * 011_allgather_gemm_AT, candidate: all-gather of the transposed shards by
 * the copy engines, chunk by chunk, each chunk's GEMM launched as soon as it
 * has landed (async-TP / Flux "decomposition" on streams).
 *
 * The algorithm is include/pkb_tp.cuh's pkb_tp_ag_* (layout, GEMM call,
 * napkin math and ordering are described there), shared with 012, which has
 * the same inputs and output. pkb_run spells the order: stage (transpose the
 * shard into this rank's block of the symmetric A^T; barrier START), pull
 * (fork; each peer's block, chunk by chunk), GEMM (chunk c once it landed from
 * every peer), join (barrier END behind every pull).
 *
 * Knobs: NCHUNK (chunks of A's rows, default 4), MIN_ROWS (no chunk smaller,
 * default 256: a GEMM of fewer rows underfills the GPU).
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

extern "C" int pkb_init(pkb_ctx *ctx)
{
	return pkb_tp_ag_init(ctx, NCHUNK, MIN_ROWS);
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
