/*
 * heads_host.h -- describe()'s first part in the problems on the original's
 * 8 attention heads of 64 (017, 036-039): the checks (M, N >= 1, W
 * dividing the heads, as the original asserts num_heads % W == 0) and the
 * batch and sequence the base shape makes. Included by their problem.c.
 */
#ifndef PKB_HEADS_HOST_H
#define PKB_HEADS_HOST_H

#include "pkb_problem.h"

static inline int heads_check(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->m < 1 || d->n < 1)
		return pkb_io_fail(io, "M and N must be >= 1");
	if (8 % d->world != 0)
		return pkb_io_fail(io, "W must divide the 8 heads (W in {2, 4, 8})");
	return 0;
}

/* b = max(1, M/64) sequences of t = max(1, N/64) tokens */
static inline int64_t heads_batch(const struct pkb_dims *d)
{
	return d->m / 64 > 1 ? d->m / 64 : 1;
}

static inline int64_t heads_tokens(const struct pkb_dims *d)
{
	return d->n / 64 > 1 ? d->n / 64 : 1;
}

#endif /* PKB_HEADS_HOST_H */
