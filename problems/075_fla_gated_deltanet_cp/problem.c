/*
 * 075_fla_gated_deltanet_cp -- the gated delta rule (Gated DeltaNet, as
 * flash-linear-attention's naive recurrent form) over a sequence split
 * across the ranks, made head-parallel by Ulysses all-to-alls.
 *
 * Sizes are the original's, fixed (M and N are not used): S = 64 tokens a
 * rank, H = roundup(6, W) heads (6 at W = 2, 3, 6; 8 at W = 4, 8; 10 at
 * W = 5; 7 at W = 7), hl = H/W of them a rank, key dim 256, value dim 512,
 * batch 1. Rank r holds tokens [r*S, (r+1)*S) of the sequence of T = W*S:
 *     q, k (1, S, H, 256), v (1, S, H, 512), gate, beta (1, S, H)  dtype T
 *     a_log, dt_bias (hl,) bf16: the entries of heads [r*hl, (r+1)*hl)
 * Per head h, in fp32, over the whole sequence t = 0 .. T-1:
 *     q_t = q_t / max(|q_t|, 1e-6) / 16,   k_t = k_t / max(|k_t|, 1e-6)
 *     g_t = exp(-exp(a_log[h]) * softplus(gate_t + dt_bias[h]))
 *     S = g_t S;  u = beta_t (v_t - S^T k_t);  S = S + k_t u^T;  o_t = S^T q_t
 * with S (256, 512) zero at t = 0; out (1, S, H, 512) of dtype T holds o
 * of rank r's tokens, all H heads. The original exchanges q, k, v, gate,
 * beta so that rank r runs the recurrence of its hl heads over all T
 * tokens, and returns the outputs by another all-to-all; a_log and dt_bias
 * arrive already split that way.
 *
 * Inputs: q, k, v, gate N(0, 1) as the original draws them; beta is
 * sigmoid(N(0, 1)) computed in bf16 then cast to T, as the original does
 * (gen_host). The original's a_log and dt_bias are constants,
 * linspace(0, 0.2, H) and linspace(-0.1, 0.1, H) in bf16; here they are
 * drawn each trial from the common seed (one vector of H entries that every
 * rank slices, rounded to bf16), so that an implementation cannot hard-code
 * them: a_log uniform over the original's range [0, 0.2), dt_bias uniform
 * in [-8, -6) -- a deliberate deviation from the original's range.
 *
 * Why dt_bias. With the original's, softplus(gate + dt_bias) ~ 0.8 and the
 * decay is ~exp(-0.8) a token: the state of two chunks back falls below
 * fp32 resolution, and a candidate that keeps one chunk of history (warms
 * up from zero on rank r-1's tokens, and so skips the chain or the
 * exchange) was bit-equal to the full recurrence in simulation: the test
 * could not see it. dt_bias sets the time scale (the FLA / Mamba2 layers
 * initialise it as softplus^-1 of a dt in [1e-3, 0.1]); at [-8, -6),
 * softplus ~ 1.65 e^dt_bias on average and -log g ~ 0.0005 .. 0.005 a
 * token by head, 0.002 on average: up to 2.2 over the whole sequence of
 * W*64 tokens, so every earlier token still counts at the last rank. The delta
 * rule keeps the state bounded (I - beta k k^T with |k| = 1, beta in
 * (0, 1), does not expand it): simulated amax |state| 1.6 .. 2.7, amax
 * |o| 0.09 .. 0.15 (|o| ~ 0.011 .. 0.018 on average) at W = 2 .. 8. The
 * formula is the original's; only the inputs differ.
 */
#include <math.h>
#include <string.h>
#include "pkb_problem.h"

#define S_LOCAL 64
#define DK 256
#define DV 512

