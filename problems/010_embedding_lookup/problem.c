/*
 * 010_embedding_lookup -- lookup in a row-sharded embedding table.
 *
 * The global table has W*M rows of N columns; rank r holds rows
 * [r*M, (r+1)*M) as local_shard. Each rank has M query ids in [0, W*M). Row
 * id i lives on rank i / M. Rank r returns an (M, N) tensor holding the rows
 * of its queries in OWNER-BUCKET order: first the rows of all its queries
 * owned by rank 0 (in query order), then those owned by rank 1, and so on --
 * the order the original's all-to-all leaves them in, not the query order.
 *
 * Minimum traffic per rank: each distinct row it needs from other ranks,
 * once, read from the owner (no ids need to travel): on average
 * (W-1)*M * (1 - (1 - 1/(W*M))^M) rows of N*e bytes received, 1.33 MiB at
 * M = N = 1024, bf16, W = 4 (0.88x the (W-1)/W * M*N*e of fetching every
 * remote query).
 */
#include "pkb_problem.h"

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->m < 1 || d->n < 1)
		return pkb_io_fail(io, "M and N must be >= 1");
	pkb_io_input(io, "indices", PKB_I64, PKB_RANDINT(0, (double)d->world * d->m),
		     PKB_SHAPE(d->m));
	pkb_io_input(io, "local_shard", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(d->m, d->n));
	/* pure data movement */
	pkb_io_output(io, "output_vectors", d->dtype, PKB_TOL_EXACT, PKB_SHAPE(d->m, d->n));
	return 0;
}

/* x^k for an integer k >= 0, by squaring (no libm) */
static double pow_int(double x, int64_t k)
{
	double r = 1;
	for (; k > 0; k >>= 1, x *= x)
		if (k & 1)
			r *= x;
	return r;
}

/*
 * Ids are uniform over the W*M rows, so each of the (W-1)*M remote rows is
 * wanted by this rank's M queries with probability 1 - (1 - 1/(W*M))^M: a
 * pull of each distinct remote row, once, receives that many on average (an
 * expectation over the ids). HBM: the ids, the output, and each row of this
 * shard that some rank wants, once (1 - (1 - 1/(W*M))^(W*M), ~63%): the
 * default would count the whole shard.
 */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double w = d->world, m = d->m, row = (double)d->n * pkb_dtype_size(d->dtype);
	double miss = 1.0 - 1.0 / (w * m);
	c->net_bytes = (w - 1) * m * (1 - pow_int(miss, d->m)) * row;
	c->hbm_bytes = m * pkb_dtype_size(PKB_I64) + m * row +
		       m * (1 - pow_int(miss, (int64_t)d->world * d->m)) * row;
	c->flops = 0;
	c->flop_kind = PKB_FLOPS_VECTOR;
	c->note = "pull each distinct remote row once";
}

const struct pkb_problem pkb_problem_010 = {
	.id = 10,
	.name = "embedding_lookup",
	.title = "Row-sharded embedding lookup via all-to-all",
	.category = "Tensor Parallel",
	.origin = "row-sharded embedding table lookup (torchrec/Megatron style) (inferred)",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.cost = cost,
};
