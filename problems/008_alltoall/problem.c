/*
 * 008_alltoall -- all-to-all with equal splits of a (W, M, N) tensor per rank.
 *
 * Every rank s holds x_s (W, M, N); slab d goes to rank d. Rank r returns
 * (W, M, N) whose slab s is x_s[r] (torch all_to_all_single, equal splits
 * along dim 0). The original filled slab d of rank s with 10*s + d, so the
 * answer was known in advance; here x_s is N(0, 1), different per rank and
 * per trial. Pure data movement: compared exactly.
 *
 * Minimum traffic per rank: (W-1) * M*N*e bytes received (and sent), 6 MiB at
 * M = N = 1024, bf16, W = 4.
 */
#include "pkb_problem.h"

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	pkb_io_input(io, "tensor", d->dtype, PKB_NORMAL(0, 1),
		     PKB_SHAPE(d->world, d->m, d->n));
	/* a copy: every element equal, as a number (docs/TOLERANCE.md) */
	pkb_io_output(io, "out", d->dtype, PKB_TOL_EXACT, PKB_SHAPE(d->world, d->m, d->n));
	return 0;
}

/* Slab s of the output is held by rank s alone, so the W-1 foreign slabs, all
 * of the output but its own, must arrive; a direct exchange with every peer
 * does it in one hop. HBM: read the input, write the output (the default).
 * No arithmetic. */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double w = d->world, bytes = (double)d->m * d->n * pkb_dtype_size(d->dtype);
	c->net_bytes = (w - 1) * bytes;
	c->note = "direct exchange with every peer";
}

const struct pkb_problem pkb_problem_008 = {
	.id = 8,
	.name = "alltoall",
	.title = "All-to-all (equal splits)",
	.category = "Collective Primitive",
	.origin = "torch.distributed all_to_all_single",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.cost = cost,
};
