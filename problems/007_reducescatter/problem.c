/*
 * 007_reducescatter -- sum reduce-scatter of a (W*M, N) tensor per rank.
 *
 * Every rank holds x_r (W*M, N), seen as W chunks of M rows. Rank r returns
 * sum_p x_p[r*M : (r+1)*M] (M, N) (torch reduce_scatter_tensor, SUM, along
 * dim 0). The original filled x_r with r+1, so every output was W(W+1)/2;
 * here x_r is N(0, 1), different per rank and per trial.
 *
 * Tolerance: a sum of W rounded terms that the reference (NCCL) adds in its
 * own order, rounding after every add; a candidate may add in any order or
 * in fp32 -> PKB_TOL_SUM(W).
 *
 * Minimum traffic per rank: (W-1) * M*N*e bytes sent (and received, on
 * average over the ranks), 6 MiB at M = N = 1024, bf16, W = 4.
 */
#include "pkb_problem.h"

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	pkb_io_input(io, "tensor", d->dtype, PKB_NORMAL(0, 1),
		     PKB_SHAPE((int64_t)d->world * d->m, d->n));
	pkb_io_output(io, "out", d->dtype, PKB_TOL_SUM(d->world), PKB_SHAPE(d->m, d->n));
	return 0;
}

/* Each of a rank's W-1 foreign chunks feeds a different output, so it must
 * send (W-1) * M*N*e bytes however the peers pre-reduce. One rank could
 * receive less (its chunk pre-reduced by the others, M*N*e), but the ranks
 * together receive what they send, so the busiest receives at least
 * (W-1) * M*N*e: the bound given to every rank. Likewise W-1 additions per
 * output element, (W-1) * M*N per rank. HBM: the default (read the input,
 * write the chunk). */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double w = d->world, bytes = (double)d->m * d->n * pkb_dtype_size(d->dtype);
	c->net_bytes = (w - 1) * bytes;
	c->flops = (w - 1) * d->m * d->n;
	c->flop_kind = PKB_FLOPS_VECTOR;
	c->note = "one-shot or ring reduce-scatter";
}

const struct pkb_problem pkb_problem_007 = {
	.id = 7,
	.name = "reducescatter",
	.title = "Reduce-scatter (sum)",
	.category = "Collective Primitive",
	.origin = "torch.distributed reduce_scatter_tensor",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.cost = cost,
};
