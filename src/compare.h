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
};

/* Fill the zero fields of `tol` with the dtype's defaults. */
struct pkb_tol compare_tol_resolve(pkb_dtype t, struct pkb_tol tol);
/* Compare n elements of host buffers `ref` and `cand`, both of dtype t.
 * Returns r->ok. Complex outputs compare both components as 2n reals. */
int compare_buffers(pkb_dtype t, const void *ref, const void *cand, int64_t n,
		    struct pkb_tol tol, struct cmp_result *r);

#endif
