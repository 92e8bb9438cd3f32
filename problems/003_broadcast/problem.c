/*
 * 003_broadcast -- broadcast of rank 0's (M, N) tensor.
 *
 * Every rank holds x_r (M, N); every rank returns x_0 (torch broadcast of a
 * clone, src = 0: the original's harness passes only the tensor, so src keeps
 * its default and is not a parameter here). The original filled x_r with
 * r+1, so every output was all ones; here x_r is N(0, 1), different per rank
 * and per trial, so a non-root rank cannot guess what rank 0 holds. Pure data
 * movement: compared exactly.
 *
 * Minimum traffic: rank 0 sends M*N*e bytes once (a relay among the other
 * ranks spreads the rest), every other rank receives M*N*e: 2 MiB at
 * M = N = 1024, bf16.
 */
#include "pkb_problem.h"

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	pkb_io_input(io, "tensor", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(d->m, d->n));
	/* a copy: every element equal, as a number (docs/TOLERANCE.md) */
	pkb_io_output(io, "out", d->dtype, PKB_TOL_EXACT, PKB_SHAPE(d->m, d->n));
	return 0;
}

/* Every rank's busier direction carries at least M*N*e bytes: a non-root
 * rank must receive rank 0's tensor, and rank 0 must send it at least once.
 * Rank 0 sending one part to each peer, which then exchange their parts,
 * meets that on every rank. HBM: rank 0 reads its input and writes its
 * output; the other ranks' inputs take no part, so they need only write the
 * output. No arithmetic. */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double bytes = (double)d->m * d->n * pkb_dtype_size(d->dtype);
	c->net_bytes = bytes;   /* the root sends it once, the others receive it */
	if (d->rank != 0)
		c->hbm_bytes = bytes;
	c->note = "scatter from rank 0 + all-gather";
}

const struct pkb_problem pkb_problem_003 = {
	.id = 3,
	.name = "broadcast",
	.title = "Broadcast from rank 0",
	.category = "Collective Primitive",
	.origin = "torch.distributed broadcast",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.cost = cost,
};
