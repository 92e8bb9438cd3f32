/*
 * perfplan.h -- the schedule of a timed run (docs/TIMING.md), as plain
 * arithmetic so that it is tested on the CPU: how many input groups, how
 * many output sets, how many calls a block holds, and which group, output
 * set and content generation each call uses.
 *
 * The rules it guarantees (tests/unit/test_perfplan.c checks them):
 *  - every rank computes the same plan (it depends on values all ranks share);
 *  - the groups together hold at least 3 x L2 of inputs on the rank with the
 *    least input bytes (bounded: 16 GiB on the rank with the most, 64 groups);
 *  - no group is used twice inside a block, so regenerating a block's groups
 *    after it gives every call input content no call has seen before;
 *  - warm and cold modes: consecutive uses of an output set read different
 *    groups, so a skipped call leaves another group's result behind;
 *  - graph mode: output set = group (one captured graph per group).
 */
#ifndef PKB_PERFPLAN_H
#define PKB_PERFPLAN_H

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* X(ID, name, help): the one table of timing modes (issue 39), as phases.h
 * is of phases. The enum, the names of --timing, of the wire's perf.mode
 * (wire.c refuses any other) and of the perf record, and --timing's help
 * are all made from it; the first is the default. */
#define PKB_TIMING_MODES(X) \
	X(WARM,  warm,  "inputs rotated through groups over 3 x L2") \
	X(COLD,  cold,  "also L2 flushed before every call") \
	X(GRAPH, graph, "each call replayed from a CUDA graph")

#define PKB_TIMING_ENUM_(id, name, help) PERF_##id,
enum perf_mode { PKB_TIMING_MODES(PKB_TIMING_ENUM_) PERF_MODE_COUNT };
#undef PKB_TIMING_ENUM_

/* "cold" for PERF_COLD, "?" out of range; no link needed (wire.c and the
 * fake rank use them without perfplan.c) */
static inline const char *perf_mode_name(enum perf_mode m)
{
#define PKB_TIMING_NAME_(id, name, help) [PERF_##id] = #name,
	static const char *const names[PERF_MODE_COUNT] = { PKB_TIMING_MODES(PKB_TIMING_NAME_) };
#undef PKB_TIMING_NAME_
	return (unsigned)m < PERF_MODE_COUNT ? names[m] : "?";
}
/* the mode named s, or -1 */
static inline int perf_mode_parse(const char *s)
{
	for (int m = 0; s && m < PERF_MODE_COUNT; m++)
		if (!strcmp(s, perf_mode_name((enum perf_mode)m)))
			return m;
	return -1;
}

/* --timing's help, one string literal: a line per mode, "  name: help" */
#define PKB_TIMING_HELP_(id, name, help) "\n  " #name ": " help
#define PKB_TIMING_HELP PKB_TIMING_MODES(PKB_TIMING_HELP_)
/* "warm, cold or graph" into buf, for messages */
static inline const char *perf_mode_list(char *buf, size_t n)
{
	size_t off = 0;
	buf[0] = 0;
	for (int m = 0; m < PERF_MODE_COUNT && off < n; m++)
		off += (size_t)snprintf(buf + off, n - off, "%s%s", m == 0 ? ""
					: m == PERF_MODE_COUNT - 1 ? " or " : ", ",
					perf_mode_name((enum perf_mode)m));
	return buf;
}

#define PERF_MAX_GROUPS 64

struct perf_plan {
	enum perf_mode mode;
	int groups;      /* G: input groups of distinct content */
	int out_sets;    /* G + 1 (warm, cold) or G (graph) */
	int block;       /* calls per block: min(block asked, G) */
	int warmup, iters;
};

/* least_in/most_in: the smallest and largest input bytes of any rank */
void perf_plan_make(struct perf_plan *p, enum perf_mode mode, size_t least_in, size_t most_in,
		    size_t l2, int warmup, int iters, int block);

static inline int perf_group(const struct perf_plan *p, long call) { return (int)(call % p->groups); }
static inline int perf_out_set(const struct perf_plan *p, long call) { return (int)(call % p->out_sets); }
/* ---- the bookkeeping of the timing engine (timing.c), kept here so that
 * host tests cover it: the engine does the CUDA, these say what to do ---- */

/* one solution's calls: where each went, and what each output set holds */
struct perf_track {
	long call;                              /* calls made so far (rotation counter) */
	int last_group[PERF_MAX_GROUPS + 1];    /* per output set: its last call's group */
	int last_gen[PERF_MAX_GROUPS + 1];      /* ... and that group's generation then */
};

/* The next call of a solution: its group and output set, noted as the
 * set's content (gen[g]: the generation group g holds now). */
void perf_next_call(const struct perf_plan *p, struct perf_track *t, const int *gen,
		    int *group, int *out_set);
/* After the timed calls: 1 when output set o was written, with the group
 * and generation of its last call (the re-check draws them again), 0 when
 * no call used it (fewer calls than output sets). */
int perf_recheck_of(const struct perf_plan *p, const struct perf_track *t, int o, int *group,
		    int *gen);

/* The launch gate (docs/TIMING.md): on until it has expired twice, warmup
 * included; a block run after it turned off is not gated. */
struct perf_gate {
	int on;
	int misses;      /* expiries so far */
};
static inline void perf_gate_init(struct perf_gate *g) { g->on = 1; g->misses = 0; }
/* a gated block whose gate expired */
static inline void perf_gate_expired(struct perf_gate *g)
{
	if (++g->misses >= 2)
		g->on = 0;
}

/* calls in the block that starts after `done` of `total`: whole blocks,
 * then the rest */
static inline int perf_block_calls(int done, int total, int block)
{
	return total - done < block ? total - done : block;
}
/* calls in the warmup block that starts after `done` of `total`: the short
 * block first, then whole blocks, so that the last warmup block is as long
 * as a timed one and no block's length marks where the timed calls begin
 * (the warmup count has a random part, job.c:warmup_jitter) */
static inline int perf_warmup_calls(int done, int total, int block)
{
	int first = total % block;
	return done == 0 && first ? first : total - done < block ? total - done : block;
}

/* the trial number whose inputs generation `gen` of group g holds: no
 * correctness trial uses these */
static inline int perf_trial(int group, int gen) { return 1000000 + gen * PERF_MAX_GROUPS + group; }

#endif
