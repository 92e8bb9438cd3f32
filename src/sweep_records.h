/*
 * sweep_records.h -- a sweep's records (cmd_sweep.c): the keys a run has
 * recorded (results.jsonl and the shard files, a torn last line cut), the
 * host's versions every record carries, and one candidate's record made
 * from eval's JSON at both shapes (docs/SWEEP.md's fields).
 */
#ifndef PKB_SWEEP_RECORDS_H
#define PKB_SWEEP_RECORDS_H

#include "result.h"        /* defines: struct result */
#include "sweep_tasks.h"   /* defines: struct sweep, struct task */

#include <jansson.h>

/* Into `done` (key -> outcome) every key recorded: in `out` alone when -o
 * names a file of its own, else in every file of the run. `out`, the file
 * that will be appended to, loses a torn last line and its env_error
 * records; `out` NULL (--status, a submission): every file only read. 0,
 * or -1 after an error line */
int sweep_load_done(const struct sweep *s, const char *out, json_t *done);

/* the driver, CUDA runtime and NCCL of this host, as strings (null where
 * there is none) */
json_t *sweep_host_versions(void);

/* a json string of an allocated C string, which it frees */
json_t *sweep_json_str(char *v);

/* a launch's verdict as its record says it (res: eval's JSON, r: it as
 * read; rc: the launch's exit status, -2 when killed at its deadline) */
const char *sweep_task_outcome(const struct task *t, json_t *res, const struct result *r, int rc);

/* a candidate's record at the announced shape (res NULL: none; r: res as
 * read; secs: the launch's wall time) */
json_t *sweep_make_record(struct sweep *s, struct task *t, json_t *res, const struct result *r,
			  int rc, double secs);

#endif /* PKB_SWEEP_RECORDS_H */
