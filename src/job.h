/*
 * job.h -- what `pkb run` and `pkb eval` share: their common options, the
 * compile-and-check step for solutions, the GPU count check, the launch,
 * and the collection of the ranks' result records.
 */
#ifndef PKB_JOB_H
#define PKB_JOB_H

#include <jansson.h>
#include "launch.h"    /* defines: struct launch_result */
#include "perfplan.h"  /* defines: enum perf_mode */
#include "wire.h"      /* defines: enum wire_mode */
#include "opts.h"      /* defines: struct opt */
#include "problem.h"   /* defines: struct pkb_problem, pkb_io */
#include "rendezvous.h"   /* defines: struct rdv_env */
#include "util.h"      /* defines: struct strvec */

struct job_opts {
	const struct pkb_problem *p;
	const char *backend;     /* eval's -b: what the candidate may use (default cuda) */
	int world;               /* 0: every GPU of this machine */
	long long m, n;
	pkb_dtype dtype;         /* bf16, fp16 or fp32 (--dtype, checked once) */
	long long seed;          /* < 0: drawn fresh for each evaluation (job_resolve) */
	int seed_drawn;          /* 1: the seed was drawn, not given (--seed) */
	const char *seed_file;   /* --seed-file: where the seed was read */
	int trials, trial0;
	double atol, rtol;       /* < 0: the problem's own */
	int measure_perf, warmup, iters;
	enum perf_mode timing;   /* --timing (default warm) */
	int timing_given;        /* --timing was given: said again by job_opts_argv */
	const char *trace_path;  /* --trace: a Chrome/Perfetto trace of the timed calls */
	const char *hw;          /* --hw: the roofline's machine (default: by GPU name) */
	const char *json_path;
	const char *save_dir;     /* run --save: absolute path */
	const char *ref_cache;    /* eval --ref-cache: absolute path; NULL none */
	const char *log_dir;     /* NULL: a temporary one, kept on failure */
	int keep_logs;
	int no_sandbox;          /* --no-sandbox: ranks load solutions unconfined */
	const char *arch;
	double deadline_s[PH_KIND_COUNT];
	double compile_s;
	int device_timeout_ms;
	int quiet;
	const char *launcher;    /* --launcher: NULL, every rank here */
	struct rdv_env nodes;    /* its variables, read by job_resolve */
	double rendezvous_s;
};

/* The option groups of the commands that run or describe a job (opts.h):
 * eval's own (-b, -t, --atol, --rtol), the dims (show, roofline, eval,
 * run), --json, and the launch's (eval, run). job_opt handles every id of
 * them; sweep and agent take eval's options through it too, so that one
 * table checks them wherever they are given. */
enum job_opt_id {
	OPT_M = 1001, OPT_N, OPT_SEED, OPT_MEASURE_PERF, OPT_WARMUP, OPT_ITERS, OPT_TIMING,
	OPT_TRACE, OPT_HW, OPT_DEADLINE, OPT_DEVICE_TIMEOUT, OPT_LOG_DIR, OPT_KEEP_LOGS,
	OPT_ARCH, OPT_NO_SANDBOX, OPT_LAUNCHER, OPT_ATOL, OPT_RTOL, OPT_SEED_FILE, OPT_REF_CACHE,
	OPT_JOB_END   /* commands number their own options from here */
};
extern const struct opt job_opts_eval[], job_opts_dims[], job_opts_json[], job_opts_launch[];

void job_opts_init(struct job_opts *o);
/* handle one option of the three groups: 1 if it was one, 0 if not, -1 bad
 * (after error()) */
int job_opt(struct job_opts *o, int c, const char *arg);
/* Eval's command line for the job `o` describes, after `pkb eval ID FILE`
 * (which the caller pushes): --gpus and --trials always, every other
 * option that differs from job_opts_init's default, in one fixed order.
 * Parsed back by job_opt it gives the same options: this is how sweep and
 * agent pass theirs on (issue 39: three copies of eval's command line had
 * drifted apart). */
void job_opts_argv(const struct job_opts *o, struct strvec *out);
/* describe the problem at the options' dims (world resolved) */
/* -1 (after error()) when M, N or M*N are too large for int64 byte counts */
int job_check_shape(const struct job_opts *o);
int job_resolve(struct job_opts *o, struct pkb_io *io);

