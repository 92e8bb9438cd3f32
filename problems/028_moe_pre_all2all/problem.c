/*
 * 028_moe_pre_all2all -- the dispatch of an expert-parallel MoE layer:
 * permute the tokens expert-major, all-to-all them to the ranks owning
 * the experts, regroup what arrives by local expert (Megatron-LM
 * token_permutation / VeOmni token_pre_all2all, inferred).
 *
 * 8 experts over W ranks, E_l = 8/W consecutive experts a rank. Rank r
 * holds hidden_states (M, N) and expert_mask (8, 2, M) fp32, one-hot: slot
 * k of token t picked expert e; a token's two experts are distinct. With
 * the dispatch metadata input_splits (W,), output_splits (W,) and
 * num_global_tokens_per_local_expert (W, E_l) (int64), it returns
 *     routing_map (8, M) fp32   = expert_mask.sum(1)                  (0/1)
 *     perm (2M,) int64          = for e = 0..7, the tokens t with
 *                                 routing_map[e, t] != 0, ascending
 *     local rows (2M, N)        = hidden_states[perm]: expert-major, so
 *                                 segment d (input_splits[d] rows) holds
 *                                 the rows for rank d's experts
 *     received (2M, N)          = all-to-all: segment d to rank d; from
 *                                 rank j, output_splits[j] rows, in rank
 *                                 order
 *     global_permuted (2M, N)   = received split into chunks of
 *                                 num_global_tokens_per_local_expert
 *                                 (row-major: source rank j, local expert
 *                                 l), reordered to (l, j) order
 *     org_hidden_states_shape   = [M, N] (a torch.Size in the original)
 * So global_permuted lists, for each local expert l and each rank j, the
 * rows of rank j's tokens routed to expert r*E_l + l, in token order.
 *
 * The original draws the routing per token (randperm(8)[:2]) but passes
 * synthetic metadata, [2M/W]*W and 2M/8 per chunk, that ignore it. Here
 * the metadata is the routing's own: gen_host draws, per trial, the W x W
 * matrix S[j][d] of rows rank j sends rank d (every row and column sums to
 * 2M, so every rank receives 2M rows and the shapes stay the original's),
 * splits each S[j][d] over rank d's experts, and lays out rank j's tokens
 * to match. Splits range from 0 to a capacity C (below).
 *
 * Minimum traffic per rank: the rows of peers' tokens routed to its
 * experts, at least (2M - ceil(2M/W)) rows, halved when E_l >= 2 (a token
 * whose two experts are on one rank need travel once): 1.5 MiB at
 * M = N = 1024, bf16, W = 4.
 */
#include <stdlib.h>
#include "pkb_problem.h"
#include "routing_host.h"
/* defines: EXPERTS, TOPK, min64, routing_check, keep_cap, capacity, stream,
 * split_matrix, expert_counts, routing_pairs */

#define ROUTING_SALT 0x28d15ull   /* this problem's routing streams start here */

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (routing_check(d, io) < 0)
		return -1;
	int64_t el = EXPERTS / d->world, m2 = TOPK * d->m;
	pkb_io_input(io, "hidden_states", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(d->m, d->n));
	pkb_io_input(io, "expert_mask", PKB_FP32, PKB_HOSTGEN, PKB_SHAPE(EXPERTS, TOPK, d->m));
	pkb_io_param(io, "num_experts", EXPERTS);
	pkb_io_input(io, "input_splits", PKB_I64, PKB_HOSTGEN, PKB_SHAPE(d->world));
	pkb_io_input(io, "output_splits", PKB_I64, PKB_HOSTGEN, PKB_SHAPE(d->world));
	pkb_io_input(io, "num_global_tokens_per_local_expert", PKB_I64, PKB_HOSTGEN,
		     PKB_SHAPE(d->world, el));
	/* rows moved, indices and a 0/1 map: all exact */
	pkb_io_output(io, "global_permuted_hidden_states", d->dtype, PKB_TOL_EXACT,
		      PKB_SHAPE(m2, d->n));
	pkb_io_output(io, "routing_map", PKB_FP32, PKB_TOL_EXACT, PKB_SHAPE(EXPERTS, d->m));
	pkb_io_output(io, "local_input_permutation_mapping", PKB_I64, PKB_TOL_EXACT,
		      PKB_SHAPE(m2));
	pkb_io_output(io, "org_hidden_states_shape", PKB_I64, PKB_TOL_EXACT, PKB_SHAPE(2));
	return 0;
}

