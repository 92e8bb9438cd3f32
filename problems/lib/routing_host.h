/*
 * routing_host.h -- the routing that 028 and 029 share (029 combines what
 * 028 dispatches): the W x W split matrix S of rows rank j sends rank d,
 * each rank's hits per expert, and its two distinct experts per token, all
 * drawn from streams of the dims and the trial only (every rank draws its
 * peers' routing alike). `salt` is the streams' origin, each problem's own
 * (the siblings differ there, so that a candidate tuned on one does not
 * meet the same routing on the other: 028 0x28d15, 029 0x29c0b).
 */
#ifndef PKB_ROUTING_HOST_H
#define PKB_ROUTING_HOST_H

#include <stdlib.h>
#include "pkb_problem.h"
#include "moe_routing.h"   /* defines: EXPERTS, TOPK */

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* describe()'s checks of the dims, 028's and 029's alike: M, N >= 1, W
 * dividing the experts, M at most 2^26 tokens */
static inline int routing_check(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->m < 1 || d->n < 1)
		return pkb_io_fail(io, "M and N must be >= 1");
	if (EXPERTS % d->world)
		return pkb_io_fail(io, "W = %d does not divide the 8 experts", d->world);
	if (d->m > (1 << 26))
		return pkb_io_fail(io, "M = %lld: at most 2^26 tokens", (long long)d->m);
	return 0;
}

/* ceil(2M/W): the most rows a rank keeps (S[r][r]) */
static inline int64_t keep_cap(const struct pkb_dims *d)
{
	return (TOPK * d->m + d->world - 1) / d->world;
}

/* C: the most rows one rank sends another -- a capacity factor of 2, and
 * at most M per expert (a token hits an expert once) */
static inline int64_t capacity(const struct pkb_dims *d)
{
	return min64(TOPK * d->m, min64(EXPERTS / d->world * d->m, 2 * keep_cap(d)));
}

/* a stream for (what, rank) of this trial: a function of the dims only,
 * not of the seed, so that every rank draws its peers' routing alike */
static inline uint64_t stream(const struct pkb_dims *d, uint64_t salt, uint64_t what, int rank)
{
	uint64_t s = salt ^ ((uint64_t)(uint32_t)d->trial << 24) ^ ((uint64_t)d->world << 16);
	s = pkb_rng_next(&s) ^ (uint64_t)d->m;
	s = pkb_rng_next(&s) ^ (what << 8) ^ (uint64_t)(uint32_t)rank;
	pkb_rng_next(&s);
	return s;
}

/*
 * S (W x W, row-major): S[j][d] rows of rank j's tokens for rank d's
 * experts. The even split (2M/W, the remainder spread a row apart so that
 * rows and columns both sum to 2M), then 16 W^2 random exchanges: +t at
 * (a, b) and (c, e), -t at (a, e) and (c, b), which keep every row and
 * column sum, t drawn up to what keeps every entry in [0, C] and the
 * diagonal in [0, ceil(2M/W)].
 */
static inline void split_matrix(const struct pkb_dims *d, uint64_t salt, int64_t *s)
{
	int w = d->world;
	int64_t m2 = TOPK * d->m, q = m2 / w, rem = m2 % w, kc = keep_cap(d), cap = capacity(d);
	for (int j = 0; j < w; j++)
		for (int k = 0; k < w; k++)
			s[j * w + k] = q + ((k - j + w) % w < rem);
	uint64_t st = stream(d, salt, 1, 0);
	for (int i = 0; i < 16 * w * w; i++) {
		int a = (int)(pkb_rng_next(&st) % w), c = (int)(pkb_rng_next(&st) % (w - 1));
		int b = (int)(pkb_rng_next(&st) % w), e = (int)(pkb_rng_next(&st) % (w - 1));
		c += c >= a;
		e += e >= b;
		int64_t up = min64((a == b ? kc : cap) - s[a * w + b], (c == e ? kc : cap) - s[c * w + e]);
		int64_t t = min64(up, min64(s[a * w + e], s[c * w + b]));
		if (t < 1)
			continue;
		t = 1 + (int64_t)(pkb_rng_next(&st) % (uint64_t)t);
		s[a * w + b] += t;
		s[c * w + e] += t;
		s[a * w + e] -= t;
		s[c * w + b] -= t;
	}
}

