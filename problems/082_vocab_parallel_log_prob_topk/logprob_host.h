/*
 * logprob_host.h -- the host side that 082, 083 and 084 share: the shapes
 * (b, s from M and W), the logits' generator (N(0, 1) in T with the
 * target's entry raised by 8) and the rounding to T it needs. Each problem
 * defines target_of(), its own targets (the siblings differ there, so that
 * a candidate tuned on one does not meet the same inputs on another).
 * Included by the three problem.c files (one translation unit each).
 */
#ifndef PKB_LOGPROB_HOST_H
#define PKB_LOGPROB_HOST_H

#include <string.h>
#include "pkb_problem.h"

#define VOCAB 256
#define TOP_K 10
#define TOP_P 0.9

/* b = max(1, min(M // 512, 4)) */
static int64_t batch_of(const struct pkb_dims *d)
{
	int64_t b = d->m / 512;
	return b < 1 ? 1 : b > 4 ? 4 : b;
}

/* s = roundup(max(W, min(M // 128, 32)), W) */
static int64_t seq_of(const struct pkb_dims *d)
{
	int64_t s = d->m / 128 < 32 ? d->m / 128 : 32;
	s = s < d->world ? d->world : s;
	return (s + d->world - 1) / d->world * d->world;
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

static uint16_t to_fp16(float f)
{
	uint32_t b;
	memcpy(&b, &f, sizeof b);
	uint32_t sign = (b >> 16) & 0x8000u, mag = b & 0x7fffffffu;
	if (mag >= 0x477ff000u)   /* rounds to >= 65520: Inf */
		return (uint16_t)(sign | 0x7c00u);
	if (mag < 0x38800000u) {  /* below 2^-14: subnormal, in units of 2^-24 */
		float a;
		memcpy(&a, &mag, sizeof a);
		float q = a * 0x1p24f;   /* exact: a power-of-two scale */
		uint32_t n = (uint32_t)q;
		float rem = q - (float)n;
		if (rem > 0.5f || (rem == 0.5f && (n & 1u)))
			n++;
		return (uint16_t)(sign | n);
	}
	uint32_t r = mag + 0xfffu + ((mag >> 13) & 1u);
	return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
}

static float from_fp16(uint16_t h)
{
	uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
	float v = e ? (float)(m | 0x400u) * 0x1p-25f * (float)(1u << e) : (float)m * 0x1p-24f;
	return (h & 0x8000u) ? -v : v;   /* finite values only: no Inf here */
}

/* v rounded to T, as a float */
static float round_to(pkb_dtype t, float v)
{
	return t == PKB_BF16 ? from_bf16(to_bf16(v)) : t == PKB_FP16 ? from_fp16(to_fp16(v)) : v;
}

static void store(pkb_dtype t, void *buf, size_t i, float v)
{
	if (t == PKB_FP32)
		((float *)buf)[i] = v;
	else
		((uint16_t *)buf)[i] = t == PKB_BF16 ? to_bf16(v) : to_fp16(v);
}

/* the target of flat token i at this trial: each problem's own */
static int64_t target_of(const struct pkb_dims *d, int64_t i);

/* logits = T(z) with z ~ N(0, 1), then T(logit + 8) where the entry is the
 * token's target, as the original adds the one-hot mask times 8 in T */
static int gen_host(const struct pkb_dims *d, int index, uint64_t seed, void *buf, size_t bytes)
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
				store(d->dtype, buf, (size_t)(i * k + j), v);
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
