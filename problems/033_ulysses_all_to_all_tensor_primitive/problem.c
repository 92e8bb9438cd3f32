/*
 * 033_ulysses_all_to_all_tensor_primitive -- the Ulysses all_to_all_tensor
 * primitive (DeepSpeed-Ulysses / VeOmni) with scatter_dim 0, gather_dim 1.
 *
 * Every rank s holds x_s (M, N). Its rows are cut into W chunks of M/W
 * (torch.tensor_split along dim 0); chunk d goes to rank d (all_to_all, list
 * API), and rank r concatenates what it receives along the columns:
 *     out_r[i, j*N + c] = x_j[r*M/W + i, c]        out_r (M/W, W*N)
 * so row i of rank r's output is row r*M/W + i of every rank, side by side
 * in rank order. The original's `group` (None: the world) is no parameter:
 * pkb always uses the world. Pure data movement: compared exactly.
 *
 * W must divide M: with uneven chunks the original's receive buffers (all
 * shaped like chunk 0) would not match what the peers send.
 *
 * Minimum traffic per rank: (W-1)/W * M*N*e bytes received (and sent),
 * 1.5 MiB at M = N = 1024, bf16, W = 4.
 */
#include "pkb_problem.h"

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->m < 1 || d->n < 1)
		return pkb_io_fail(io, "M and N must be >= 1");
	if (d->m % d->world != 0)
		return pkb_io_fail(io, "W must divide M (the rows are split into W equal chunks)");
	pkb_io_input(io, "x", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(d->m, d->n));
	pkb_io_param(io, "scatter_dim", 0);
	pkb_io_param(io, "gather_dim", 1);
	/* a copy: every element equal, as a number (docs/TOLERANCE.md) */
	pkb_io_output(io, "out", d->dtype, PKB_TOL_EXACT,
		      PKB_SHAPE(d->m / d->world, d->world * d->n));
	return 0;
}

/* Chunk j of rank r's output is held by rank j alone: the W-1 foreign chunks
 * of M/W rows must arrive (and the W-1 chunks for the peers leave), one hop
 * each in a direct exchange. HBM: read the input, write the output (the
 * default). No arithmetic. */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double w = d->world, bytes = (double)d->m * d->n * pkb_dtype_size(d->dtype);
	c->net_bytes = (w - 1) / w * bytes;
	c->note = "direct exchange with every peer";
}

const struct pkb_problem pkb_problem_033 = {
	.id = 33,
	.name = "ulysses_all_to_all_tensor_primitive",
	.title = "Ulysses all-to-all primitive (scatter rows, gather columns)",
	.category = "Context Parallel",
	.origin = "DeepSpeed-Ulysses / VeOmni all_to_all_tensor (inferred)",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.cost = cost,
};
