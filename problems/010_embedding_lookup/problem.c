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
 * Minimum traffic per rank: the rows it needs from other ranks, on average
 * (W-1)/W * M*N*e bytes received (1.5 MiB at M = N = 1024, bf16, W = 4), plus
 * the query ids.
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

const struct pkb_problem pkb_problem_010 = {
	.id = 10,
	.name = "embedding_lookup",
	.title = "Row-sharded embedding lookup via all-to-all",
	.category = "Tensor Parallel",
	.origin = "row-sharded embedding table lookup (torchrec/Megatron style) (inferred)",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
};
