/*
 * sweep_slurm.h -- `pkb sweep DIR --slurm` (cmd_sweep.c): the evaluations
 * still missing as one Slurm job array whose task I runs `pkb sweep DIR
 * --shard I/N` into a file of its own, and the submissions so far
 * (DIR/slurm/jobs.jsonl), which `--status` reads back.
 */
#ifndef PKB_SWEEP_SLURM_H
#define PKB_SWEEP_SLURM_H

#include "sweep_tasks.h"   /* defines: struct sweep */

#include <jansson.h>

struct slurm_opts {
	int on, status, nodes, gpn;
	const char *partition, *time, *account, *cpus;
};

/* the submissions so far, one per line of DIR/slurm/jobs.jsonl (an empty
 * array when there is none) */
json_t *sweep_load_submissions(const char *root);

/* submit the tasks todo[0..ntodo) of s as one job array (the shards busy
 * in an earlier submission left out); 0, or the exit code after an error
 * line */
int sweep_submit(struct sweep *s, const struct slurm_opts *so, int *todo, int ntodo);

#endif /* PKB_SWEEP_SLURM_H */
