/*
 * 034_ulysses_all_gather_into_tensor_primitive -- the Ulysses
 * all_gather_tensor primitive (DeepSpeed-Ulysses / VeOmni): an all-gather
 * along dim 0 into one tensor.
 *
 * Every rank holds x_r (M, N); every rank returns, the same on all ranks,
 *     out = [x_0; x_1; ...; x_{W-1}]        (W*M, N)
 * (all_gather_into_tensor). The original's `group` (None: the world) is no
 * parameter: pkb always uses the world. Pure data movement: compared
 * exactly.
 *
 * Minimum traffic per rank: (W-1) * M*N*e bytes received (and sent), 6 MiB
 * at M = N = 1024, bf16, W = 4.
 */
#include "pkb_problem.h"

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->m < 1 || d->n < 1)
		return pkb_io_fail(io, "M and N must be >= 1");
	pkb_io_input(io, "x", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(d->m, d->n));
	/* a copy: every element equal, as a number (docs/TOLERANCE.md) */
	pkb_io_output(io, "out", d->dtype, PKB_TOL_EXACT, PKB_SHAPE(d->world * d->m, d->n));
	return 0;
}

/* Rows [j*M, (j+1)*M) of the output are rank j's input, which no other rank
 * holds: the W-1 foreign blocks must all arrive, whatever the algorithm (a
 * one-shot pull or push does it in one hop, a ring in W-1). HBM: read the
 * input, write the gathered output (the default). No arithmetic. */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double w = d->world, bytes = (double)d->m * d->n * pkb_dtype_size(d->dtype);
	c->net_bytes = (w - 1) * bytes;
	c->note = "one-shot or ring all-gather";
}

const struct pkb_problem pkb_problem_034 = {
	.id = 34,
	.name = "ulysses_all_gather_into_tensor_primitive",
	.title = "Ulysses all-gather primitive (dim 0)",
	.category = "Context Parallel",
	.origin = "DeepSpeed-Ulysses / VeOmni all_gather_tensor (inferred)",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.cost = cost,
};
