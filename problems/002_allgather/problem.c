/*
 * 002_allgather -- all-gather of one (M, N) tensor per rank into (W, M, N).
 *
 * Every rank holds x_r (M, N); every rank returns the stack (W, M, N) whose
 * slab j is x_j, the same on every rank (torch all_gather_into_tensor). The
 * original filled x_r with the constant r+1, so a candidate could write j+1
 * into slab j without moving a byte; here x_r is N(0, 1), different per rank
 * and per trial. Pure data movement: compared exactly.
 *
 * Minimum traffic per rank: (W-1) * M*N*e bytes received (and sent), 6 MiB
 * at M = N = 1024, bf16, W = 4.
 */
#include "pkb_problem.h"

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	pkb_io_input(io, "tensor", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(d->m, d->n));
	/* a copy: every element equal, as a number (docs/TOLERANCE.md) */
	pkb_io_output(io, "out", d->dtype, PKB_TOL_EXACT, PKB_SHAPE(d->world, d->m, d->n));
	return 0;
}

/* Slab j of the output is rank j's input, which no other rank holds: the W-1
 * foreign slabs must all arrive, whatever the algorithm (a one-shot pull or
 * push does it in one hop, a ring in W-1). HBM: read the input, write the
 * stack (the default). No arithmetic. */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double w = d->world, bytes = (double)d->m * d->n * pkb_dtype_size(d->dtype);
	c->net_bytes = (w - 1) * bytes;
	c->note = "one-shot or ring all-gather";
}

const struct pkb_problem pkb_problem_002 = {
	.id = 2,
	.name = "allgather",
	.title = "All-gather into a stacked tensor",
	.category = "Collective Primitive",
	.origin = "torch.distributed all_gather_into_tensor",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.cost = cost,
};
