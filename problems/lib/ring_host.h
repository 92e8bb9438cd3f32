/*
 * ring_host.h -- the host side that 055, 056 and 057 share: the attention
 * shapes (8 heads of 64; cp = W/2, the other axis -- 055's tp, 056's pp,
 * 057's dp -- being 2; B, T, S from M, N), the unit roundoff and the input
 * stream (splitmix64 one gamma ahead, Box-Muller), describe()'s first
 * checks and the draw of hidden states and weights (attn_fill).
 * Included by the three problem.c files (one translation unit each).
 */
#ifndef PKB_RING_HOST_H
#define PKB_RING_HOST_H

#include <math.h>
#include "pkb_problem.h"

#define HEADS 8
#define HEAD_DIM 64

struct ring_dims {
	int64_t cp, b, t, s;
};

static inline void attn_dims(const struct pkb_dims *d, struct ring_dims *g)
{
	g->cp = d->world / 2;
	g->b = d->m / 64 > 1 ? d->m / 64 : 1;
	g->t = d->n / 64 > 1 ? d->n / 64 : 1;
	g->s = g->t / g->cp > 1 ? g->t / g->cp : 1;
}

/* splitmix64 one gamma ahead of pkb_rng_next (the mix of the advanced state):
 * the stream these inputs were drawn from since the problem was written */
static inline uint64_t next(uint64_t *st)
{
	*st += PKB_RNG_GAMMA;
	return pkb_rng_mix(*st);
}

/* N(0, 1) by Box-Muller; u1 in (0, 1) */
static inline double normal(uint64_t *st)
{
	double u1 = pkb_rng_open(next(st));
	double u2 = pkb_rng_unit(next(st));
	return pkb_rng_box_muller(u1, u2);
}


/* describe()'s first checks, the same in the three */
static inline int attn_check(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->dtype != PKB_BF16 && d->dtype != PKB_FP16 && d->dtype != PKB_FP32)
		return pkb_io_fail(io, "dtype must be bf16, fp16 or fp32");
	if (d->m < 1 || d->n < 1)
		return pkb_io_fail(io, "M and N must be >= 1");
	return 0;
}

/* n values of N(0, 1) in T from stream *st into buf, as the original draws
 * hidden states (weight 0) and weights (weight 1: T(T(N(0, 1)) * 0.02)) */
static inline void attn_fill(const struct pkb_dims *d, void *buf, size_t n, uint64_t *st,
			     int weight)
{
	for (size_t i = 0; i < n; i++) {
		float v = pkb_round_to(d->dtype, (float)normal(st));
		pkb_dtype_store(d->dtype, buf, i, weight ? pkb_round_to(d->dtype, v * 0.02f) : v);
	}
}

#endif
