/*
 * logprob_host.h -- the host side that 082, 083 and 084 share: the shapes
 * (b, s from M and W), the logits' generator (N(0, 1) in T with the
 * target's entry raised by 8) and the rounding to T it needs. The targets
 * are each problem's own, handed in as a function (the siblings differ
 * there, so that a candidate tuned on one does not meet the same inputs on
 * another: 082 17 i + 3, 083/084 19 i + 5).
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

/* v rounded to T and back (fp32: v) */
static inline float round_to(pkb_dtype t, float v)
{
	return t == PKB_BF16 ? pkb_bf16_to_float(pkb_float_to_bf16(v))
	     : t == PKB_FP16 ? pkb_fp16_to_float(pkb_float_to_fp16(v)) : v;
}

/* the target of flat token i at this trial */
typedef int64_t (*logprob_target_fn)(const struct pkb_dims *d, int64_t i);

/* logits = T(z) with z ~ N(0, 1), then T(logit + 8) where the entry is the
 * token's target, as the original adds the one-hot mask times 8 in T;
 * input 1: the targets */
static inline int logprob_gen_host(const struct pkb_dims *d, int index, uint64_t seed, void *buf,
				   size_t bytes, logprob_target_fn target_of)
{
	int64_t nt = batch_of(d) * seq_of(d), k = VOCAB / d->world;
	uint64_t st = seed;
	if (index == 0) {
		if (bytes != (size_t)(nt * k) * pkb_dtype_size(d->dtype))
			return -1;
		for (int64_t i = 0; i < nt; i++)
			for (int64_t j = 0; j < k; j++) {
				float v = round_to(d->dtype, (float)pkb_rng_normal(&st));
				if (target_of(d, i) == d->rank * k + j)
					v = round_to(d->dtype, v + 8.0f);
				pkb_dtype_store(d->dtype, buf, (i * k + j), v);
			}
		return 0;
	}
	if (index != 1 || bytes != (size_t)nt * sizeof(int64_t))
		return -1;
	for (int64_t i = 0; i < nt; i++)
		((int64_t *)buf)[i] = target_of(d, i);
	return 0;
}

#endif /* PKB_LOGPROB_HOST_H */
