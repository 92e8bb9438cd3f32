/*
 * 065_gnn_feature_exchange_all2all -- a GNN's halo feature exchange: each
 * rank gathers feature rows by index and sends chunks of them to the other
 * ranks through an all-to-all whose chunk lists are rotated by the rank
 * (DGL / PyG style, inferred). 066 is its backward.
 *
 * rpp = clamp(M/W, 64, 1024) rows a peer, hidden = clamp(N, 8, 128),
 * total = W rpp, n_f = max(1, 3 total / 4). Rank r holds local_features
 * (n_f, hidden) in T and seed_inverse_ids (total,) int64 in [0, n_f):
 *     gathered_r = local_features_r[seed_inverse_ids_r]          (total, hidden)
 * Both gathered (split by counts_received) and the output (split by
 * counts_sent), W chunks of rpp rows, are rotated right by the rank before
 * a list all_to_all: rank j sends gathered_j chunk (d - j) mod W to rank d,
 * which stores it as its output chunk (j - d) mod W. So
 *     out_j[chunk c] = gathered_{(j+c) mod W}[chunk (-c) mod W]    (total, hidden)
 * counts_sent = counts_received = [rpp] * W, as the original (one
 * parameter each: the common value).
 *
 * Minimum traffic per rank: receive W-1 chunks of rpp rows (the rows of
 * chunk 0 come from this rank): (W-1) rpp hidden e bytes, 192 KiB at the
 * default (W = 4, bf16).
 */
#include "pkb_problem.h"

static int64_t rows_per_peer(const struct pkb_dims *d)
{
	int64_t r = d->m / d->world;
	return r < 64 ? 64 : r > 1024 ? 1024 : r;
}

static int64_t hidden(const struct pkb_dims *d)
{
	return d->n < 8 ? 8 : d->n > 128 ? 128 : d->n;
}

static int64_t feature_rows(const struct pkb_dims *d)
{
	int64_t f = rows_per_peer(d) * d->world * 3 / 4;
	return f > 1 ? f : 1;
}

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->dtype != PKB_BF16 && d->dtype != PKB_FP16 && d->dtype != PKB_FP32)
		return pkb_io_fail(io, "dtype must be bf16, fp16 or fp32");
	if (d->m < 1 || d->n < 1)
		return pkb_io_fail(io, "M and N must be >= 1");
	int64_t rpp = rows_per_peer(d), total = rpp * d->world, h = hidden(d);
	pkb_io_input(io, "local_features", d->dtype, PKB_NORMAL(0, 1),
		     PKB_SHAPE(feature_rows(d), h));
	/* an index set: gen_host */
	pkb_io_input(io, "seed_inverse_ids", PKB_I64, PKB_HOSTGEN, PKB_SHAPE(total));
	pkb_io_param(io, "counts_sent", (double)rpp);
	pkb_io_param(io, "counts_received", (double)rpp);
	/* rows gathered and moved, never computed: exact */
	pkb_io_output(io, "out", d->dtype, PKB_TOL_EXACT, PKB_SHAPE(total, h));
	return 0;
}

/* seed_inverse_ids: uniform in [0, n_f), as the original's randint; per
 * rank (the seed has the rank in it) */
static int gen_host(const struct pkb_dims *d, int index, uint64_t seed, void *buf, size_t bytes)
{
	int64_t total = rows_per_peer(d) * d->world, nf = feature_rows(d);
	if (index != 1 || bytes != (size_t)total * sizeof(int64_t))
		return -1;
	uint64_t s = seed;
	for (int64_t i = 0; i < total; i++)
		((int64_t *)buf)[i] = (int64_t)(pkb_rng_next(&s) % (uint64_t)nf);
	return 0;
}

/*
 * Receive W-1 chunks of rpp rows; a row is needed once per id that names
 * it, and ids within a chunk rarely repeat (rpp of 3 W rpp / 4 rows), so no
 * smaller volume is counted. HBM: the default (features, ids, output).
 * No arithmetic.
 */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	c->net_bytes = (double)(d->world - 1) * rows_per_peer(d) * hidden(d) *
		       pkb_dtype_size(d->dtype);
	c->flops = 0;
	c->flop_kind = PKB_FLOPS_VECTOR;
	c->note = "W-1 chunks of gathered rows received";
}

const struct pkb_problem pkb_problem_065 = {
	.id = 65,
	.name = "gnn_feature_exchange_all2all",
	.title = "GNN feature gather + rotated all-to-all",
	.category = "Graph Parallel",
	.origin = "distributed GNN halo feature exchange, DGL / PyG style (inferred)",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.gen_host = gen_host,
	.cost = cost,
};
