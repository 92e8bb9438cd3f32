/*
 * 064_gnn_neighbor_sampling -- distributed 2-hop neighbour sampling: every
 * node's neighbour list lives on the rank that owns it, and each rank grows
 * its seeds' sampled neighbourhood by asking the owners (a PyG /
 * GraphLearn-style distributed sampler, inferred).
 *
 * A graph of nn nodes in CSC form: node v's in-neighbours are
 * col[colptr[v] .. colptr[v+1]), edge ids their positions. node_to_rank[v]
 * owns v. Every rank holds colptr and node_to_rank whole, but in its
 * local_adj_col only the lists of the nodes it owns are real: the rest is
 * filler (random ids, different per rank). Rank r holds S distinct seeds.
 * For each hop h with fanout k_h (10, then 5), over the frontier src (the
 * seeds, then the nodes the last hop discovered):
 *     for each v of src, in order: take the FIRST min(k_h, deg v)
 *         neighbours of v (from v's owner), their edge ids colptr[v] + j,
 *         and v as their destination: out_node, out_edge, out_dst;
 *     the values of out_node not yet in `node`, in order of first
 *         occurrence, are appended to node and form the next src.
 * Then row = the index in node of each sampled neighbour, col = the index
 * in node of its destination (hop 1's edges, then hop 2's), and edge = the
 * edge ids. Returns (node, row, col, edge), int64.
 *
 * The original sends each frontier node to its owner, which samples and
 * replies (several all_to_all_single calls a hop, host-side splits); the
 * requester restores its frontier order, so the result is the one above.
 * Its graph is the same ring on every rank (v+1 .. v+16 mod nn, owner
 * v % W): a rank could sample without the owners, or without reading the
 * graph at all. Here the graph is random (gen_host, from d->common_seed:
 * the same on every rank, new per trial and --seed): in-degrees skewed
 * (0 to thousands; about half below 10 and an eighth below 5, so that
 * min(k, deg) matters), neighbours uniform, owners uniform, and each rank holds
 * only its own nodes' lists.
 *
 * U and E depend on the data and shapes cannot: node is (S (1 + k1 +
 * k1 k2),) and row, col, edge are (S (k1 + k1 k2),), the most a sample can
 * hold; entries past U (past E) are -1.
 *
 * Sizes as the original: nn = roundup(clamp(M, 10^4, 10^5), W), 16 nn
 * edges, S = clamp(N/W, 512, 2048).
 */
#include <stdlib.h>
#include <string.h>
#include "pkb_problem.h"

#define DEGREE 16            /* edges per node on average, as the original */
#define HOPS 2
static const int64_t fanout[HOPS] = { 10, 5 };

static int64_t num_nodes(const struct pkb_dims *d)
{
	int64_t n = d->m < 10000 ? 10000 : d->m > 100000 ? 100000 : d->m;
	return (n + d->world - 1) / d->world * d->world;
}

static int64_t seeds(const struct pkb_dims *d)
{
	int64_t s = d->n / d->world;
	return s < 512 ? 512 : s > 2048 ? 2048 : s;
}

/* the most edges (nodes past the seeds) a sample can hold */
static int64_t max_edges(const struct pkb_dims *d)
{
	int64_t e = 0, front = seeds(d);
	for (int h = 0; h < HOPS; h++) {
		front *= fanout[h];
		e += front;
	}
	return e;
}

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->m < 1 || d->n < 1)
		return pkb_io_fail(io, "M and N must be >= 1");
	int64_t nn = num_nodes(d), s = seeds(d), e = max_edges(d);
	/* structured inputs, all from gen_host */
	pkb_io_input(io, "seed_nodes", PKB_I64, PKB_HOSTGEN, PKB_SHAPE(s));
	pkb_io_param(io, "fanouts_0", (double)fanout[0]);
	pkb_io_param(io, "fanouts_1", (double)fanout[1]);
	pkb_io_input(io, "local_adj_row_ptr", PKB_I64, PKB_HOSTGEN, PKB_SHAPE(nn + 1));
	pkb_io_input(io, "local_adj_col", PKB_I64, PKB_HOSTGEN, PKB_SHAPE(DEGREE * nn));
	pkb_io_input(io, "node_to_rank", PKB_I64, PKB_HOSTGEN, PKB_SHAPE(nn));
	pkb_io_param(io, "replace", 0);
	/* ids and indices, selected and moved, never computed: exact */
	pkb_io_output(io, "node", PKB_I64, PKB_TOL_EXACT, PKB_SHAPE(s + e));
	pkb_io_output(io, "row", PKB_I64, PKB_TOL_EXACT, PKB_SHAPE(e));
	pkb_io_output(io, "col", PKB_I64, PKB_TOL_EXACT, PKB_SHAPE(e));
	pkb_io_output(io, "edge", PKB_I64, PKB_TOL_EXACT, PKB_SHAPE(e));
	return 0;
}

/* ---- the graph ---------------------------------------------------------------- */

