/*
 * perfplan.c -- see perfplan.h.
 */
#include "perfplan.h"

#include <string.h>

void perf_plan_make(struct perf_plan *p, enum perf_mode mode, size_t least_in, size_t most_in,
		    size_t l2, int warmup, int iters, int block)
{
	memset(p, 0, sizeof *p);
	p->mode = mode;
	size_t want = least_in ? (3 * l2 + least_in - 1) / least_in : 2;
	size_t cap = most_in ? ((size_t)16 << 30) / most_in : PERF_MAX_GROUPS;
	if (want > cap)
		want = cap;
	p->groups = want < 2 ? 2 : want > PERF_MAX_GROUPS ? PERF_MAX_GROUPS : (int)want;
	p->out_sets = mode == PERF_GRAPH ? p->groups : p->groups + 1;
	if (block < 1)
		block = 10;
	p->block = block < p->groups ? block : p->groups;
	p->warmup = warmup;
	p->iters = iters;
}

void perf_next_call(const struct perf_plan *p, struct perf_track *t, const int *gen,
		    int *group, int *out_set)
{
	long c = t->call++;
	int g = perf_group(p, c), o = perf_out_set(p, c);
	t->last_group[o] = g;
	t->last_gen[o] = gen[g];
	*group = g;
	*out_set = o;
}

int perf_recheck_of(const struct perf_plan *p, const struct perf_track *t, int o, int *group,
		    int *gen)
{
	/* output set o is first used by call o */
	if (o < 0 || o >= p->out_sets || t->call <= o)
		return 0;
	*group = t->last_group[o];
	*gen = t->last_gen[o];
	return 1;
}
