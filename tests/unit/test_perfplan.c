/*
 * test_perfplan.c -- the schedule of timed runs: group counts, block sizes
 * and the rotation rules that make skipped or cached calls visible.
 */
#include "t.h"
#include "perfplan.h"

#include <string.h>

#define MiB ((size_t)1 << 20)

/* the rules of perfplan.h over 2000 calls of one solution */
static void check_rules(const struct perf_plan *p, size_t least, size_t most, size_t l2)
{
	CHECK(p->groups >= 2 && p->groups <= PERF_MAX_GROUPS);
	CHECK(p->block >= 1 && p->block <= p->groups);
	if (p->groups < PERF_MAX_GROUPS && least * (size_t)p->groups < 3 * l2)
		CHECKF(p->groups == 2 || (size_t)p->groups == ((size_t)16 << 30) / most,
		       "%d groups of %zu bytes under 3 x L2 without hitting the 16 GiB cap",
		       p->groups, least);
	int bad_block = 0, bad_rot = 0, bad_graph = 0;
	for (long c0 = 0; c0 < 2000; c0 += p->block) {
		unsigned char seen[PERF_MAX_GROUPS];
		memset(seen, 0, sizeof seen);
		for (long c = c0; c < c0 + p->block; c++)
			bad_block += seen[perf_group(p, c)]++ > 0;
	}
	for (long c = 0; c < 2000; c++) {
		if (p->mode == PERF_GRAPH)
			bad_graph += perf_out_set(p, c) != perf_group(p, c);
		else   /* the next use of this output set reads another group */
			bad_rot += perf_group(p, c) == perf_group(p, c + p->out_sets);
	}
	CHECKF(!bad_block, "a group used twice in a block of %d (G = %d)", p->block, p->groups);
	CHECKF(!bad_rot, "an output set met the same group twice in a row (G = %d)", p->groups);
	CHECKF(!bad_graph, "graph mode: output set != group");
}

int main(void)
{
	size_t l2 = 60 * MiB;   /* H200: 60 MB */
	struct perf_plan p;

	/* 2 MiB of inputs: 90 groups wanted, 64 allowed */
	perf_plan_make(&p, PERF_WARM, 2 * MiB, 2 * MiB, l2, 500, 100, 10);
	CHECK(p.groups == 64 && p.out_sets == 65 && p.block == 10);
	check_rules(&p, 2 * MiB, 2 * MiB, l2);
	/* 8 MiB: ceil(180 / 8) = 23 */
	perf_plan_make(&p, PERF_WARM, 8 * MiB, 8 * MiB, l2, 500, 100, 10);
	CHECK(p.groups == 23 && p.out_sets == 24);
	check_rules(&p, 8 * MiB, 8 * MiB, l2);
	/* 256 MiB: two groups, blocks of 2 */
	perf_plan_make(&p, PERF_COLD, 256 * MiB, 256 * MiB, l2, 500, 100, 10);
	CHECK(p.groups == 2 && p.out_sets == 3 && p.block == 2);
	check_rules(&p, 256 * MiB, 256 * MiB, l2);
	/* a scatter: the root holds W slabs, the others one; the rank with the
	 * least input decides (every rank gets the same plan), capped by the
	 * 16 GiB the root may hold */
	perf_plan_make(&p, PERF_WARM, 64 * MiB, 256 * MiB, l2, 500, 100, 10);
	CHECK(p.groups == 3);
	perf_plan_make(&p, PERF_WARM, 1 * MiB, 4096 * MiB, l2, 500, 100, 10);
	CHECK(p.groups == 4);   /* 16 GiB / 4 GiB */
	check_rules(&p, 1 * MiB, 4096 * MiB, l2);
	/* no inputs at all: still two groups */
	perf_plan_make(&p, PERF_WARM, 0, 0, l2, 5, 5, 10);
	CHECK(p.groups == 2);
	/* graph mode: one output set per group */
	for (size_t b = 1 * MiB; b <= 512 * MiB; b *= 2) {
		perf_plan_make(&p, PERF_GRAPH, b, b, l2, 500, 100, 10);
		CHECK(p.out_sets == p.groups);
		check_rules(&p, b, b, l2);
		perf_plan_make(&p, PERF_WARM, b, b, l2, 500, 100, 7);
		check_rules(&p, b, b, l2);
	}
	/* generations never collide with each other or with trials 0..999999 */
	CHECK(perf_trial(0, 0) == 1000000);
	CHECK(perf_trial(63, 0) != perf_trial(0, 1));
	CHECK(perf_mode_parse("cold") == PERF_COLD && perf_mode_parse("graph") == PERF_GRAPH);
	CHECK(perf_mode_parse("hot") == -1 && !strcmp(perf_mode_name(PERF_WARM), "warm"));
	return t_done("test_perfplan");
}
