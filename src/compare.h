/*
 * compare.h -- the tolerance model of docs/TOLERANCE.md: compare one output
 * of one rank, candidate against reference, and describe the worst element.
 */
#ifndef PKB_COMPARE_H
#define PKB_COMPARE_H

#include <stdint.h>
#include "pkb_problem.h"   /* defines: struct pkb_tol, pkb_dtype */

struct cmp_result {
	int ok;
	int64_t n;             /* elements compared */
	int64_t n_bad;         /* elements outside their bound (NaN/Inf included) */
	int64_t worst;         /* flat index of the worst element, -1 if none bad */
	double worst_ref, worst_cand, worst_bound;
	double max_abs_err;    /* over finite pairs */
	double amax_ref;
	double l2_rel;         /* ||c - r|| / ||r|| over finite pairs */
	double l2_limit;
	int l2_failed;
	struct pkb_tol tol;    /* the resolved tolerance that was applied */
	/* what the wrong elements look like (pkb agent's feedback, issue 31) */
	int64_t n_bad_poison;  /* still the 0xFF poison: never written */
	int64_t n_bad_zero;    /* 0 where the reference is not */
	int64_t n_zero;        /* candidate elements that are 0, right or wrong */
	int64_t n_bad_own;     /* wrong inside this rank's own slice (compare_buffers_own) */
	int64_t own_lo, own_hi;
};

/* The look of a failed comparison, or NULL when it has none of these:
 * "untouched" (no element written), "zeros" (every element 0), "local_only"
 * (this rank's own slice right, wrong elements only outside it),
 * "partly_untouched" (some wrong elements never written). */
const char *compare_look(const struct cmp_result *r);

/* Fill the zero fields of `tol` with the dtype's defaults. */
struct pkb_tol compare_tol_resolve(pkb_dtype t, struct pkb_tol tol);
/* Compare n elements of host buffers `ref` and `cand`, both of dtype t.
 * Returns r->ok. Complex outputs compare both components as 2n reals. */
int compare_buffers(pkb_dtype t, const void *ref, const void *cand, int64_t n,
		    struct pkb_tol tol, struct cmp_result *r);
/* compare_buffers, also counting the wrong elements of [own_lo, own_hi)
 * (element indices: a rank's 1/W slice of the flat output), for
 * compare_look's local_only */
int compare_buffers_own(pkb_dtype t, const void *ref, const void *cand, int64_t n,
			struct pkb_tol tol, int64_t own_lo, int64_t own_hi,
			struct cmp_result *r);

#endif
