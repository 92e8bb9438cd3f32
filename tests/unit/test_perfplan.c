/*
 * test_perfplan.c -- the schedule of timed runs: group counts, block sizes
 * and the rotation rules that make skipped or cached calls visible; the
 * timing engine's bookkeeping (perf_track, perf_gate, blocks, ABBA) run over
 * whole schedules on the host, against a plain record of every call.
 */
#include "t.h"
#include "perfplan.h"

#include <stdlib.h>
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

/* one call as the engine made it: solution, group, generation, block */
struct call_rec {
	int s, g, gen, block;
};

/* The judge's schedule on the host for n_sol solutions, as timing.c's
 * perf_solution and perf_block make it: one solution after the other, each
 * from the same first content (perf_rewind), warmup blocks (the short one
 * first) then timed blocks, each block's groups drawn anew at its start.
 * Checks what a wrong bookkeeping would break. */
static void check_schedule(const struct perf_plan *p, int n_sol)
{
	struct perf_track tr[2];
	memset(tr, 0, sizeof tr);
	int total = n_sol * (p->warmup + p->iters);
	struct call_rec *rec = calloc((size_t)total + 1, sizeof *rec);
	int n = 0, blocks = 0, timed[2] = { 0, 0 }, bad_block = 0, last_warm = -1;
	for (int s = 0; s < n_sol; s++) {
		int gen[PERF_MAX_GROUPS] = { 0 };
		for (int phase = 0; phase < 2; phase++) {
			int want = phase ? p->iters : p->warmup;
			for (int done = 0, cnt; done < want; done += cnt) {
				cnt = phase ? perf_block_calls(done, want, p->block)
					    : perf_warmup_calls(done, want, p->block);
				bad_block += cnt < 1 || cnt > p->block;
				if (!phase && done + cnt == want)
					last_warm = cnt;
				for (long c = tr[s].call; c < tr[s].call + cnt; c++)
					gen[perf_group(p, c)]++;
				for (int i = 0; i < cnt; i++) {
					int g, o;
					perf_next_call(p, &tr[s], gen, &g, &o);
					rec[n++] = (struct call_rec){ s, g, gen[g], blocks };
					bad_block += g != perf_group(p, tr[s].call - 1) ||
						     o != perf_out_set(p, tr[s].call - 1);
				}
				if (phase)
					timed[s] += cnt;
				blocks++;
			}
		}
	}
	CHECKF(n == total && !bad_block, "%d calls of %d, %d bad blocks", n, total, bad_block);
	for (int s = 0; s < n_sol; s++)
		CHECKF(timed[s] == p->iters && tr[s].call == p->warmup + p->iters,
		       "solution %d: %d timed, %ld calls", s, timed[s], tr[s].call);
	/* the last warmup block is a whole one when the warmup has one */
	CHECKF(p->warmup < p->block || last_warm == p->block, "last warmup block of %d calls",
	       last_warm);
	/* within a solution, every (group, generation) is the content of one
	 * block only: no call sees inputs an earlier block's call has seen */
	int reused = 0;
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n && !reused; j++)
			reused += rec[i].s == rec[j].s && rec[i].g == rec[j].g &&
				  rec[i].gen == rec[j].gen && rec[i].block != rec[j].block;
	CHECKF(!reused, "a group's content met two blocks (G = %d, block %d)", p->groups, p->block);
	/* the solutions made the same calls on the same content: call k of
	 * one is call k of the other (the snapshots and the re-check compare
	 * them) */
	int differ = 0;
	for (int k = 0; n_sol == 2 && k < n / 2; k++)
		differ += rec[k].g != rec[n / 2 + k].g || rec[k].gen != rec[n / 2 + k].gen;
	CHECKF(!differ, "%d calls differ between the solutions", differ);
	/* the re-check: each output set's last call, found from the record */
	int bad_re = 0;
	for (int s = 0; s < n_sol; s++)
		for (int o = 0; o <= PERF_MAX_GROUPS; o++) {
			int last = -1, k = 0;
			for (int i = 0; i < n; i++)
				if (rec[i].s == s && k++ % p->out_sets == o)
					last = i;
			int g = -1, ge = -1;
			int used = perf_recheck_of(p, &tr[s], o, &g, &ge);
			if (o >= p->out_sets)
				bad_re += used;
			else if (last < 0)
				bad_re += used;
			else
				bad_re += !used || g != rec[last].g || ge != rec[last].gen;
		}
	CHECKF(!bad_re, "%d output sets re-checked against the wrong call", bad_re);
	free(rec);
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
	/* whole schedules: the engine's defaults, a block that does not divide
	 * the counts, one solution (pkb run), fewer calls than output sets */
	perf_plan_make(&p, PERF_WARM, 8 * MiB, 8 * MiB, l2, 50, 100, 10);
	check_schedule(&p, 2);
	perf_plan_make(&p, PERF_COLD, 256 * MiB, 256 * MiB, l2, 7, 13, 10);
	check_schedule(&p, 2);
	perf_plan_make(&p, PERF_GRAPH, 32 * MiB, 32 * MiB, l2, 25, 37, 4);
	check_schedule(&p, 1);
	perf_plan_make(&p, PERF_WARM, 2 * MiB, 2 * MiB, l2, 0, 3, 10);
	check_schedule(&p, 2);
	{
		struct perf_track t;
		memset(&t, 0, sizeof t);
		int gen[PERF_MAX_GROUPS] = { 0 }, g, o, ge;
		for (int i = 0; i < 3; i++)
			perf_next_call(&p, &t, gen, &g, &o);
		CHECK(perf_recheck_of(&p, &t, 2, &g, &ge) == 1 && g == 2);
		CHECK(perf_recheck_of(&p, &t, 3, &g, &ge) == 0);   /* no call wrote set 3 */
		CHECK(perf_recheck_of(&p, &t, -1, &g, &ge) == 0);
		CHECK(perf_recheck_of(&p, &t, p.out_sets, &g, &ge) == 0);
	}
	/* the gate: one expiry leaves it on, the second turns it off for good */
	struct perf_gate gate;
	perf_gate_init(&gate);
	CHECK(gate.on && !gate.misses);
	perf_gate_expired(&gate);
	CHECK(gate.on && gate.misses == 1);
	perf_gate_expired(&gate);
	CHECK(!gate.on && gate.misses == 2);
	perf_gate_expired(&gate);
	CHECK(!gate.on);
	/* blocks: 25 timed in tens is 10, 10, 5; 25 warmup is 5, 10, 10 */
	CHECK(perf_block_calls(0, 25, 10) == 10 && perf_block_calls(20, 25, 10) == 5);
	CHECK(perf_warmup_calls(0, 25, 10) == 5 && perf_warmup_calls(5, 25, 10) == 10 &&
	      perf_warmup_calls(15, 25, 10) == 10);
	CHECK(perf_warmup_calls(0, 20, 10) == 10 && perf_warmup_calls(0, 3, 10) == 3);

	/* generations never collide with each other or with trials 0..999999 */
	CHECK(perf_trial(0, 0) == 1000000);
	CHECK(perf_trial(63, 0) != perf_trial(0, 1));
	CHECK(perf_mode_parse("cold") == PERF_COLD && perf_mode_parse("graph") == PERF_GRAPH);
	CHECK(perf_mode_parse("hot") == -1 && !strcmp(perf_mode_name(PERF_WARM), "warm"));
	return t_done("test_perfplan");
}
