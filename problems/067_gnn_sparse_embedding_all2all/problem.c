/*
 * 067_gnn_sparse_embedding_all2all -- route sparse (index, value) rows to
 * the rank that owns the index: the exchange of a distributed sparse
 * embedding gradient (inferred).
 *
 * Rank r holds nnz entries: idx (nnz,) int64 in [0, num_nodes) and value
 * (nnz, hidden) in T. Entry i belongs to rank idx[i] % W. Each rank stably
 * sorts its entries by owner and sends every owner its group; rank r
 * returns what it receives, by source rank and, within a source, in the
 * source's order:
 *     recv_idx   = [idx_s[i] for s = 0 .. W-1 for i in order if idx_s[i] % W == r]
 *     recv_value = the rows value_s[i] of the same entries.
 * num_nodes is the original's scalar (not otherwise used).
 *
 * Sizes as the original: nnz = clamp(M/W, 1024, 50000), num_nodes =
 * roundup(max(10^5, M), W), hidden = clamp(N, 8, 128). R, the count a rank
 * receives, depends on the data and shapes cannot: no rank sends another
 * more than P = 2 ceil(nnz/W) entries (gen_host redraws the ids, the same
 * way on every rank, until that holds: twice the mean, so all but never),
 * and the outputs are (W P,) and (W P, hidden), the received entries
 * first, then idx -1 and value rows of 0.
 *
 * Minimum traffic per rank: receive (and send) the (W-1)/W of nnz entries
 * that change rank on average: an int64 and a row each.
 */
#include <stdlib.h>
#include "pkb_problem.h"
#include "ids_host.h"   /* defines: ids_stream, ids_draw */

static int64_t entries(const struct pkb_dims *d)
{
	int64_t n = d->m / d->world;
	return n < 1024 ? 1024 : n > 50000 ? 50000 : n;
}

static int64_t num_nodes(const struct pkb_dims *d)
{
	int64_t n = d->m > 100000 ? d->m : 100000;
	return (n + d->world - 1) / d->world * d->world;
}

static int64_t hidden(const struct pkb_dims *d)
{
	return d->n < 8 ? 8 : d->n > 128 ? 128 : d->n;
}

/* the most entries one rank sends another */
static int64_t pair_cap(const struct pkb_dims *d)
{
	return 2 * ((entries(d) + d->world - 1) / d->world);
}

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->dtype != PKB_BF16 && d->dtype != PKB_FP16 && d->dtype != PKB_FP32)
		return pkb_io_fail(io, "dtype must be bf16, fp16 or fp32");
	if (d->m < 1 || d->n < 1)
		return pkb_io_fail(io, "M and N must be >= 1");
	int64_t nnz = entries(d), h = hidden(d), r = d->world * pair_cap(d);
	/* an index set: gen_host */
	pkb_io_input(io, "idx", PKB_I64, PKB_HOSTGEN, PKB_SHAPE(nnz));
	pkb_io_input(io, "value", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(nnz, h));
	pkb_io_param(io, "num_nodes", (double)num_nodes(d));
	/* entries moved, never computed: exact */
	pkb_io_output(io, "recv_idx", PKB_I64, PKB_TOL_EXACT, PKB_SHAPE(r));
	pkb_io_output(io, "recv_value", d->dtype, PKB_TOL_EXACT, PKB_SHAPE(r, h));
	return 0;
}

/*
 * idx: uniform in [0, num_nodes), the original's randint (ids_draw: every
 * rank draws every rank's ids and counts what each sends each owner,
 * cyclic here: id mod W); an attempt where some count passes P is thrown away (the same on
 * every rank). With a mean of nnz/W >= 16 a pair, P = 2x the mean: at
 * W = 63, nnz = 1024 a pair passes it with probability 4e-5 and one
 * attempt in seven is redrawn; at W <= 8, never in practice (P = nnz at
 * W = 2).
 */
static int gen_host(const struct pkb_dims *d, int index, uint64_t seed, void *buf, size_t bytes)
{
	(void)seed;
	int64_t nnz = entries(d), nodes = num_nodes(d), cap = pair_cap(d);
	if (index != 0 || bytes != (size_t)nnz * sizeof(int64_t))
		return -1;
	return ids_draw(d, (int64_t *)buf, nnz, nodes, cap, 0);
}

/*
 * (W-1)/W of a rank's entries go to peers, and as many arrive, on
 * average: an int64 id and a row of hidden*e bytes each. HBM: the default
 * (ids, values, the outputs beyond L2). No arithmetic.
 */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double w = d->world;
	c->net_bytes = (w - 1) / w * entries(d) * (8.0 + hidden(d) * pkb_dtype_size(d->dtype));
	c->flops = 0;
	c->flop_kind = PKB_FLOPS_VECTOR;
	c->note = "each entry to its owner, once";
}

const struct pkb_problem pkb_problem_067 = {
	.id = 67,
	.name = "gnn_sparse_embedding_all2all",
	.title = "Route sparse (index, value) rows to owner rank",
	.category = "Graph Parallel",
	.origin = "distributed sparse embedding gradient exchange (inferred)",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.gen_host = gen_host,
	.cost = cost,
};