/* ---- the routing ------------------------------------------------------------ */

/* expert_mask of this rank from its pairs: token t's two experts in a
 * random slot order */
static int routing_mask(const struct pkb_dims *d, const int64_t *cnt, float *mask)
{
	int64_t m = d->m;
	uint64_t st;
	uint8_t *pair = routing_pairs(d, ROUTING_SALT, cnt, &st);
	if (!pair)
		return -1;
	for (int64_t i = 0; i < EXPERTS * TOPK * m; i++)
		mask[i] = 0.f;
	for (int64_t t = 0; t < m; t++) {
		int flip = (int)(pkb_rng_next(&st) & 1);
		for (int k = 0; k < TOPK; k++)
			mask[((int64_t)pair[2 * t + (k ^ flip)] * TOPK + k) * m + t] = 1.f;
	}
	free(pair);
	return 0;
}

static int gen_host(const struct pkb_dims *d, int index, uint64_t seed, void *buf, size_t bytes)
{
	(void)seed;
	int w = d->world, el = EXPERTS / w, r = d->rank;
	size_t want = index == 1 ? (size_t)EXPERTS * TOPK * d->m * sizeof(float) :
		      index == 4 ? (size_t)w * el * sizeof(int64_t) : (size_t)w * sizeof(int64_t);
	if (index < 1 || index > 4 || bytes != want)
		return -1;
	int64_t s[EXPERTS * EXPERTS], cnt[EXPERTS], *out = (int64_t *)buf;
	split_matrix(d, ROUTING_SALT, s);
	switch (index) {
	case 1:
		expert_counts(d, ROUTING_SALT, s, r, cnt);
		return routing_mask(d, cnt, (float *)buf);
	case 2:   /* rows to each rank: row r of S */
		for (int k = 0; k < w; k++)
			out[k] = s[r * w + k];
		return 0;
	case 3:   /* rows from each rank: column r of S */
		for (int k = 0; k < w; k++)
			out[k] = s[k * w + r];
		return 0;
	default:  /* [j][l]: rank j's hits on our expert r*E_l + l */
		for (int j = 0; j < w; j++) {
			expert_counts(d, ROUTING_SALT, s, j, cnt);
			for (int l = 0; l < el; l++)
				out[j * el + l] = cnt[r * el + l];
		}
		return 0;
	}
}

/* Receive the rows of peers' tokens routed here: at least
 * 2M - ceil(2M/W) hits whatever the trial (cost() cannot see the trial's
 * S), each a row of N*e bytes -- half as many rows when E_l >= 2, where a
 * token whose two experts live on one rank may travel once (and be copied
 * twice on arrival). HBM: the default. No arithmetic. */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double hits = (double)(TOPK * d->m - keep_cap(d));
	double rows = EXPERTS / d->world >= 2 ? hits / 2 : hits;
	c->net_bytes = rows * d->n * pkb_dtype_size(d->dtype);
	c->note = "each peer token routed here travels once";
}

const struct pkb_problem pkb_problem_028 = {
	.id = 28,
	.name = "moe_pre_all2all",
	.title = "MoE token permutation + dispatch all-to-all + chunk regroup",
	.category = "Expert Parallel",
	.origin = "Megatron-LM token_permutation / VeOmni token_pre_all2all (inferred)",
	.worlds = PKB_WORLD(2) | PKB_WORLD(4) | PKB_WORLD(8),
	.describe = describe,
	.gen_host = gen_host,
	.cost = cost,
};
