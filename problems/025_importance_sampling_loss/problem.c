/*
 * 025_importance_sampling_loss -- the GRPO / clipped-PG style importance
 * sampling loss of a data-parallel shard of tokens, with its metrics.
 *
 * Rank r holds M tokens: hidden_states (M, N), its own weight (V, N), V =
 * 32000, labels (M,) int64 (ignore_index -100 on about a quarter of them),
 * old_logprobs (M,) and advantages (M,), all float inputs in the harness
 * dtype T. Per token, with each operation rounded to T as torch does:
 *     logits = T(hidden @ weight^T)                            (M, V)
 *     CE     = -T(logits[l] - max - log(sum exp(logits - max)))  (0 if ignored)
 *     delta  = clamp(T(-CE - old), -20, 20)   (0 if ignored)
 *     ratio  = T(exp(delta)),  pg = -T(ratio * adv)   (0 if ignored)
 * and over every rank's valid tokens (Ng = max(1, their count)):
 *     loss    = (S(pg) / Ng + s) - s,  s = T(sum_local T(T(ratio adv) CE)) / Ng
 *     metrics = [S(ratio) / Ng, min ratio, max ratio,
 *                S(T(T(ratio - delta) - 1)) / Ng, S(CE) / Ng]
 * where S(x) = the T all-reduce of T(sum of this rank's x). Returns loss
 * (0-dim fp32), per_token_logprobs = -CE (M,) T, per_token_loss = pg (M,) T,
 * metrics (5,) fp32 (the original's second output, None, is left out).
 *
 * The exchange is seven scalars; the work is the (M, N) x (N, V) GEMM and
 * the log-softmax over V per token: 67 GFLOP per rank at M = N = 1024.
 */
#include <stdint.h>
#include "pkb_problem.h"

