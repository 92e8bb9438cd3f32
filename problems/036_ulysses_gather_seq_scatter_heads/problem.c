/*
 * 036_ulysses_gather_seq_scatter_heads -- the Ulysses all-to-all before
 * attention (DeepSpeed-Ulysses / VeOmni gather_seq_scatter_heads): from
 * sequence shards with every head to the whole sequence with a group of
 * heads.
 *
 * B = max(1, M/64) sequences, T = max(1, N/64) local positions, 8 heads of
 * 64, G = 8/W heads a rank. Rank s holds x_s (B, T, 8, 64); its heads are
 * cut into W groups of G (torch.tensor_split along head_dim 2), group d goes
 * to rank d, and rank r concatenates what it receives along seq_dim 1:
 *     out_r[b, j*T + t, g, :] = x_j[b, t, r*G + g, :]      out_r (B, W*T, G, 64)
 * so rank j's positions sit at [j*T, (j+1)*T) of every sequence b, and a
 * rank's block is not contiguous in the output unless B = 1.
 * unpadded_dim_size = 0: nothing is cut off after the exchange. The
 * original's `group` (None: the world) is no parameter. Pure data
 * movement: compared exactly.
 *
 * Minimum traffic per rank: (W-1)/W * B*T*512*e bytes received (and sent),
 * 192 KiB at M = N = 1024, bf16, W = 4.
 */
#include "pkb_problem.h"
#include "heads_host.h"   /* defines: heads_check, heads_batch, heads_tokens */

#define HEADS 8
#define HDIM 64

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (heads_check(d, io) < 0)
		return -1;
	int64_t b = heads_batch(d), t = heads_tokens(d);
	int64_t w = d->world;
	pkb_io_input(io, "x", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(b, t, HEADS, HDIM));
	pkb_io_param(io, "seq_dim", 1);
	pkb_io_param(io, "head_dim", 2);
	pkb_io_param(io, "unpadded_dim_size", 0);
	/* a copy: every element equal, as a number (docs/TOLERANCE.md) */
	pkb_io_output(io, "out", d->dtype, PKB_TOL_EXACT, PKB_SHAPE(b, w * t, HEADS / w, HDIM));
	return 0;
}

/* Head group j of rank r's output comes from rank j alone: the W-1 foreign
 * groups must arrive (and the W-1 groups for the peers leave), one hop each
 * in a direct exchange. HBM: read the input, write the output (the
 * default). No arithmetic. */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	int64_t b = heads_batch(d), t = heads_tokens(d);
	double w = d->world, bytes = (double)b * t * HEADS * HDIM * pkb_dtype_size(d->dtype);
	c->net_bytes = (w - 1) / w * bytes;
	c->note = "direct exchange with every peer";
}

const struct pkb_problem pkb_problem_036 = {
	.id = 36,
	.name = "ulysses_gather_seq_scatter_heads",
	.title = "Ulysses gather-sequence / scatter-heads all-to-all",
	.category = "Context Parallel",
	.origin = "DeepSpeed-Ulysses / VeOmni gather_seq_scatter_heads (inferred)",
	.worlds = PKB_WORLD(2) | PKB_WORLD(4) | PKB_WORLD(8),
	.describe = describe,
	.cost = cost,
};
