/*
 * mlp_host.h -- what 040 (DDP) and 041/042 (ZeRO-1/2, zero_host.h) share:
 * the original's two-layer MLP sizes from (M, N, W), Adam's lr and the
 * tolerances of an Adam step after a gradient summed over W ranks (the
 * argument and the measurements are 040's; the host simulation repeated
 * them for ZeRO's slices and NCCL's reduce-scatter order).
 */
#ifndef PKB_MLP_HOST_H
#define PKB_MLP_HOST_H

#include "pkb_problem.h"

#define LR 1e-3

struct mlp {
	int64_t n_total, chunk, d_in, hidden, d_out, p;
};

static inline int64_t clamp64(int64_t x, int64_t lo, int64_t hi)
{
	return x < lo ? lo : x > hi ? hi : x;
}

static inline int64_t max64(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

/* n = roundup(max(M, W), W) rows, chunk = n/W a rank; d_in = clamp(N, 16,
 * 256), hidden = clamp(N/2, 32, 512), d_out = clamp(N/4, 8, 256); P
 * parameters in W1, b1, W2, b2 */
static inline struct mlp mlp_sizes(const struct pkb_dims *d)
{
	struct mlp s;
	int64_t w = d->world, m = d->m > w ? d->m : w;
	s.n_total = (m + w - 1) / w * w;
	s.chunk = s.n_total / w;
	s.d_in = clamp64(d->n, 16, 256);
	s.hidden = clamp64(d->n / 2, 32, 512);
	s.d_out = clamp64(d->n / 4, 8, 256);
	s.p = s.hidden * s.d_in + s.hidden + s.d_out * s.hidden + s.d_out;
	return s;
}

/*
 * The tolerances of the updated parameters (tp), exp_avg (tm) and
 * exp_avg_sq (tv).
 *
 * The gradient. Each rank's partial is a GEMM (or a column sum) of at
 * most K = max(chunk, d_in, hidden, d_out) products accumulated in fp32
 * and rounded once to T; a correct kernel gets the same partial up to a
 * K-term fp32 reordering (K * 2^-24 / u terms: nothing in bf16/fp16,
 * the whole error in fp32) and, rarely, one ulp from the roundings of
 * the intermediates h and out. The sum over W ranks is PKB_TOL_SUM(W).
 * So g is good to terms_g = W + 2 + K * 2^-24 / u of u * amax(g).
 * m = T(T(b1 m) + 0.1 g) carries 0.1 of that (and amax(m) >= ~0.1
 * amax(g)): terms_g; v = T(T(b2 v) + 1e-3 g^2) moves by 2e-3 |g| dg:
 * 2 terms_g. Measured (host simulation of this reference against fp32
 * sums rounded once, exact GEMMs; W = 2, 4, 8; M = 64..4096; steps 1, 4,
 * 7): m within 0.4-2.0 u*amax in bf16 and fp16 (bound 4-10), 1.1-11.8
 * in fp32 (bound >= 260); v within 0.3-4.4 (bound 8-20), 1.6-23 in fp32.
 * A gradient from this rank alone, one rank missing, a sum instead of
 * the mean, or another rank's moments are wrong by O(1) relative.
 *
 * The parameters: p' = T(p + upd), |upd| = lr * |m/bc1| / (sqrt(v/bc2)
 * + eps) ~ lr * 0.3..3. A candidate's g moves upd by at most
 * lr * dg / sqrt(999 * 0.01) (v >= 0.01 * b2) plus a few ulps of upd
 * from the six T roundings of the chain, and the final rounding of
 * p + upd may then land one ulp away: rtol = 2u (one ulp) plus
 * atol = 64 u lr (0.25 lr in bf16) for |p'| near 0. Measured beyond
 * rtol: <= 0.021 lr in bf16 (12x under), 0.0018 lr in fp16 (17x),
 * 5.7e-7 lr in fp32 (6.7x). The amax term is off: amax(p) ~ 4.5 would
 * excuse 0.018 in bf16, 18x the update. Parameters left un-updated are
 * off by lr*|R| and fail on thousands of elements (bf16, where the
 * update is below half an ulp of |p| >= 0.5 the small ones) to all of
 * them (fp32); so does the bias correction of step 1 at a later step.
 */
static inline void adam_tols(const struct pkb_dims *d, struct mlp s, struct pkb_tol *tp,
			     struct pkb_tol *tm, struct pkb_tol *tv)
{
	double u = pkb_dtype_unit_roundoff(d->dtype);
	int64_t k = max64(max64(s.chunk, s.d_in), max64(s.hidden, s.d_out));
	double terms_g = d->world + 2 + (double)k / 16777216.0 / u;
	*tm = (struct pkb_tol){ .terms = terms_g };
	*tv = (struct pkb_tol){ .terms = 2 * terms_g };
	*tp = (struct pkb_tol){ .atol = 64 * u * LR, .terms = 1e-9 };
}

#endif /* PKB_MLP_HOST_H */