/*
 * The graph every rank agrees on, from d->common_seed: colptr (nn+1), the
 * true neighbour lists col (16 nn) and owner (nn). Edge e's destination is
 * node perm[floor(u^3 nn)]: in-degree about (16/3) x^(-2/3) at rank x in
 * (0, 1] of a random order of the nodes -- hubs of thousands, and half the
 * nodes Poisson around 5.3 to 10 (54% below 10, 12% below 5, measured). Neighbours and owners uniform.
 * Any of the three may be NULL.
 */
static int graph(const struct pkb_dims *d, int64_t *colptr, int64_t *col, int64_t *owner)
{
	int64_t nn = num_nodes(d), ne = DEGREE * nn;
	int64_t *perm = malloc((size_t)nn * sizeof *perm);
	int64_t *deg = calloc((size_t)nn + 1, sizeof *deg);
	if (!perm || !deg) {
		free(perm);
		free(deg);
		return -1;
	}
	uint64_t s = d->common_seed;
	for (int64_t v = 0; v < nn; v++)
		perm[v] = v;
	for (int64_t v = nn - 1; v > 0; v--) {
		int64_t k = (int64_t)(pkb_rng_next(&s) % (uint64_t)(v + 1)), t = perm[v];
		perm[v] = perm[k];
		perm[k] = t;
	}
	for (int64_t e = 0; e < ne; e++) {
		double u = pkb_rng_unit(pkb_rng_next(&s));
		int64_t x = (int64_t)(u * u * u * (double)nn);
		deg[perm[x < nn ? x : nn - 1]]++;
	}
	int64_t run = 0;
	for (int64_t v = 0; v <= nn; v++) {
		int64_t c = v < nn ? deg[v] : 0;
		if (colptr)
			colptr[v] = run;
		run += c;
	}
	for (int64_t e = 0; e < ne; e++) {
		int64_t u = (int64_t)(pkb_rng_next(&s) % (uint64_t)nn);
		if (col)
			col[e] = u;
	}
	for (int64_t v = 0; v < nn; v++) {
		int64_t r = (int64_t)(pkb_rng_next(&s) % (uint64_t)d->world);
		if (owner)
			owner[v] = r;
	}
	free(perm);
	free(deg);
	return 0;
}

static int gen_host(const struct pkb_dims *d, int index, uint64_t seed, void *buf, size_t bytes)
{
	int64_t nn = num_nodes(d), ns = seeds(d), *out = buf;
	size_t want[4] = { (size_t)ns, (size_t)nn + 1, (size_t)DEGREE * nn, (size_t)nn };
	if (index < 0 || index > 3 || bytes != want[index] * sizeof(int64_t))
		return -1;
	uint64_t s = seed;
	switch (index) {
	case 0: {   /* S distinct nodes: a partial Fisher-Yates over [0, nn) */
		int64_t *p = malloc((size_t)nn * sizeof *p);
		if (!p)
			return -1;
		for (int64_t v = 0; v < nn; v++)
			p[v] = v;
		for (int64_t i = 0; i < ns; i++) {
			int64_t k = i + (int64_t)(pkb_rng_next(&s) % (uint64_t)(nn - i)), t = p[i];
			p[i] = p[k];
			p[k] = t;
			out[i] = p[i];
		}
		free(p);
		return 0;
	}
	case 1:
		return graph(d, out, NULL, NULL);
	case 3:
		return graph(d, NULL, NULL, out);
	default: {  /* the lists of this rank's nodes; filler elsewhere */
		int64_t *colptr = malloc(((size_t)nn + 1) * sizeof *colptr);
		int64_t *owner = malloc((size_t)nn * sizeof *owner);
		int rc = colptr && owner ? graph(d, colptr, out, owner) : -1;
		for (int64_t v = 0; rc == 0 && v < nn; v++)
			if (owner[v] != d->rank)
				for (int64_t e = colptr[v]; e < colptr[v + 1]; e++)
					out[e] = (int64_t)(pkb_rng_next(&s) % (uint64_t)nn);
		free(colptr);
		free(owner);
		return rc;
	}
	}
}

/*
 * The neighbour ids of the frontier's nodes owned by peers must come from
 * those peers; colptr, node_to_rank and the edge ids are known everywhere.
 * The bound counts hop 1 only: S seeds, (W-1)/W of them remote, about 7.9
 * neighbours each (E[min(10, deg)] under this degree law, measured on the
 * generator), 8 bytes an id, received. HBM: the seeds, the rows of colptr,
 * node_to_rank and col those neighbours touch, and the outputs' hop-1 part,
 * a few bytes an edge: latency-bound at every size. No flops.
 */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double w = d->world, s = (double)seeds(d), e1 = 7.9 * s;
	c->net_bytes = (w - 1) / w * e1 * 8;
	c->hbm_bytes = s * 8 * 3 + e1 * 8 * 5;
	c->flops = 0;
	c->flop_kind = PKB_FLOPS_VECTOR;
	c->note = "the remote seeds' first neighbours, pulled from their owners";
}

const struct pkb_problem pkb_problem_064 = {
	.id = 64,
	.name = "gnn_neighbor_sampling",
	.title = "Distributed 2-hop neighbour sampling (owner-routed)",
	.category = "Graph Parallel",
	.origin = "PyG / GraphLearn-style distributed neighbor sampler (inferred)",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.gen_host = gen_host,
	.cost = cost,
};
