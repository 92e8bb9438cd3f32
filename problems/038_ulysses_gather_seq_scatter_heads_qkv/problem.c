/*
 * 038_ulysses_gather_seq_scatter_heads_qkv -- the Ulysses all-to-all of a
 * packed QKV projection (VeOmni gather_seq_scatter_heads_qkv): 036's
 * exchange on q, k and v at once, straight from the fused projection.
 *
 * B = max(1, M/64) sequences, T = max(1, N/64) local positions; a position
 * holds q, k, v of 8 heads of 64, 3*512 = 1536 values. Rank s holds
 * qkv_s (B, T, 1536), viewed as (B, T, 3, 512); the last dim of that view
 * (512) is cut into W chunks of C = 512/W (G = 8/W heads), chunk d goes to
 * rank d, and rank r concatenates what it receives along seq_dim 1, then
 * views the result back (restore_shape) as (B, W*T, 1536/W):
 *     out_r[b, j*T + t, i*C + c] = qkv_j[b, t, i*512 + r*C + c]
 * for i = 0, 1, 2 (q, k, v) and c < C: each of q, k and v is split by heads
 * separately, so a rank's 1536/W values of a position are three runs of C,
 * not one run of 1536/W. unpadded_dim_size = 0 (the original's None):
 * nothing is cut off after the exchange. The original's `group` (None: the
 * world) is no parameter. Pure data movement: compared exactly.
 *
 * Minimum traffic per rank: (W-1)/W * B*T*1536*e bytes received (and sent),
 * 576 KiB at M = N = 1024, bf16, W = 4.
 */
#include "pkb_problem.h"
#include "heads_host.h"   /* defines: heads_check, heads_batch, heads_tokens */

#define QKV 1536   /* 3 * 8 heads * 64 */

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (heads_check(d, io) < 0)
		return -1;
	int64_t b = heads_batch(d), t = heads_tokens(d);
	int64_t w = d->world;
	pkb_io_input(io, "qkv_tensor", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(b, t, QKV));
	pkb_io_param(io, "seq_dim", 1);
	pkb_io_param(io, "unpadded_dim_size", 0);
	pkb_io_param(io, "restore_shape", 1);
	/* a copy: every element equal, as a number (docs/TOLERANCE.md) */
	pkb_io_output(io, "out", d->dtype, PKB_TOL_EXACT, PKB_SHAPE(b, w * t, QKV / w));
	return 0;
}

/* Head group j of q, k and v in rank r's output comes from rank j alone:
 * the W-1 foreign groups must arrive (and the W-1 groups for the peers
 * leave), one hop each in a direct exchange. HBM: read the input, write
 * the output (the default). No arithmetic. */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	int64_t b = heads_batch(d), t = heads_tokens(d);
	double w = d->world, bytes = (double)b * t * QKV * pkb_dtype_size(d->dtype);
	c->net_bytes = (w - 1) / w * bytes;
	c->note = "direct exchange with every peer";
}

const struct pkb_problem pkb_problem_038 = {
	.id = 38,
	.name = "ulysses_gather_seq_scatter_heads_qkv",
	.title = "Ulysses all-to-all on a packed QKV projection",
	.category = "Context Parallel",
	.origin = "VeOmni gather_seq_scatter_heads_qkv (inferred)",
	.worlds = PKB_WORLD(2) | PKB_WORLD(4) | PKB_WORLD(8),
	.describe = describe,
	.cost = cost,
};
