/*
 * sweep_run.h -- a sweep on this machine (cmd_sweep.c): its tasks through
 * `pkb eval` in lanes of W GPUs (lanes.c), each candidate at the announced
 * shape and the hidden one, one record a candidate appended as both end,
 * progress on stderr; --dry-run's compile-only pass; --jobs FILE's
 * commands in the same lanes.
 */
#ifndef PKB_SWEEP_RUN_H
#define PKB_SWEEP_RUN_H

#include "sweep_tasks.h"   /* defines: struct sweep */

/* unless a seed was chosen: one seed for the whole run and the reference's
 * outputs kept in DIR/.pkb-refcache (eval --seed-file, --ref-cache) */
void sweep_keep_reference(struct sweep *s);

/* the tasks todo[0..ntodo) of s, their records appended to fd (res_path
 * names it in messages): the sweep's exit code */
int sweep_run_local(struct sweep *s, int *todo, int ntodo, const char *res_path, int fd);

/* the same, compiled and scanned only (no GPU): compile_error, load_refused
 * and no_code recorded, the rest left for a GPU node */
int sweep_run_dry(struct sweep *s, int *todo, int ntodo, const char *res_path, int fd);

/* --jobs FILE: one JSON command a line, run in lanes over ngpus GPUs */
int sweep_run_jobs(const char *file, int ngpus, int lanes, int quiet);

#endif /* PKB_SWEEP_RUN_H */
