/*
 * 006_gather -- gather of one (M, N) tensor per rank to rank 0.
 *
 * Every rank holds x_r (M, N). Rank 0 returns the stack (W, M, N) whose slab
 * j is x_j; every other rank returns its own x_r (the original returns the
 * input tensor itself), so output shapes differ by rank. dst = 0 is the
 * original's default and is not passed, so it is not a parameter here. The
 * original filled x_r with r+1; here x_r is N(0, 1), different per rank and
 * per trial. Pure data movement: compared exactly.
 *
 * Minimum traffic: rank 0 receives (W-1) * M*N*e bytes, each other rank
 * sends M*N*e: 6 MiB into rank 0 at M = N = 1024, bf16, W = 4.
 */
#include "pkb_problem.h"

#define DST 0

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	pkb_io_input(io, "tensor", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(d->m, d->n));
	/* a copy: every element equal, as a number (docs/TOLERANCE.md) */
	if (d->rank == DST)
		pkb_io_output(io, "out", d->dtype, PKB_TOL_EXACT,
			      PKB_SHAPE(d->world, d->m, d->n));
	else
		pkb_io_output(io, "out", d->dtype, PKB_TOL_EXACT, PKB_SHAPE(d->m, d->n));
	return 0;
}

/* Rank 0 must receive the W-1 slabs it does not hold, (W-1) * M*N*e bytes,
 * and need send nothing; a non-root rank must send its slab, M*N*e, and need
 * receive nothing. Direct sends meet both; rank 0's incoming link is the
 * bottleneck. HBM: the default (a non-root rank reads its input and writes its
 * copy; rank 0 reads its input and writes the stack). No arithmetic. */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double w = d->world, bytes = (double)d->m * d->n * pkb_dtype_size(d->dtype);
	/* the root receives W-1 slabs, the others send one */
	c->net_bytes = d->rank == DST ? (w - 1) * bytes : bytes;
	c->note = "direct sends to rank 0";
}

const struct pkb_problem pkb_problem_006 = {
	.id = 6,
	.name = "gather",
	.title = "Gather to rank 0",
	.category = "Collective Primitive",
	.origin = "torch.distributed gather",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.cost = cost,
};