static int64_t heads(int w)
{
	return (6 + w - 1) / w * w;
}

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->dtype != PKB_BF16 && d->dtype != PKB_FP16 && d->dtype != PKB_FP32)
		return pkb_io_fail(io, "dtype must be bf16, fp16 or fp32");
	int64_t h = heads(d->world), hl = h / d->world;
	pkb_io_input(io, "q", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(1, S_LOCAL, h, DK));
	pkb_io_input(io, "k", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(1, S_LOCAL, h, DK));
	pkb_io_input(io, "v", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(1, S_LOCAL, h, DV));
	pkb_io_input(io, "gate", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(1, S_LOCAL, h));
	pkb_io_input(io, "beta", d->dtype, PKB_HOSTGEN, PKB_SHAPE(1, S_LOCAL, h));
	/* pinned bf16, as the original draws them */
	pkb_io_input(io, "a_log", PKB_BF16, PKB_HOSTGEN, PKB_SHAPE(hl));
	pkb_io_input(io, "dt_bias", PKB_BF16, PKB_HOSTGEN, PKB_SHAPE(hl));

	/*
	 * Tolerance. The recurrence is fp32 in the original and its outputs are
	 * small (|o| ~ 0.015 on average, amax ~ 0.1): correct kernels differ by
	 * the order of the 256-term dot products S^T k and S^T q (the delta rule
	 * does not let their rounding grow along the sequence), by fp32 libm
	 * ulps, or by another exact algorithm: FLA's chunked form (UT transform
	 * of 64-token chunks, state passed between them). Host simulation
	 * (numpy, W = 2, 4, 8, each dtype, each rank's out against the lane
	 * order of the reference): BLAS order, the chunked form and float64, and
	 * the lane order against float64: bf16 and fp16, where the one rounding
	 * of the output dominates, pass the default bound at <= 0.51 of it, L2
	 * <= 0.016 of the limit. fp32: terms = 256 (a sum of 256 fp32 terms in
	 * any order), <= 0.098 of the element bound, <= 0.54 of the L2 limit
	 * (float64 against the lane order at W = 8).
	 * Wrong results (simulated, bf16 / fp16 / fp32): rank 0's chunk left out
	 * (the last rank from a zero state one chunk on), W = 2 .. 8: 53-110 /
	 * 416-900 / 1.5e4-5.1e4 bounds, L2 16-71 / 118-564 / 9e4-4e5 limits, at
	 * the last rank; history truncated to the previous chunk
	 * (bad_truncated_history), W = 3 .. 8: 105-131 / 802-1020 / 3.6e4-5.5e4
	 * bounds; right at W = 2, where that chunk is all the history; a zero
	 * state on every rank 107-130 / 900-1100 / 5e4-6.5e4 bounds. At W = 2,
	 * 4, 8, bf16 / fp32: each rank's own a_log / dt_bias slice for every
	 * head 6.8-40 / 2.6e3-1.7e4 bounds, L2 2.6-16.5 limits in bf16;
	 * dt_bias left out 85-96 bounds in bf16; the carried state decayed but
	 * not projected (plain gated linear attention's merge) 42-126 bounds,
	 * L2 13-46 limits in bf16.
	 */
	struct pkb_tol tol = d->dtype == PKB_FP32 ? PKB_TOL_SUM(DK) : PKB_TOL_DEFAULT;
	pkb_io_output(io, "out", d->dtype, tol, PKB_SHAPE(1, S_LOCAL, h, DV));
	return 0;
}

/* one gamma ahead of pkb_rng_next: the state is stepped, then hashed */
static uint64_t next(uint64_t *st)
{
	*st += PKB_RNG_GAMMA;
	return pkb_rng_mix(*st);
}

static double uniform(uint64_t *st)
{
	return pkb_rng_unit(next(st));
}

/* N(0, 1) by Box-Muller; u1 in (0, 1) */
static double normal(uint64_t *st)
{
	double u1 = pkb_rng_open(next(st));
	return pkb_rng_box_muller(u1, uniform(st));
}

/* fp32 -> bf16 / fp16 bits, round to nearest even (finite inputs), and back */
static uint16_t to_bf16(float f)
{
	uint32_t b;
	memcpy(&b, &f, sizeof b);
	return (uint16_t)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}

static float from_bf16(uint16_t h)
{
	uint32_t b = (uint32_t)h << 16;
	float f;
	memcpy(&f, &b, sizeof f);
	return f;
}

