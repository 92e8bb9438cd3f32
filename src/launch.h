/*
 * launch.h -- the parent side of one launch: start W rank processes, send
 * them the job, relay their host collectives, hold a deadline for every phase
 * each rank enters, and on a failure, a crash or an expired deadline kill
 * every rank's process group and say what happened where. The parent never
 * touches CUDA; it survives anything a rank does.
 */
#ifndef PKB_LAUNCH_H
#define PKB_LAUNCH_H

#include <sys/types.h>
#include <jansson.h>
#include "launch_result.h"   /* defines: struct launch_result, struct rank_report */
#include "phases.h"     /* defines: enum phase_kind, phase_kind_name, phase_kind_parse */

struct rdv_env;

struct launch_opts {
	int world;                 /* ranks in all, over every node */
	const char *const *argv;   /* rank program; NULL: this binary's __rank */
	const char *log_dir;       /* rank_<r>.log files go here */
	/* the ranks' TMPDIR, or NULL (theirs is the parent's): job.c makes one a
	 * launch and removes it after, however the ranks ended, so that nothing
	 * a solution process leaves there (a Python solution's scratch folder,
	 * Triton's cache) outlives its evaluation */
	const char *tmp_dir;
	json_t *job;               /* sent to each rank with "rank" filled in */
	double deadline_s[PH_KIND_COUNT];
	double grace_s;            /* after a failure, time the others get */
	void (*on_result)(void *arg, int rank, json_t *rec);
	/* Before on_result, when set: 0 to take the record, -1 (with `why`) to
	 * refuse it -- a record the job does not expect of that rank (a second
	 * timing record, another rank's number): the rank fails as flagged. */
	int (*check_result)(void *arg, int rank, json_t *rec, char *why, size_t n);
	void *arg;
	/* The most announcements of each phase kind the job makes on one rank
	 * (job.c counts them from the job); 0: no limit, -1: none. With any limit set, a
	 * rank's phases must also come in the rank's order (start, cuda_init,
	 * nccl_init, load, init, trial, save, timing, fini) and be of a known
	 * kind: a phase re-arms its deadline, so an announcement the rank's
	 * own code does not make (a candidate writing frames to stay alive)
	 * fails the rank as flagged, and no rank outlives the sum of its
	 * phases' budgets. */
	int phase_max[PH_KIND_COUNT];
	/* one launch across nodes (docs/MULTINODE.md): this agent's place in
	 * the launcher's world, or NULL (or a world of one node): every rank
	 * here, as always. Node 0 becomes the parent of all ranks; the other
	 * agents start theirs and relay. An agent's job gets node 0's perf
	 * warmup. */
	const struct rdv_env *nodes;
	double rendezvous_s;       /* how long the agents wait for each other */
};

void launch_opts_init(struct launch_opts *o, int world);
/* 0 when the launch ran (whatever its outcome; env_error when the nodes
 * could not meet), -1 if it could not start */
int launch_run(const struct launch_opts *o, struct launch_result *res);
void launch_result_free(struct launch_result *res);

#endif
