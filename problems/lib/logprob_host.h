/*
 * logprob_host.h -- the host side that 082, 083 and 084 share: the shapes
 * (b, s from M and W; 083/084's chunk), describe's inputs and the
 * forward's output, the logits' generator (N(0, 1) in T with the target's
 * entry raised by 8), the cost. The targets are each problem's own,
 * handed in as the coefficients of (mul i + add + trial) mod V (the
 * siblings differ there, so that a candidate tuned on one does not meet
 * the same inputs on another: 082 17 i + 3, 083/084 19 i + 5).
 */
#ifndef PKB_LOGPROB_HOST_H
#define PKB_LOGPROB_HOST_H

#include "pkb_problem.h"

#define VOCAB 256
#define TOP_K 10
#define TOP_P 0.9

/* b = max(1, min(M // 512, 4)) */
static inline int64_t batch_of(const struct pkb_dims *d)
{
	int64_t b = d->m / 512;
	return b < 1 ? 1 : b > 4 ? 4 : b;
}

/* s = roundup(max(W, min(M // 128, 32)), W) */
static inline int64_t seq_of(const struct pkb_dims *d)
{
	int64_t s = d->m / 128 < 32 ? d->m / 128 : 32;
	s = s < d->world ? d->world : s;
	return (s + d->world - 1) / d->world * d->world;
}


/* chunk_size (083, 084) = min(roundup(max(W, s // 4), W), s) */
static inline int64_t chunk_of(const struct pkb_dims *d)
{
	int64_t s = seq_of(d), c = s / 4 > d->world ? s / 4 : d->world;
	c = (c + d->world - 1) / d->world * d->world;
	return c < s ? c : s;
}

/* describe()'s first part, the same in the three: the checks, then the
 * logits (b, s, V/W) and the targets (b, s), both from gen_host */
static inline int logprob_inputs(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->dtype != PKB_BF16 && d->dtype != PKB_FP16 && d->dtype != PKB_FP32)
		return pkb_io_fail(io, "dtype must be bf16, fp16 or fp32");
	if (d->m < 1 || d->n < 1)
		return pkb_io_fail(io, "M and N must be >= 1");
	if (VOCAB % d->world)
		return pkb_io_fail(io, "W = %d does not divide the vocabulary (256)", d->world);
	int64_t b = batch_of(d), s = seq_of(d), k = VOCAB / d->world;
	/* N(0, 1) in T, the target's entry then + 8 in T: gen_host */
	pkb_io_input(io, "vocab_parallel_logits", d->dtype, PKB_HOSTGEN, PKB_SHAPE(b, s, k));
	/* each problem's targets, the same on every rank: gen_host */
	pkb_io_input(io, "target", PKB_I64, PKB_HOSTGEN, PKB_SHAPE(b, s));
	return 0;
}

/* the forward's output (082, 083): the log-probs (b, s) in fp32 */
static inline void logprob_output(const struct pkb_dims *d, struct pkb_io *io)
{
	/*
	 * The filter is a step function of T-rounded values: a candidate that
	 * follows the recipe keeps the same entries, and then its value differs
	 * from the reference only by the fp32 log_softmax over the kept
	 * entries: S = sum exp(x - max) over at most ~V terms in another order
	 * with expf's 2 ulps, logf's, and S's own rounding near 1 (u32
	 * absolute): atol = 2^-16 is > 50x that. A token whose kept set
	 * differs moves by log(1 + p_j / p_kept) of the entry j that flips, at
	 * least 0.013 over 200000 simulated tokens: 800x atol. l2 = 2^-10: the
	 * element bound does the work (an output may hold a single non-zero
	 * ~1e-3, where S's absolute rounding is 1e-4 relative). Host
	 * simulation of 200000 tokens: expf as exp2f, the softmax sum reversed
	 * and a reciprocal matched the reference on every token; the cumulative
	 * sum in fp32 without rounding to T flips 0.1% of tokens (0.015-0.042);
	 * comparing with bf16(0.1) instead of fp32(0.1) 0.19%; skipping top-p
	 * moves every token (>= 2.8e-4).
	 */
	struct pkb_tol tol = { .atol = 0x1p-16, .l2 = 0x1p-10 };
	pkb_io_output(io, "logprobs", PKB_FP32, tol, PKB_SHAPE(batch_of(d), seq_of(d)));
}

/* the target of flat token i: (mul i + add + trial) mod 256, the same on
 * every rank */
static inline int64_t logprob_target(const struct pkb_dims *d, int64_t i, int mul, int add)
{
	return (mul * i + add + d->trial) % VOCAB;
}

/* logits = T(z) with z ~ N(0, 1), then T(logit + 8) where the entry is the
 * token's target, as the original adds the one-hot mask times 8 in T;
 * input 1: the targets (logprob_target's mul, add) */
static inline int logprob_gen_host(const struct pkb_dims *d, int index, uint64_t seed, void *buf,
				   size_t bytes, int mul, int add)
{
	int64_t nt = batch_of(d) * seq_of(d), k = VOCAB / d->world;
	uint64_t st = seed;
	if (index == 0) {
		if (bytes != (size_t)(nt * k) * pkb_dtype_size(d->dtype))
			return -1;
		for (int64_t i = 0; i < nt; i++)
			for (int64_t j = 0; j < k; j++) {
				float v = pkb_round_to(d->dtype, (float)pkb_rng_normal(&st));
				if (logprob_target(d, i, mul, add) == d->rank * k + j)
					v = pkb_round_to(d->dtype, v + 8.0f);
				pkb_dtype_store(d->dtype, buf, (i * k + j), v);
			}
		return 0;
	}
	if (index != 1 || bytes != (size_t)nt * sizeof(int64_t))
		return -1;
	for (int64_t i = 0; i < nt; i++)
		((int64_t *)buf)[i] = logprob_target(d, i, mul, add);
	return 0;
}

/* cost()'s figures, the same in the three but for the bytes a token's
 * owner sends each other rank on top of the top_k candidates: 4 (082, 083:
 * its log-prob) or 12 (084: the filter's cut, the max and the kept sum).
 * Per token: the top-k selection (~V compares), exps and sums over the
 * kept entries: ~4 V. */
static inline void logprob_cost(const struct pkb_dims *d, struct pkb_cost *c, double extra)
{
	double w = d->world, e = (double)pkb_dtype_size(d->dtype);
	double nt = (double)(batch_of(d) * seq_of(d));
	c->net_bytes = (w - 1) / w * nt * (TOP_K * e / w + extra);
	c->flops = 4.0 * VOCAB * nt / w;
	c->flop_kind = PKB_FLOPS_VECTOR;
}

#endif /* PKB_LOGPROB_HOST_H */
