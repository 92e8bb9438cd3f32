/*
 * compare.c -- the tolerance model (docs/TOLERANCE.md).
 *
 * Two passes over the output: the first finds amax(ref) (the scale that
 * stands in for the partial sums of a reordered reduction; per index of one
 * dimension when the tolerance's scale_axis asks), the second
 * applies the element bound and accumulates the L2 norms. Non-finite values
 * must match the reference's class exactly. Cost: ~2 ns per element on the
 * host, 0.5 s for a 256 MB bf16 output -- outside every timed window.
 */
#include "compare.h"
#include "dtype.h"   /* defines: dtype_load, dtype_unit_roundoff */

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct pkb_tol compare_tol_resolve(pkb_dtype t, struct pkb_tol tol)
{
	double u = dtype_unit_roundoff(t);
	if (!dtype_is_float(t))
		tol.exact = 1;
	if (tol.exact)
		return tol;
	if (tol.rtol == 0)
		tol.rtol = 2 * u;
	if (tol.terms == 0)
		tol.terms = 1;
	if (tol.l2 == 0)
		tol.l2 = 2 * u * sqrt(tol.terms + 1);
	return tol;
}

/* -1: NaN, +-2: +-Inf, 0: finite */
static int nonfinite_class(double v)
{
	if (isnan(v))
		return -1;
	if (isinf(v))
		return v > 0 ? 2 : -2;
	return 0;
}

/* every byte of element i still 0xFF: what poison_outputs wrote */
static int is_poison(const void *buf, size_t esize, int64_t i)
{
	const unsigned char *p = (const unsigned char *)buf + (size_t)i * esize;
	for (size_t k = 0; k < esize; k++)
		if (p[k] != 0xff)
			return 0;
	return 1;
}

/* the scale group of real i: (element / stride) % len, a complex element's
 * two reals in one group; 0 when there is one group */
static inline int64_t group_of(int64_t i, int cplx, int64_t len, int64_t stride)
{
	return len > 1 ? ((cplx ? i / 2 : i) / stride) % len : 0;
}

int compare_buffers(pkb_dtype t, const void *ref, const void *cand, int64_t n,
		    struct pkb_tol tol, struct cmp_result *r)
{
	return compare_buffers_own(t, ref, cand, n, tol, 0, 0, r);
}

int compare_buffers_own(pkb_dtype t, const void *ref, const void *cand, int64_t n,
			struct pkb_tol tol, int64_t own_lo, int64_t own_hi,
			struct cmp_result *r)
{
	memset(r, 0, sizeof *r);
	tol = compare_tol_resolve(t, tol);
	r->tol = tol;
	r->worst = -1;
	/* a complex element is two reals here: its bytes are split alike */
	size_t esize = pkb_dtype_size(t);
	if (dtype_is_complex(t)) {
		n *= 2;
		own_lo *= 2;
		own_hi *= 2;
		esize /= 2;
	}
	r->n = n;
	r->own_lo = own_lo;
	r->own_hi = own_hi;

	/* amax per index of the scale axis (group g of element e is
	 * (e / stride) % len; a complex element's two reals share its group),
	 * or one group: the whole output */
	int64_t len = 1, stride = 1;
	if (tol.scale_len > 0 && tol.scale_stride > 0) {
		len = tol.scale_len;
		stride = tol.scale_stride;
	}
	/* amax per group, then, in place, its slack: atol + terms * u * amax */
	double one = 0, *amax = len > 1 ? calloc((size_t)len, sizeof *amax) : &one;
	if (!amax) {
		amax = &one;   /* out of memory: one scale, the looser bound */
		len = 1;
	}
	int cplx = dtype_is_complex(t);
	for (int64_t i = 0; i < n; i++) {
		double a = fabs(dtype_load(t, ref, i));
		int64_t g = group_of(i, cplx, len, stride);
		if (isfinite(a) && a > amax[g])
			amax[g] = a;
	}
	double u = dtype_unit_roundoff(t), *slack = amax;
	r->amax_ref = 0;
	for (int64_t g = 0; g < len; g++) {
		r->amax_ref = fmax(r->amax_ref, amax[g]);
		slack[g] = tol.exact ? 0 : tol.atol + tol.terms * u * amax[g];
	}

	double worst_ratio = -1, d2 = 0, r2 = 0;
	int64_t n_finite = 0;
	for (int64_t i = 0; i < n; i++) {
		double rv = dtype_load(t, ref, i), cv = dtype_load(t, cand, i);
		r->n_zero += cv == 0;
		int rc = nonfinite_class(rv), cc = nonfinite_class(cv);
		double bound, err, ratio;
		if (rc || cc) {
			if (rc == cc)
				continue;
			bound = 0;
			err = INFINITY;
			ratio = INFINITY;
		} else {
			err = fabs(cv - rv);
			bound = tol.exact ? 0 : slack[group_of(i, cplx, len, stride)] + tol.rtol * fabs(rv);
			d2 += err * err;
			r2 += rv * rv;
			n_finite++;
			if (err > r->max_abs_err)
				r->max_abs_err = err;
			if (err <= bound)
				continue;
			ratio = bound > 0 ? err / bound : INFINITY;
		}
		r->n_bad++;
		r->n_bad_poison += is_poison(cand, esize, i);
		r->n_bad_zero += cv == 0;
		r->n_bad_own += i >= own_lo && i < own_hi;
		if (ratio > worst_ratio) {
			worst_ratio = ratio;
			r->worst = i;
			r->worst_ref = rv;
			r->worst_cand = cv;
			r->worst_bound = bound;
		}
	}
	if (amax != &one)
		free(amax);
	r->l2_rel = r2 > 0 ? sqrt(d2 / r2) : (d2 > 0 ? INFINITY : 0);
	/* the whole-output bound has the element bound's absolute floor too:
	 * errors each within atol are allowed, so their norm, up to
	 * atol * sqrt(n), is; without it a reference at or near zero (a 0-dim
	 * loss, a mostly-zero output) failed on errors the element bound
	 * accepts. A relative bound stays relative where atol is 0. */
	double l2_floor = tol.exact ? 0 : tol.atol * sqrt((double)n_finite);
	r->l2_limit = tol.exact ? 0 : r2 > 0 ? tol.l2 + l2_floor / sqrt(r2) : tol.l2;
	r->l2_failed = !tol.exact && sqrt(d2) > tol.l2 * sqrt(r2) + l2_floor;
	r->ok = r->n_bad == 0 && !r->l2_failed;
	return r->ok;
}

const char *compare_look(const struct cmp_result *r)
{
	if (r->ok || !r->n)
		return NULL;
	if (r->n_bad_poison == r->n)
		return "untouched";
	if (r->n_zero == r->n)
		return "zeros";
	/* own slice right, the rest wrong: the peers' part never arrived (or
	 * was computed from this rank's data alone) */
	if (r->own_hi > r->own_lo && r->n_bad && !r->n_bad_own &&
	    r->n_bad >= (r->n - (r->own_hi - r->own_lo)) / 2)
		return "local_only";
	if (r->n_bad_poison)
		return "partly_untouched";
	return NULL;
}