/* Rank j's hits per expert: S[j][d] split at random over rank d's E_l
 * experts, each part in [0, M] (S[j][d] <= C <= E_l M). Sums to 2M. */
static inline void expert_counts(const struct pkb_dims *d, uint64_t salt, const int64_t *s, int j,
				 int64_t *cnt)
{
	int w = d->world, el = EXPERTS / w;
	uint64_t st = stream(d, salt, 2, j);
	for (int r = 0; r < w; r++) {
		int64_t left = s[j * w + r];
		for (int l = 0; l < el; l++) {
			int64_t rest = (int64_t)(el - 1 - l) * d->m;   /* what the others can hold */
			int64_t lo = left > rest ? left - rest : 0, hi = min64(left, d->m);
			int64_t v = l == el - 1 ? left : lo + (int64_t)(pkb_rng_next(&st) % (uint64_t)(hi - lo + 1));
			cnt[r * el + l] = v;
			left -= v;
		}
	}
}

/*
 * This rank's two experts per token, given its counts per expert (each <=
 * M, sum 2M); the caller frees the pairs (token t: pair[2t], pair[2t+1])
 * and may draw on from *st. Lay the 2M expert ids out in runs, in a random
 * expert order, and give token i the ids at i and i + M: distinct, since
 * no run is longer than M. Then 4M random swaps of ids between tokens that
 * keep both tokens' experts distinct and a random token order: the counts
 * stay exact, the pairing is mixed.
 */
static inline uint8_t *routing_pairs(const struct pkb_dims *d, uint64_t salt, const int64_t *cnt,
				     uint64_t *st)
{
	int64_t m = d->m;
	uint8_t *ex = malloc((size_t)(TOPK * m)), *pair = malloc((size_t)(TOPK * m));
	if (!ex || !pair) {
		free(ex);
		free(pair);
		return NULL;
	}
	*st = stream(d, salt, 3, d->rank);
	int order[EXPERTS];
	for (int e = 0; e < EXPERTS; e++)
		order[e] = e;
	for (int e = EXPERTS - 1; e > 0; e--) {
		int k = (int)(pkb_rng_next(st) % (uint64_t)(e + 1)), t = order[e];
		order[e] = order[k];
		order[k] = t;
	}
	int64_t p = 0;
	for (int i = 0; i < EXPERTS; i++)
		for (int64_t k = 0; k < cnt[order[i]]; k++)
			ex[p++] = (uint8_t)order[i];
	for (int64_t i = 0; i < m; i++) {
		pair[2 * i] = ex[i];
		pair[2 * i + 1] = ex[i + m];
	}
	free(ex);
	for (int64_t n = 0; m > 1 && n < 4 * m; n++) {
		uint64_t r = pkb_rng_next(st), k = pkb_rng_next(st);
		int64_t u = (int64_t)(r % (uint64_t)m), v = (int64_t)(k % (uint64_t)m);
		int ku = (int)(k >> 62) & 1, kv = (int)(k >> 63);
		uint8_t x = pair[2 * u + ku], y = pair[2 * v + kv];
		if (u == v || y == pair[2 * u + 1 - ku] || x == pair[2 * v + 1 - kv])
			continue;
		pair[2 * u + ku] = y;
		pair[2 * v + kv] = x;
	}
	for (int64_t i = m - 1; i > 0; i--) {
		int64_t k = (int64_t)(pkb_rng_next(st) % (uint64_t)(i + 1));
		uint8_t a = pair[2 * i], b = pair[2 * i + 1];
		pair[2 * i] = pair[2 * k];
		pair[2 * i + 1] = pair[2 * k + 1];
		pair[2 * k] = a;
		pair[2 * k + 1] = b;
	}
	return pair;
}

#endif
