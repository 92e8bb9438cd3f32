/*
 * ids_host.h -- the index sets that 067 and 068 draw alike: every rank's
 * ids uniform in [0, nodes), from d->common_seed so that every rank can
 * draw every rank's, redrawn the same way on every rank while one rank
 * would ask one owner for more than a cap. The owner of an id is each
 * problem's: 067 deals ids out cyclically (id mod W), 068 in blocks (id /
 * (nodes/W)). Included by the two problem.c files.
 */
#ifndef PKB_IDS_HOST_H
#define PKB_IDS_HOST_H

#include <stdlib.h>
#include "pkb_problem.h"

/* rank s's ids at attempt a */
static inline uint64_t ids_stream(const struct pkb_dims *d, int a, int s)
{
	uint64_t x = d->common_seed ^ ((uint64_t)(uint32_t)a << 32) ^ (uint64_t)(uint32_t)s;
	pkb_rng_next(&x);
	return x;
}

/* this rank's n ids into ids, from the first attempt where no rank asks an
 * owner (blocks: id / (nodes/W); else id mod W) for more than cap; -1 when
 * out of memory */
static inline int ids_draw(const struct pkb_dims *d, int64_t *ids, int64_t n, int64_t nodes,
			   int64_t cap, int blocks)
{
	int64_t w = d->world, shard = nodes / w;
	int64_t *count = malloc((size_t)w * sizeof *count);
	if (!count)
		return -1;
	int a = 0;
	for (;; a++) {
		int fits = 1;
		for (int s = 0; s < w && fits; s++) {
			uint64_t st = ids_stream(d, a, s);
			for (int64_t o = 0; o < w; o++)
				count[o] = 0;
			for (int64_t i = 0; i < n; i++) {
				int64_t id = (int64_t)(pkb_rng_next(&st) % (uint64_t)nodes);
				count[blocks ? id / shard : id % w]++;
			}
			for (int64_t o = 0; o < w; o++)
				fits &= count[o] <= cap;
		}
		if (fits)
			break;
	}
	free(count);
	uint64_t st = ids_stream(d, a, d->rank);
	for (int64_t i = 0; i < n; i++)
		ids[i] = (int64_t)(pkb_rng_next(&st) % (uint64_t)nodes);
	return 0;
}

#endif /* PKB_IDS_HOST_H */