/* normal fp16 values only: beta is a bf16 value in (2^-14, 1] */
static uint16_t to_fp16(float f)
{
	uint32_t b;
	memcpy(&b, &f, sizeof b);
	uint32_t sign = (b >> 16) & 0x8000u, mag = b & 0x7fffffffu;
	uint32_t r = mag + 0xfffu + ((mag >> 13) & 1u);
	return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
}

/*
 * beta (index 4): bf16(sigmoid(bf16(N(0, 1)))) cast to T, per rank, as the
 * original (torch's bf16 sigmoid computes in fp32 and rounds). a_log and
 * dt_bias (5, 6): rank r's slice of one H-vector drawn from the common seed,
 * uniform in [0, 0.2) and [-8, -6).
 */
static int gen_host(const struct pkb_dims *d, int index, uint64_t seed, void *buf, size_t bytes)
{
	int64_t h = heads(d->world), hl = h / d->world;
	if (index == 4) {
		size_t n = (size_t)(S_LOCAL * h);
		if (bytes != n * pkb_dtype_size(d->dtype))
			return -1;
		uint64_t st = seed;
		for (size_t i = 0; i < n; i++) {
			float x = from_bf16(to_bf16((float)normal(&st)));
			float b = from_bf16(to_bf16(1.0f / (1.0f + expf(-x))));
			if (d->dtype == PKB_FP32)
				((float *)buf)[i] = b;
			else
				((uint16_t *)buf)[i] = d->dtype == PKB_BF16 ? to_bf16(b) : to_fp16(b);
		}
		return 0;
	}
	if ((index != 5 && index != 6) || bytes != (size_t)hl * 2)
		return -1;
	uint64_t st = pkb_rng_mix(d->common_seed ^ pkb_rng_mix((uint64_t)index));
	/* a_log: the original's range; dt_bias: ours (see the top) */
	double lo = index == 5 ? 0.0 : -8.0, width = index == 5 ? 0.2 : 2.0;
	for (int64_t i = 0; i < h; i++) {
		float v = (float)(lo + width * uniform(&st));
		if (i / hl == d->rank)
			((uint16_t *)buf)[i % hl] = to_bf16(v);
	}
	return 0;
}

/*
 * Net: the original's head exchange, (W-1)/W of q, k, v, gate, beta in and
 * of the outputs back, the smallest exact scheme we know: passing the fp32
 * state (H * 256 * 512 * 4 bytes, 4 MiB at H = 8) is 3.7x more at W = 4,
 * and gathering the earlier tokens' k, v, gate, beta (r * S*H*770 elements)
 * more from r = 2 on. FLOPs: per token and head, S^T k, the rank-one update
 * with the decay folded in, and S^T q, 2 each per state element: 6*256*512,
 * for S*H token-heads a rank, on the CUDA cores (an exact fp32 recurrence:
 * no TF32). HBM: the default (inputs and the output).
 */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double w = d->world, h = (double)heads(d->world), e = (double)pkb_dtype_size(d->dtype);
	double in = S_LOCAL * h * (2.0 * DK + DV + 2) * e, out = S_LOCAL * h * DV * e;
	c->net_bytes = (w - 1) / w * (in + out);
	c->flops = 6.0 * DK * DV * S_LOCAL * h;
	c->flop_kind = PKB_FLOPS_VECTOR;
	c->note = "head all-to-all of the inputs and outputs; fp32 recurrence";
}

const struct pkb_problem pkb_problem_075 = {
	.id = 75,
	.name = "fla_gated_deltanet_cp",
	.title = "Gated DeltaNet recurrence with Ulysses-style all-to-all CP",
	.category = "Context Parallel",
	.origin = "flash-linear-attention gated delta rule (naive recurrent), head-parallel CP",
	.worlds = PKB_WORLD(2) | PKB_WORLD(3) | PKB_WORLD(4) | PKB_WORLD(5) | PKB_WORLD(6) |
		  PKB_WORLD(7) | PKB_WORLD(8),
	.describe = describe,
	.gen_host = gen_host,
	.cost = cost,
};
