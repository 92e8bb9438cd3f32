/*
 * job.h -- what `pkb run` and `pkb eval` share: their common options, the
 * compile-and-check step for solutions, the GPU count check, the launch,
 * and the collection of the ranks' result records.
 */
#ifndef PKB_JOB_H
#define PKB_JOB_H

#include <getopt.h>
#include <jansson.h>
#include "launch.h"    /* defines: struct launch_result */
#include "problem.h"   /* defines: struct pkb_problem, pkb_io */
#include "rendezvous.h"   /* defines: struct rdv_env */

struct job_opts {
	const struct pkb_problem *p;
	int world;               /* 0: every GPU of this machine */
	long long m, n;
	const char *dtype;
	long long seed;
	int trials, trial0;
	double atol, rtol;       /* < 0: the problem's own */
	int measure_perf, warmup, iters;
	const char *timing;      /* warm (default) | cold | graph */
	const char *trace_path;  /* --trace: a Chrome/Perfetto trace of the timed calls */
	const char *hw;          /* --hw: the roofline's machine (default: by GPU name) */
	const char *json_path;
	const char *save_dir;     /* run --save: absolute path */
	const char *log_dir;     /* NULL: a temporary one, kept on failure */
	int keep_logs;
	const char *arch;
	double deadline_s[PH_KIND_COUNT];
	double compile_s;
	int device_timeout_ms;
	int quiet;
	const char *launcher;    /* --launcher: NULL, every rank here */
	struct rdv_env nodes;    /* its variables, read by job_resolve */
	double rendezvous_s;
};

/* the options both commands take; each command appends its own */
#define JOB_LONG_OPTIONS \
	{ "gpus", required_argument, NULL, 'g' }, \
	{ "m", required_argument, NULL, 'M' }, \
	{ "n", required_argument, NULL, 'N' }, \
	{ "dtype", required_argument, NULL, 'd' }, \
	{ "seed", required_argument, NULL, 1001 }, \
	{ "json", required_argument, NULL, 'j' }, \
	{ "measure-perf", no_argument, NULL, 1002 }, \
	{ "warmup", required_argument, NULL, 1003 }, \
	{ "iters", required_argument, NULL, 1004 }, \
	{ "deadline", required_argument, NULL, 1005 }, \
	{ "log-dir", required_argument, NULL, 1006 }, \
	{ "keep-logs", no_argument, NULL, 1007 }, \
	{ "arch", required_argument, NULL, 1008 }, \
	{ "device-timeout", required_argument, NULL, 1009 }, \
	{ "timing", required_argument, NULL, 1010 }, \
	{ "trace", required_argument, NULL, 1011 }, \
	{ "hw", required_argument, NULL, 1012 }, \
	{ "launcher", required_argument, NULL, 1013 }, \
	{ "quiet", no_argument, NULL, 'q' }, \
	{ "help", no_argument, NULL, 'h' }

#define JOB_OPTIONS_HELP \
"  -g, --gpus W           world size (default: every GPU here)\n" \
"      --m M, --n N       base shape (default 1024 1024)\n" \
"  -d, --dtype T          bf16 | fp16 | fp32 (default bf16)\n" \
"      --seed S           input seed (default 42)\n" \
"  -j, --json FILE        write the full result as JSON\n" \
"      --measure-perf     time the solution(s) (docs/TIMING.md)\n" \
"      --warmup N         warmup calls per solution (default 500)\n" \
"      --iters N          timed calls per solution (default 100)\n" \
"      --timing MODE      warm (default): inputs rotated through groups over\n" \
"                         3 x L2; cold: also L2 flushed before every call;\n" \
"                         graph: each call replayed from a CUDA graph\n" \
"      --trace FILE       write the timed calls of every rank as a\n" \
"                         Chrome/Perfetto trace (JSON)\n" \
"      --hw NAME          the machine of the roofline (hw/NAME.json or local;\n" \
"                         default: the nominal one of this GPU; docs/ROOFLINE.md)\n" \
"      --deadline K=S     phase deadline in seconds; K: start, cuda_init,\n" \
"                         nccl_init, load, init, trial, timing, save, fini, compile,\n" \
"                         rendezvous (--launcher: the nodes meeting, default 300)\n" \
"      --device-timeout MS  bounded device waits give up after MS (default 5000)\n" \
"      --log-dir DIR      per-rank logs here (default: a temporary folder,\n" \
"                         kept and named when the run fails)\n" \
"      --keep-logs        keep the logs of a run that passed\n" \
"      --arch SM          nvcc target (default sm_90a, or $PKB_ARCH)\n" \
"      --launcher L       one evaluation over the nodes of srun, mpirun or\n" \
"                         torchrun --no-python, one pkb per task: slurm, mpi,\n" \
"                         torch, or env (whichever's variables are set); W is\n" \
"                         over all nodes (default: one rank per task) and\n" \
"                         node 0 listens at MASTER_ADDR:MASTER_PORT\n" \
"                         (docs/MULTINODE.md)\n" \
"  -q, --quiet            no progress on stderr\n"

void job_opts_init(struct job_opts *o);
/* handle one option of JOB_LONG_OPTIONS: 1 if it was one, 0 if not, -1 bad */
int job_opt(struct job_opts *o, int c, const char *arg);
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
};

/* launch the ranks with the given solutions; fills res and rec */
int job_launch(struct job_opts *o, const char *mode, struct job_solution *sols, int n_sol,
	       struct launch_result *res, struct job_records *rec, char **log_dir_out);
int gpu_count(void);
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
void job_progress(const struct job_opts *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
