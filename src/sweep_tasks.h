/*
 * sweep_tasks.h -- what `pkb sweep` evaluates (cmd_sweep.c): the run
 * directory's candidates as tasks, each with its key and its shard, the
 * problems a spec selects, and the hidden shape each problem is checked at
 * besides the announced one (issue 44, item 10; docs/SWEEP.md). The sweep's
 * state, struct sweep, is here: its options, as cmd_sweep.c parses them,
 * and its tasks, as sweep_scan finds them.
 */
#ifndef PKB_SWEEP_TASKS_H
#define PKB_SWEEP_TASKS_H

#include "job.h"       /* defines: struct job_opts */

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* A problem's hidden shape: m, n 0 when it has none (why says so) */
struct hidden {
	int known;         /* computed (hidden_for) */
	long long m, n;
	char *why;
};

struct task {
	int problem;
	char *sample;      /* file stem: sample_0 */
	char *path;        /* NULL: no code (reply without a .cu) */
	char sha[65];
	char *key;
};

struct sweep {
	struct task *t;
	int n, cap;
	int W, trials, perf, lanes, ngpus, quiet;   /* W, trials, perf: eval's, below */
	int shard_i, shard_n;       /* shard_n 0: every evaluation */
	double timeout_s;
	const char *root, *spec, *out;
	/* eval's options, checked by eval's own table (job_opt) and passed on
	 * by job_opts_argv; the strings below are those of the key, as given */
	struct job_opts eval;
	const char *atol, *rtol;    /* eval's --atol/--rtol when given */
	const char *dtype, *m_arg, *n_arg;  /* eval's --dtype, --m, --n when given */
	const char *backend;        /* eval's --backend (NULL: eval's, cuda) */
	const char *from[4];        /* where W, dtype, shape, backend came from */
	char m_buf[24], n_buf[24];  /* --m, --n as run.json gave them */
	json_t *run_args;           /* DIR/run.json's args (NULL: none) */
	int dry_run;                /* compile and scan only: no GPU */
	int fake;                   /* PKB_RANK_CMD: pretend ranks (the tests) */
	int env_errors;             /* evaluations this machine could not run */
	unsigned char want[1024];   /* problem ids selected */
	json_t *args;               /* the options above as given, for --slurm's tasks */
	json_t *versions;           /* driver, CUDA runtime, NCCL of this host */
	/* the hidden shape: --hidden-shape MxN, else drawn per problem
	 * (hidden_for), or off */
	int hidden_off;
	long long hidden_m, hidden_n;   /* given; 0: drawn */
	uint64_t hidden_seed;           /* the draw's (hidden_seed) */
	struct hidden hid[1024];        /* per problem id, as want[] */
};

/* the problems SPEC selects (src/spec.c, as pkb generate), as a set of
 * ids: want[id] = 1; 0, or -1 after an error line */
int sweep_spec_select(const char *spec, unsigned char *want, size_t nwant);

/* the shard of a key, 0..n-1: a hash of the key alone, so that every task
 * of an array and every later submission agree without a shared plan
 * file, whatever else was recorded meanwhile */
int sweep_shard_of(const char *key, int n);

/* the hidden shapes' draw seed: DIR/run.json's args (which generate and
 * agent refuse to change on resume; its dates are left out) and the
 * announced instance, so that a resumed sweep, each --slurm task and
 * `--status` draw the same */
uint64_t sweep_hidden_seed(const struct sweep *s);

/* a timed sweep whose timing is not eval's default: warm, 100 calls after 500 */
int sweep_timing_given(const struct sweep *s);

/* the logs of an evaluation, relative to the run directory: eval's output
 * (.log) and, beside it, the ranks' logs (.ranks/); the caller frees */
char *sweep_task_log(const struct task *t, const char *ext);

/* every candidate under root, of the problems s->want selects, into s->t
 * (sorted by problem, then sample), each with its key and, when the sweep
 * has one, its problem's hidden shape */
void sweep_scan(struct sweep *s, const char *root);

#endif /* PKB_SWEEP_TASKS_H */