#define VOCAB 32000
#define IGNORE_INDEX (-100)

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->dtype != PKB_BF16 && d->dtype != PKB_FP16 && d->dtype != PKB_FP32)
		return pkb_io_fail(io, "dtype must be bf16, fp16 or fp32");
	if (d->m < 1 || d->n < 1)
		return pkb_io_fail(io, "M and N must be >= 1");
	int64_t m = d->m, n = d->n;
	pkb_io_input(io, "hidden_states", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(m, n));
	pkb_io_input(io, "weight", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(VOCAB, n));
	pkb_io_input(io, "labels", PKB_I64, PKB_HOSTGEN, PKB_SHAPE(m));
	pkb_io_input(io, "old_logprobs", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(m));
	pkb_io_input(io, "advantages", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(m));
	pkb_io_param(io, "ignore_index", IGNORE_INDEX);

	/*
	 * With randn inputs the logits have std sqrt(N) (32 at N = 1024), CE is
	 * ~130 and delta is clamped at -20 on all but ~3e-4 of the tokens:
	 * ratio = r0 = T(e^-20) (2.06e-9; 0 in fp16). The sums S are T values:
	 * a rank's sum rounds once, NCCL's ring rounds each of its W-1 partial
	 * sums, and another order (fp32 over the ranks, rounded once) lands
	 * elsewhere by at most u_T times those partials, on either side.
	 * - metrics: every summand is >= 0 (ratio, CE, and e^d - d - 1), so the
	 *   partials are at most the total: W roundings of u_T |r| a side,
	 *   rtol = 2W u_T (+ fp32 divisions); entries 1 and 2 are exact (a min
	 *   and a max of T values). The amax term is off (terms ~ 0): entropy
	 *   (~130) and the ratio entries (~1e-9) share the vector. Ng is ~0.75
	 *   W M, so counting the ignored tokens (25% off) or the local count
	 *   only (W times off) fails at any W (2W u_T = 6.3% at W = 8, bf16).
	 * - loss: pg has either sign. While every delta is clamped, each
	 *   partial is r0 times a sum of up to W M advantages, within 3 sigma
	 *   3 r0 sqrt(W M); the sum of the |partials| (W local, W-1 ring) is
	 *   3 r0 sqrt(M) (W + (W-1) sqrt(W)), times 2 u_T (both sides) over
	 *   Ng >= ~0.7 W M: atol ~10% of the typical |loss| (r0 / sqrt(Ng)).
	 *   When an unclamped token dominates (ratio e^-20 .. e^4), its partial
	 *   sums are the result: rtol = 2W u_T. The surrogate's fp32 add and
	 *   subtract moves loss by 2^-24 |s| (|s| ~ r0: CE ~ 130 times the
	 *   same advantages, local) -- ~1e-6 of atol. fp16 flushes r0 to 0 and
	 *   unclamped ratios to its subnormals: atol adds their spacing, 2^-24,
	 *   per rounding. A 0-dim output has no l2 to speak of: l2 off.
	 * - per_token_logprobs: one rounding of an fp32 log-softmax of T
	 *   logits; a GEMM that rounds a logit to the neighbouring T value
	 *   (another accumulation order) moves CE by an ulp of the label's
	 *   logit and of the max logit, each <= 2 u_T amax(CE): terms = 4
	 *   (3.6 at CE's ulp of 0.5 for the default). Logits computed in fp32
	 *   and not rounded pass; a CE without the max, or of the wrong label,
	 *   does not.
	 * - per_token_loss: a function of that token's CE and inputs, exact
	 *   while CE is (clamped tokens: r0 * adv); the default bound.
	 */
	double u = pkb_dtype_unit_roundoff(d->dtype), w = d->world;
	double r0 = d->dtype == PKB_FP16 ? 0 : 2.07e-9;
	double tiny = d->dtype == PKB_BF16 ? 0x1p-133 : d->dtype == PKB_FP16 ? 0x1p-24 : 0x1p-149;
	double wm = w * (double)m, ng = 0.75 * wm - 3 * pkb_sqrt_pos(0.1875 * wm);
	ng = ng < 1 ? 1 : ng;
	double parts = 3 * r0 * pkb_sqrt_pos((double)m) * (w + (w - 1) * pkb_sqrt_pos(w));
	struct pkb_tol tl = { .rtol = 2 * w * u + 0x1p-20,
			      .atol = (2 * u * parts + 2 * (2 * w) * tiny) / ng,
			      .terms = 1e-9, .l2 = 1e300 };
	struct pkb_tol tm = { .rtol = 2 * w * u + 0x1p-20, .atol = 2 * (2 * w) * tiny / ng,
			      .terms = 1e-9, .l2 = 2 * w * u + 0x1p-20 };
	pkb_io_output(io, "loss", PKB_FP32, tl, 0, (int64_t[]){ 0 });
	pkb_io_output(io, "per_token_logprobs", d->dtype, PKB_TOL_SUM(4), PKB_SHAPE(m));
	pkb_io_output(io, "per_token_loss", d->dtype, PKB_TOL_DEFAULT, PKB_SHAPE(m));
	pkb_io_output(io, "metrics", PKB_FP32, tm, PKB_SHAPE(5));
	return 0;
}

/* labels: uniform in [0, V), a quarter of them ignore_index (the original
 * draws none, which leaves the valid mask and Ng untested) */
static int gen_host(const struct pkb_dims *d, int index, uint64_t seed, void *buf, size_t bytes)
{
	if (index != 2 || bytes != (size_t)d->m * sizeof(int64_t))
		return -1;
	int64_t *lab = (int64_t *)buf;
	for (int64_t i = 0; i < d->m; i++) {
		uint64_t h = pkb_rng_mix(seed ^ pkb_rng_mix((uint64_t)i));
		lab[i] = (h & 3) == 0 ? IGNORE_INDEX : (int64_t)((h >> 8) % VOCAB);
	}
	return 0;
}

/* Seven scalars cross (a count, four sums, a min, a max): latency only.
 * The GEMM sets the bound: 2 M N V FLOPs on the tensor cores; a fused
 * kernel need not write the (M, V) logits, so HBM is the default (the
 * inputs, the weight's V N dominant). */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double w = d->world, e = pkb_dtype_size(d->dtype);
	c->net_bytes = 2 * (w - 1) / w * (4 + 6 * e);
	c->flops = 2.0 * d->m * d->n * VOCAB;
	c->flop_kind = PKB_FLOPS_TENSOR;
	c->note = "logits GEMM + log-softmax, all-reduce of 7 scalars";
}

const struct pkb_problem pkb_problem_025 = {
	.id = 25,
	.name = "importance_sampling_loss",
	.title = "Importance-sampling policy-gradient loss + metrics (GRPO style)",
	.category = "Data Parallel",
	.origin = "NeMo-RL GRPO / ClippedPG-style loss (inferred)",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.gen_host = gen_host,
	.cost = cost,
};
