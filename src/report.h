/*
 * report.h -- turning the ranks' records into verdicts and figures: the
 * first failing trial, timing statistics over ranks (docs/TIMING.md), and
 * the JSON record every command writes.
 */
#ifndef PKB_REPORT_H
#define PKB_REPORT_H

#include <jansson.h>
#include "exitcode.h"   /* defines: enum pkb_outcome */
#include "launch_result.h"   /* defines: struct launch_result */
#include "perfplan.h"   /* defines: enum perf_mode, perf_mode_name */
#include "stats.h"      /* defines: struct stats */
#include "wire.h"       /* defines: struct wire_heat */

/* the first failing (trial, rank) of `trials`, as one line; 0 if all pass */
int report_trials(json_t *trials, int world, char *msg, size_t n, int *trials_passed);

struct perf_summary {
	int ok;               /* records from every rank */
	struct stats st;      /* per-iteration max over ranks */
	double skew_ms;       /* median over iterations of (max - min over ranks) */
	int recheck_ok;
	char recheck_msg[512];
	int escaped;          /* host clock far above the stream's span */
	double host_ms, span_ms;
	int groups, block;
	enum perf_mode mode;  /* the records' timing mode (perfplan.h's table) */
	int inputs_modified;  /* a timed call wrote into its inputs */
	int gate_expired;     /* timed blocks whose launch gate expired (most on a rank) */
	char device[64];      /* the GPU's name, as CUDA gives it */
	int ranks;            /* world: entries of rank_median_ms */
	double rank_median_ms[64];   /* each rank's own median (--gpus is at most 63) */
	/* the GPUs' heat over the ranks (wire.h; read only when every rank read
	 * it): the hottest rank's C and the slowest rank's SM MHz at both
	 * readings, the longest wait to cool, the most degrees a rank was still
	 * above the first solution's start (on hot_rank) and the most its
	 * pkb_fini raised a GPU's (on rise_rank) */
	struct wire_heat heat;
	int hot_rank, rise_rank;
};
/* summarise the perf records of one solution (role) over W ranks */
void report_perf(json_t *perf, const char *role, int world, int iters, struct perf_summary *ps);
json_t *report_perf_json(const struct perf_summary *ps);
/* The verdict of one solution's timing (role names it in the message):
 * records missing, a failed re-check, work escaped the timed stream, or a
 * median below the hardware's bound (below, with bound_line saying which);
 * OUT_PASS otherwise, with msg untouched. */
enum pkb_outcome report_perf_verdict(const struct perf_summary *ps, const char *role, int below,
				     const char *bound_line, char *msg, size_t n);
/* the timed calls of every rank as a Chrome/Perfetto trace: one process per
 * rank, one thread per solution, one slice per call (start from the timed
 * phase's first alignment barrier on that rank, in microseconds) */
json_t *report_trace(json_t *perf, int world, const char *title);
json_t *report_launch_json(const struct launch_result *res);

#endif
