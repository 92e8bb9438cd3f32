/*
 * timing.h -- the judge's timing engine (timing.c; docs/TIMING.md).
 */
#ifndef PKB_TIMING_H
#define PKB_TIMING_H

#include "rank_env.h"  /* defines: struct rank_env */

/* the judge: set up the timing (perf_begin), time solution s in its process
 * (perf_solution, before its fini), send every solution's perf record
 * with the candidate's re-check (perf_end) */
void perf_begin(struct rank_env *E);
void perf_solution(struct rank_env *E, int s);
void perf_end(struct rank_env *E);
/* around solution s's pkb_fini and exit (rank.c:sol_stop): the GPU's
 * temperature before (perf_heat_mark: -1 when not read), and after, kept
 * for its perf record */
int perf_heat_mark(struct rank_env *E);
void perf_heat_fini(struct rank_env *E, int s, int before);

#endif
