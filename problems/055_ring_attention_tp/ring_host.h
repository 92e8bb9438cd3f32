/*
 * ring_host.h -- the host side that 055, 056 and 057 share: the attention
 * shapes (8 heads of 64; cp = W/2, the other axis -- 055's tp, 056's pp,
 * 057's dp -- being 2; B, T, S from M, N), the unit roundoff, the input
 * stream (splitmix64 one gamma ahead, Box-Muller) and the rounding to T.
 * Included by the three problem.c files (one translation unit each).
 */
#ifndef PKB_RING_HOST_H
#define PKB_RING_HOST_H

#include <math.h>
#include <string.h>
#include "pkb_problem.h"

#define HEADS 8
#define HEAD_DIM 64

struct ring_dims {
	int64_t cp, b, t, s;
};

static void attn_dims(const struct pkb_dims *d, struct ring_dims *g)
{
	g->cp = d->world / 2;
	g->b = d->m / 64 > 1 ? d->m / 64 : 1;
	g->t = d->n / 64 > 1 ? d->n / 64 : 1;
	g->s = g->t / g->cp > 1 ? g->t / g->cp : 1;
}

static double unit_roundoff(pkb_dtype t)
{
	return t == PKB_FP32 ? 0x1p-24 : t == PKB_FP16 ? 0x1p-11 : 0x1p-8;
}

/* splitmix64 one gamma ahead of pkb_rng_next (the mix of the advanced state):
 * the stream these inputs were drawn from since the problem was written */
static uint64_t next(uint64_t *st)
{
	*st += PKB_RNG_GAMMA;
	return pkb_rng_mix(*st);
}

/* N(0, 1) by Box-Muller; u1 in (0, 1) */
static double normal(uint64_t *st)
{
	double u1 = pkb_rng_open(next(st));
	double u2 = pkb_rng_unit(next(st));
	return pkb_rng_box_muller(u1, u2);
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

#endif
