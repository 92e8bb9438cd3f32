/*
 * lanes.h -- launches side by side on disjoint sets of GPUs (issue 24), for
 * `pkb sweep` and, through `pkb sweep --jobs`, tools/test-gpu.
 *
 * A launch of W GPUs runs on an aligned set (GPUs W*i .. W*i+W-1 of the N
 * given) with CUDA_VISIBLE_DEVICES naming that set, in its own process
 * group. Sets of one size never overlap, so no two launches touch a GPU
 * unless both allow it: a launch's `share` is the most launches each of its
 * GPUs may carry, itself included. A timed launch has share 1 (it owns its
 * GPUs: another kernel on them would be in its timing); untimed launches
 * may share (two on a set are time-sliced by the driver, and a launch is
 * mostly CUDA and NCCL start-up, so two at once finish sooner than two in
 * turn). Launches start in the order given: one that does not fit yet
 * waits, and no later one passes it (a W = 8 launch is never starved by
 * a stream of W = 2 ones).
 */
#ifndef PKB_LANES_H
#define PKB_LANES_H

#include <sys/types.h>

struct lanes_job {
	int world;          /* GPUs it needs */
	int share;          /* most launches on each of its GPUs, itself included (>= 1) */
	char **argv;        /* run with execvp, in its own process group */
	const char *log;    /* stdout and stderr into this file; NULL: inherited */
	double timeout_s;   /* its group is killed after this long; 0: never */
};

/* one finished launch, as the caller's callback sees it */
struct lanes_done {
	int job;            /* index into the jobs given */
	int status;         /* exit status, 128 + signal, -2: killed at timeout_s,
	                     * 127: could not be started */
	double seconds;
	const char *gpus;   /* the CUDA_VISIBLE_DEVICES it ran with */
};

typedef void (*lanes_done_fn)(void *ctx, const struct lanes_done *d);

/* Run jobs[0..n) on `ngpus` GPUs, at most `maxrun` at once (0: no limit
 * beyond the GPUs'), calling done() as each ends. The GPU numbers are
 * positions in the caller's CUDA_VISIBLE_DEVICES when it names at least
 * ngpus devices (a Slurm task's GPUs), else 0..ngpus-1. Orphaned rank
 * groups of a launch killed at its timeout are killed too (the caller
 * becomes their subreaper). SIGTERM, SIGINT or SIGHUP (scancel, ^C) kills
 * every running launch's group and returns 128 + the signal, with done()
 * called for none of those; 0 when all ran; -1 with an error printed when
 * a job can never fit (world > ngpus or < 1: before any starts) or a fork
 * fails (then as a stop). */
int lanes_run(struct lanes_job *jobs, int n, int ngpus, int maxrun, lanes_done_fn done, void *ctx);

/* A child of the caller's that is no launch and must outlive them (the
 * sweep's `pkb hold`): lanes_run's kill of orphans after a timeout spares
 * it; a stop kills it with the rest. 0: none. */
void lanes_spare(pid_t pid);

/* Where a launch of `world` GPUs and `share` goes now: the first GPU of
 * the aligned set that fits with the least load (the lowest such on a
 * tie), or -1 when none fits. load[g]: launches on GPU g; cap[g]: the
 * smallest share among them (ignored where load[g] is 0). Pure, for the
 * unit test. */
int lanes_place(const int *load, const int *cap, int ngpus, int world, int share);

#endif
