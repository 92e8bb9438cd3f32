/*
 * 004_reduce -- sum reduce of one (M, N) tensor per rank to rank dst = 0.
 *
 * Every rank holds x_r (M, N). The original clones x_r and runs
 * torch.distributed.reduce(SUM, dst) on the clone: rank dst returns
 * sum_r x_r, every other rank returns its own x_r untouched (NCCL writes the
 * receive buffer on the root only). The original filled x_r with r+1; here
 * x_r is N(0, 1), different per rank and per trial. The original's harness
 * passes dst = 0 as a second positional argument: the parameter "dst".
 *
 * Tolerance: the root's output is a sum of W rounded terms that the reference
 * (NCCL) adds in its own order, with a rounding after every add; a candidate
 * may add in any order or in fp32 -> PKB_TOL_SUM(W). The other ranks' outputs
 * are copies -> exact.
 *
 * Minimum traffic: the root receives M*N*e bytes (a chain or a reduce-scatter
 * among the others folds the rest on the way) and every other rank sends
 * M*N*e: 2 MiB in each rank's busier direction at M = N = 1024, bf16.
 */
#include "pkb_problem.h"

#define DST 0

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	pkb_io_input(io, "tensor", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(d->m, d->n));
	pkb_io_param(io, "dst", DST);
	pkb_io_output(io, "out", d->dtype,
		      d->rank == DST ? PKB_TOL_SUM(d->world) : PKB_TOL_EXACT,
		      PKB_SHAPE(d->m, d->n));
	return 0;
}

/* M*N*e bytes must reach the root (its output, given its own input, takes
 * every value as the others' inputs vary) and must leave every other rank
 * (its input changes the root's output), so each rank's busier direction
 * carries at least that; a pipelined chain into the root meets it on every
 * rank. W-1 additions an element, spread over the ranks: (W-1)/W * M*N each.
 * HBM: every rank reads its input and writes its output. */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double w = d->world, bytes = (double)d->m * d->n * pkb_dtype_size(d->dtype);
	c->net_bytes = bytes;   /* the root receives n, every other rank sends n */
	c->flops = (w - 1) / w * d->m * d->n;
	c->flop_kind = PKB_FLOPS_VECTOR;
	c->note = "pipelined chain into the root";
}

const struct pkb_problem pkb_problem_004 = {
	.id = 4,
	.name = "reduce",
	.title = "Reduce (sum) to rank 0",
	.category = "Collective Primitive",
	.origin = "torch.distributed reduce",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.cost = cost,
};
