/*
 * 005_scatter -- scatter of rank 0's (W, M, N) tensor, slab j to rank j.
 *
 * Rank 0 holds x (W, M, N); every other rank holds an (M, N) tensor whose
 * content does not matter (the original clones it and lets the scatter
 * overwrite the clone). Rank r returns x[r] (M, N); rank 0 returns its own
 * slab 0. Input shapes differ by rank. src = 0 is the original's default and
 * is not passed, so it is not a parameter here. The original filled slab i
 * with i+1 and the other ranks with zeros; here every input is N(0, 1),
 * different per rank and per trial. Pure data movement: compared exactly.
 *
 * Minimum traffic: rank 0 sends (W-1) * M*N*e bytes, each other rank
 * receives M*N*e: 6 MiB out of rank 0 at M = N = 1024, bf16, W = 4.
 */
#include "pkb_problem.h"

#define SRC 0

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->rank == SRC)
		pkb_io_input(io, "tensor", d->dtype, PKB_NORMAL(0, 1),
			     PKB_SHAPE(d->world, d->m, d->n));
	else
		pkb_io_input(io, "tensor", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(d->m, d->n));
	/* a copy: every element equal, as a number (docs/TOLERANCE.md) */
	pkb_io_output(io, "out", d->dtype, PKB_TOL_EXACT, PKB_SHAPE(d->m, d->n));
	return 0;
}

/* Rank 0 must send the W-1 slabs it does not keep, (W-1) * M*N*e bytes, and
 * receives nothing; a non-root rank must receive its slab, M*N*e, and need
 * send nothing. Direct sends meet both; rank 0's outgoing link is the
 * bottleneck. HBM: rank 0 reads its whole input and writes slab 0 (the
 * default); a non-root rank's input takes no part, so it need only write its
 * output. No arithmetic. */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double bytes = (double)d->m * d->n * pkb_dtype_size(d->dtype);
	/* the root sends W-1 slabs, the others receive one */
	c->net_bytes = d->rank == SRC ? (d->world - 1) * bytes : bytes;
	if (d->rank != SRC)
		c->hbm_bytes = bytes;
	c->note = "direct sends from rank 0";
}

const struct pkb_problem pkb_problem_005 = {
	.id = 5,
	.name = "scatter",
	.title = "Scatter from rank 0",
	.category = "Collective Primitive",
	.origin = "torch.distributed scatter",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.cost = cost,
};
