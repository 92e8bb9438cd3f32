/*
 * 024_load_balancing_loss_fn -- the MoE load-balancing auxiliary loss
 * (Switch / Mixtral), averaged over data-parallel ranks.
 *
 * Rank r holds router logits x (M, E) with E = num_experts = 8 experts and
 * picks top_k = 2 experts per token. With T = the dtype, fp32 in between:
 *     p[i,:]  = T(softmax(x[i,:]))                   routing weights, in T
 *     sel[i]  = the 2 largest p[i,e] (ties: the lower e)
 *     f[k,e]  = fl(#{i : sel[i][k] = e} * (1/M))      (2, E) fp32
 *     P[e]    = T(fl(sum_i p[i,e]) * (1/M))          (E,) in T
 *     loss_r  = E * sum_{k,e} f[k,e] * P[e]          fp32
 *     loss    = fl(sum_r loss_r) / W                  the same on every rank
 * The loss is a 0-dim fp32 scalar. attention_mask is None in the original
 * (its masked branch never runs) and is left out.
 *
 * The original draws every logit from N(0, 1): the experts are then
 * balanced, every rank's loss is 2 within ~1e-3 and the differences are the
 * bf16 rounding of P -- a constant 2.0 passes any bound that admits one
 * such rounding. pkb adds to each expert's logits an offset N(0, 1) drawn
 * per rank and trial (gen_host), an imbalanced router as the loss exists to
 * measure: the loss spreads over ~2.3-5, ranks differ by ~10%.
 *
 * Minimum traffic per rank: one fp32 all-reduced, 2 (W-1)/W * 4 bytes: a
 * latency problem.
 */
#include <math.h>
#include "pkb_problem.h"

#define EXPERTS 8
#define TOP_K 2

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->dtype != PKB_BF16 && d->dtype != PKB_FP16 && d->dtype != PKB_FP32)
		return pkb_io_fail(io, "dtype must be bf16, fp16 or fp32");
	if (d->m < 1 || d->n < 1)
		return pkb_io_fail(io, "M and N must be >= 1");
	if (d->m > (1 << 24))
		return pkb_io_fail(io, "M must be <= 2^24 (token counts are exact in fp32)");
	/* N(0, 1) plus a per-rank offset per expert: gen_host */
	pkb_io_input(io, "gate_logits", d->dtype, PKB_HOSTGEN, PKB_SHAPE(d->m, EXPERTS));
	pkb_io_param(io, "num_experts", EXPERTS);
	pkb_io_param(io, "top_k", TOP_K);

	/*
	 * What a correct candidate may change is the order of the fp32 sums
	 * (over the M tokens, the 16 products, the W ranks) and how it forms
	 * the fp32 softmax (exp2f, a reciprocal): both move fp32 values by a
	 * few ulps, which is harmless except where it flips a rounding to T.
	 * Flipping P[e] on rank r by one ulp of T, <= 2u P[e], moves loss_r
	 * by <= 16u f[e] P[e] <= 2u loss_r (f[e] = f[0,e] + f[1,e]; every
	 * term of loss_r is >= 0), so the mean by <= 2u loss_r / W: rtol = 2u
	 * covers one such flip on every rank at once. A flipped routing
	 * weight that turns a top-2 tie moves loss_r by 8 |P[a] - P[b]| / M
	 * (~1e-4 at M = 1024), inside it too. The fp32 sums themselves move by
	 * ~u32 sqrt(M) relative: 16 + 4 sqrt(M) u32 (the whole error in fp32).
	 * One element: l2 = rtol. Wrong results are far out (host simulation,
	 * 300 trials of W = 2, 4, 8 at M = 1024, bf16): a rank's own loss
	 * differs from the mean by more than rtol (0.78%) on 95% of trials at
	 * W = 2 and on every one at W = 4, 8; using the router probabilities
	 * for the top-2 fractions fails 95-100% of trials; top-1 doubled every
	 * trial. A candidate with exp2f, reciprocal and pairwise sums matched
	 * the reference bit for bit on every trial.
	 */
	double u = pkb_dtype_unit_roundoff(d->dtype), u32 = 0x1p-24;
	double tol = 2 * u + u32 * (16 + 4 * sqrt((double)d->m));
	struct pkb_tol t = { .rtol = tol, .l2 = tol };
	pkb_io_output(io, "overall_loss", PKB_FP32, t, 0, (int64_t[]){ 0 });
	return 0;
}

/* gate_logits = T(z + b_e), z ~ N(0, 1) per element, b ~ N(0, 1) per
 * expert; seed differs per rank and trial */
static int gen_host(const struct pkb_dims *d, int index, uint64_t seed, void *buf, size_t bytes)
{
	size_t es = pkb_dtype_size(d->dtype), n = (size_t)d->m * EXPERTS;
	if (index != 0 || bytes != n * es)
		return -1;
	uint64_t s = seed;
	double bias[EXPERTS];
	for (int e = 0; e < EXPERTS; e++)
		bias[e] = pkb_rng_normal(&s);
	for (size_t i = 0; i < n; i++) {
		float v = (float)(pkb_rng_normal(&s) + bias[i % EXPERTS]);
		pkb_dtype_store(d->dtype, buf, (int64_t)i, v);
	}
	return 0;
}

/* One fp32 crosses: an all-reduce, 2 (W-1)/W * 4 bytes. Per token: max,
 * 8 exps, sum, 8 divides, top-2 compares, 24 adds into the sums: ~50 M
 * FLOPs. HBM: the default, the logits read once. */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double w = d->world;
	c->net_bytes = 2 * (w - 1) / w * 4.0;
	c->flops = 50.0 * d->m;
	c->flop_kind = PKB_FLOPS_VECTOR;
	c->note = "softmax + top-2 per token, column sums, all-reduce of one float";
}

const struct pkb_problem pkb_problem_024 = {
	.id = 24,
	.name = "load_balancing_loss_fn",
	.title = "MoE load-balancing auxiliary loss (DP mean)",
	.category = "Expert Parallel",
	.origin = "HF transformers load_balancing_loss_func (Mixtral / Qwen-MoE) + DP mean (inferred)",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.gen_host = gen_host,
	.cost = cost,
};