struct job_solution {
	const char *role;        /* "reference", "candidate" */
	const char *src;
	int nccl;
	struct build_result *build;
};

/* compile (cache) and scan one solution: OUT_PASS, OUT_COMPILE_ERROR,
 * OUT_LOAD_REFUSED; `msg` says why */
enum pkb_outcome job_build(const struct job_opts *o, struct job_solution *s,
			   const char *backend, char *msg, size_t n);

/* collected MSG_RESULT records, one array per kind */
struct job_records {
	json_t *trial, *run, *perf;
	json_t *proc;   /* each solution process's steps (rank.c:send_steps) */
	/* during the launch: the job, against which job_launch checks each
	 * record before it is taken (its own rank number, a trial of the
	 * job's, one timing record per solution, each at most once), and
	 * "rank kind which" of the records taken */
	const struct wire_job *job;
	json_t *seen;
};

/* eval --ref-cache: the folder made and resolved (o->ref_cache becomes its
 * real path), and refused where a solution process of these solutions
 * could read it once sandboxed (sandbox.h): the reference's outputs kept
 * there are the answers. 0, or -1 with an error printed (a usage error). */
int job_ref_cache_check(struct job_opts *o, const struct job_solution *sols, int n_sol);

/* An input seed: drawn from the OS (62 bits, as --seed takes), or the one
 * a --seed-file holds (an integer, a newline or not). 0, or -1. */
int job_seed_draw(long long *seed);
int job_seed_read(const char *path, long long *seed);

/* launch the ranks with the given solutions; fills res and rec */
int job_launch(struct job_opts *o, enum wire_mode mode, struct job_solution *sols, int n_sol,
	       struct launch_result *res, struct job_records *rec, char **log_dir_out);
int gpu_count(void);
/* `pkb __probe` in a child (CUDA stays out of this process): its JSON
 * ({cuda_runtime, cuda_driver, nccl, gpus: [{name, cc, sms, ...}], p2p}), or
 * NULL with *rc its exit status (-2: it passed 60 s) */
json_t *gpu_probe(int *rc);
/* --trace: the timed calls of every rank as a Chrome/Perfetto trace; -1
 * (with a message) if the file cannot be written */
int job_write_trace(const struct job_opts *o, json_t *perf);
/* The roofline of this instance against a measured median t_ms (and the
 * reference's, ref_ms, or 0): {hw, bound_us, serial_us, bottleneck,
 * fraction, sol_score}, or {error} when there is none. *below is set when
 * t_ms is under the bound; `line` gets the sentence to print. */
json_t *job_roofline(const struct job_opts *o, const char *device, double t_ms, double ref_ms,
		     int *below, char *line, size_t n);
/* pkb's version, the date (UTC) and the host, into a result record */
void job_stamp(json_t *rec);
/* rec.gpu: the GPUs the ranks' records (trial or run) name, by name, each
 * once in rank order ("NVIDIA H200"; "A, B" on a mixed node), so that a
 * result says what it ran on; nothing when no record names one */
void job_stamp_gpus(json_t *rec, json_t *records);

/* The tails eval and run share. job_perf: the timed calls of `role`
 * summed up (*ps), the --trace file (*trace_failed set when it cannot be
 * written), the roofline of its median (against ref_ms, or 0) into
 * rec["roofline"] and `line`, and the timing verdict with its message. */
struct perf_summary;
enum pkb_outcome job_perf(const struct job_opts *o, json_t *perf, const char *role, double ref_ms,
			  json_t *rec, struct perf_summary *ps, int *trace_failed, char *line,
			  size_t line_n, char *msg, size_t n);
/* job_finish: outcome, exit_code, message and log_dir into rec, written to
 * --json; the verdict line "outcome: msg" on stdout (a pass only when
 * print_pass); the rank logs removed after a pass (unless kept) or named in
 * a hint (with the culprit rank, >= 0); rec freed. The exit status: the
 * outcome's, or 1 when a pass could not write its trace. */
int job_finish(const struct job_opts *o, json_t *rec, enum pkb_outcome out, const char *msg,
	       const char *logs, int culprit, int print_pass, int trace_failed);
void job_progress(const struct job_opts *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
