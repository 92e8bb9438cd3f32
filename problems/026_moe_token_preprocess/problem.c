/*
 * 026_moe_token_preprocess -- the dispatch metadata of an expert-parallel
 * MoE layer: how many routed tokens each rank sends to and receives from
 * every other rank (Megatron-LM MoEAlltoAllTokenDispatcher.preprocess /
 * VeOmni EP style; inferred).
 *
 * 8 experts over W ranks, E_l = 8/W consecutive experts a rank (rank r owns
 * experts r*E_l .. r*E_l + E_l - 1). Rank r holds the one-hot routing mask
 * expert_mask (8, 2, M) fp32: expert_mask[e, k, t] = 1 when slot k of token
 * t picked expert e (the two slots may pick the same expert). Then
 *     c_r[e]                    = sum_{k,t} expert_mask_r[e, k, t]   (fp32)
 *     input_splits[j]           = sum_l c_r[j*E_l + l]               (int64)
 *     per_local_expert[j][l]    = c_j[r*E_l + l]                     (fp32)
 *     output_splits[j]          = sum_l per_local_expert[j][l]       (int64)
 *     sum_per_local_expert[l]   = sum_j per_local_expert[j][l]       (fp32)
 * The original all-gathers the 8 counts of every rank and returns the four
 * results on the CPU; here they are device outputs.
 *
 * Minimum traffic per rank: the E_l counts of its own experts from each
 * peer, (W-1) * E_l * 4 bytes (24 B at W = 4) -- a latency problem; the
 * mask read (64 M bytes, 64 KiB at M = 1024) is the rest.
 */
#include "pkb_problem.h"

#define EXPERTS 8
#define TOPK 2

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->m < 1 || d->n < 1)
		return pkb_io_fail(io, "M and N must be >= 1");
	if (EXPERTS % d->world)
		return pkb_io_fail(io, "W = %d does not divide the 8 experts", d->world);
	/* every count, the sums over ranks included, must be an exact fp32
	 * integer: at most W * 2M <= 2^24 */
	if ((double)d->world * TOPK * d->m > 16777216.0)
		return pkb_io_fail(io, "W*2*M = %.0f counts overflow fp32's exact integers",
				   (double)d->world * TOPK * d->m);
	int64_t el = EXPERTS / d->world;
	/* the original's view is a permuted one_hot (M, 2, 8); pkb's is
	 * contiguous (8, 2, M) */
	pkb_io_input(io, "expert_mask", PKB_FP32, PKB_HOSTGEN, PKB_SHAPE(EXPERTS, TOPK, d->m));
	pkb_io_param(io, "num_experts", EXPERTS);
	/* integer counts (the fp32 ones too, below 2^24): exact */
	pkb_io_output(io, "input_splits", PKB_I64, PKB_TOL_EXACT, PKB_SHAPE(d->world));
	pkb_io_output(io, "output_splits", PKB_I64, PKB_TOL_EXACT, PKB_SHAPE(d->world));
	pkb_io_output(io, "num_global_tokens_per_local_expert", PKB_FP32, PKB_TOL_EXACT,
		      PKB_SHAPE(d->world, el));
	pkb_io_output(io, "num_global_sum_tokens_per_local_expert", PKB_FP32, PKB_TOL_EXACT,
		      PKB_SHAPE(el));
	return 0;
}

/* one_hot(randint(0, 8, (M, 2))).permute(2, 1, 0), as the original draws it:
 * each (token, slot) picks an expert uniformly, the two slots independently
 * (1/8 of the tokens pick one expert twice and count twice). The seed is
 * per rank and per trial. */
static int gen_host(const struct pkb_dims *d, int index, uint64_t seed, void *buf, size_t bytes)
{
	if (index != 0 || bytes != (size_t)EXPERTS * TOPK * d->m * sizeof(float))
		return -1;
	float *mask = (float *)buf;
	uint64_t s = seed;
	for (int64_t i = 0; i < EXPERTS * TOPK * d->m; i++)
		mask[i] = 0.f;
	for (int64_t t = 0; t < d->m; t++)
		for (int k = 0; k < TOPK; k++) {
			int e = (int)(pkb_rng_next(&s) >> 61);   /* uniform in [0, 8) */
			mask[((int64_t)e * TOPK + k) * d->m + t] = 1.f;
		}
	return 0;
}

/* Receive the E_l counts of its own experts from each peer (and send each
 * peer its E_l): (W-1) * E_l * 4 bytes. Count the mask: 16 M adds. HBM: the
 * default, the mask read. */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double w = d->world, el = EXPERTS / d->world;
	c->net_bytes = (w - 1) * el * 4;
	c->flops = (double)EXPERTS * TOPK * d->m;
	c->flop_kind = PKB_FLOPS_VECTOR;
	c->note = "count the mask + exchange each peer's counts of its experts";
}

const struct pkb_problem pkb_problem_026 = {
	.id = 26,
	.name = "moe_token_preprocess",
	.title = "MoE dispatch metadata (token counts per expert and rank)",
	.category = "Expert Parallel",
	.origin = "Megatron-LM MoEAlltoAllTokenDispatcher.preprocess / VeOmni EP (inferred)",
	.worlds = PKB_WORLD(2) | PKB_WORLD(4) | PKB_WORLD(8),
	.describe = describe,
	.gen_host = gen_host,
	.cost = cost,
};
