/*
 * job.c -- see job.h.
 */
#define _GNU_SOURCE
#include "job.h"
#include "perfplan.h"   /* defines: perf_mode_parse, PKB_TIMING_HELP */
#include "wire.h"       /* defines: struct wire_job, wire_job_pack */
#include "build.h"    /* defines: build_solution */
#include "dtype.h"    /* defines: dtype_parse, dtype_name */
#include "loader.h"   /* defines: loader_scan, loader_backend_valid */
#include "mps.h"      /* defines: mps_start, mps_stop */
#include "report.h"   /* defines: report_trace */
#include "roofline.h" /* defines: roofline_compute, sol_score */
#include "sandbox.h"  /* defines: sandbox_landlock_abi, sandbox_rank_can_read */
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>
#include <unistd.h>

void job_opts_init(struct job_opts *o)
{
	memset(o, 0, sizeof *o);
	o->backend = "cuda";
	o->m = o->n = 1024;
	o->dtype = PKB_BF16;
	o->timing = PERF_WARM;
	o->seed = -1;
	o->trials = 1;
	o->atol = o->rtol = -1;
	o->warmup = 500;
	o->iters = 100;
	o->compile_s = 300;
	o->device_timeout_ms = 5000;
	struct launch_opts lo;
	launch_opts_init(&lo, 1);
	memcpy(o->deadline_s, lo.deadline_s, sizeof o->deadline_s);
	o->rendezvous_s = lo.rendezvous_s;
}

const struct opt job_opts_eval[] = {
	{ 'b', "backend", "B", "what the candidate may use: cuda (default: no NCCL),\n"
			       "nccl-device (NCCL's windows and device API, no host\n"
			       "collectives), parallelkittens (cuda with the headers\n"
			       "of ThunderKittens at $THUNDERKITTENS_ROOT), triton\n"
			       "(a .py file in the original's format), or\n"
			       "reference (anything: for A/A checks)" },
	{ 't', "trials", "K", "trials (default 5), each with fresh inputs" },
	{ OPT_ATOL, "atol", "A", "override the problem's absolute tolerance\n"
				 "(docs/TOLERANCE.md)" },
	{ OPT_RTOL, "rtol", "R", "override the problem's relative tolerance" },
	{ OPT_REF_CACHE, "ref-cache", "DIR", "keep the reference's trial outputs in DIR and\n"
					    "reuse them where an evaluation repeats the\n"
					    "instance and its seed (untimed only; docs/SWEEP.md)" },
	OPTS_END,
};
const struct opt job_opts_dims[] = {
	{ 'g', "gpus", "W", "world size (default: every GPU here)" },
	{ OPT_M, "m", "M", "base shape: rows (default 1024)" },
	{ OPT_N, "n", "N", "base shape: columns (default 1024)" },
	{ 'd', "dtype", "T", "bf16 | fp16 | fp32 (default bf16)" },
	OPTS_END,
};
const struct opt job_opts_json[] = {
	{ 'j', "json", "FILE", "write the full result as JSON ('-': stdout)" },
	OPTS_END,
};
const struct opt job_opts_launch[] = {
	{ OPT_SEED, "seed", "S", "input seed, to reproduce an evaluation (default:\n"
				  "drawn fresh each time and recorded in the JSON)" },
	{ OPT_SEED_FILE, "seed-file", "FILE", "the seed read from FILE, kept out of the\n"
					      "command line (which other processes can read)" },
	{ OPT_MEASURE_PERF, "measure-perf", NULL, "time the solution(s) (docs/TIMING.md)" },
	{ OPT_WARMUP, "warmup", "N", "warmup calls per solution (default 500)" },
	{ OPT_ITERS, "iters", "N", "timed calls per solution (default 100)" },
	{ OPT_TIMING, "timing", "MODE", "how each call is timed (default warm):"
					PKB_TIMING_HELP },
	{ OPT_TRACE, "trace", "FILE", "write the timed calls of every rank as a\n"
				      "Chrome/Perfetto trace (JSON)" },
	{ OPT_HW, "hw", "NAME", "the machine of the roofline (hw/NAME.json or local;\n"
				"default: the nominal one of this GPU; docs/ROOFLINE.md)" },
	{ OPT_DEADLINE, "deadline", "K=S", "phase K's deadline in seconds (repeatable); K and\n"
					   "its default:" PKB_PHASES_HELP "\n"
					   "  compile (300 s): nvcc, in the parent\n"
					   "  rendezvous (300 s): the nodes meeting (--launcher)" },
	{ OPT_DEVICE_TIMEOUT, "device-timeout", "MS", "bounded device waits give up after MS\n"
						      "(default 5000)" },
	{ OPT_LOG_DIR, "log-dir", "DIR", "per-rank logs here (default: a temporary folder,\n"
					 "kept and named when the run fails)" },
	{ OPT_KEEP_LOGS, "keep-logs", NULL, "keep the logs of a run that passed" },
	{ OPT_ARCH, "arch", "SM", "nvcc target (default sm_90a, or $PKB_ARCH)" },
	{ OPT_NO_SANDBOX, "no-sandbox", NULL, "ranks load solutions without their seccomp filter\n"
					      "and Landlock rules (trusted code only;\n"
					      "docs/ANTI_CHEAT.md)" },
	{ OPT_LAUNCHER, "launcher", "L", "one evaluation over the nodes of srun, mpirun or\n"
					  "torchrun --no-python, one pkb per task: slurm, mpi,\n"
					  "torch, or env (whichever's variables are set); W is\n"
					  "over all nodes (default: one rank per task) and\n"
					  "node 0 listens at MASTER_ADDR:MASTER_PORT\n"
					  "(docs/MULTINODE.md)" },
	{ 'q', "quiet", NULL, "no progress on stderr" },
	OPTS_END,
};

/* path made absolute against the working folder (the ranks and the
 * evaluations sweep starts may run elsewhere); kept for the process's life */
static const char *abs_path(const char *path)
{
	if (path[0] == '/')
		return path;
	char cwd[4096];
	return getcwd(cwd, sizeof cwd) ? xstrfmt("%s/%s", cwd, path) : path;
}

/* job_opt's instance: what runs, on how many GPUs, at which shape, dtype
 * and seed; 1, 0 when not one of them, -1 bad (after error()) */
static int instance_opt(struct job_opts *o, int c, const char *arg)
{
	long long v;
	switch (c) {
	case 'b':
		if (!loader_backend_valid(arg)) {
			error("unknown backend '%s'", arg);
			hint("candidates use --backend %s; --backend reference (NCCL allowed) is "
			     "for A/A checks of a reference against itself", loader_backend_names());
			return -1;
		}
		o->backend = arg;
		return 1;
	case 't':
		/* atoi took "3x" as 3 */
		if (opt_int("trials", arg, 1, 10000, &v) < 0)
			return -1;
		o->trials = (int)v;
		return 1;
	case OPT_ATOL:
	case OPT_RTOL:
		return opt_num(c == OPT_ATOL ? "atol" : "rtol", arg, 0, 1e30,
			       c == OPT_ATOL ? &o->atol : &o->rtol) < 0 ? -1 : 1;
	case 'g':
		if (parse_int_in(arg, 1, 63, &v) < 0)
			return error("--gpus takes a world size from 1 to 63, not '%s'", arg);
		o->world = (int)v;
		return 1;
	case OPT_M:
	case OPT_N:
		if (parse_int_in(arg, 1, 1ll << 40, &v) < 0)
			return error("--%c takes a positive integer, not '%s'", c == OPT_M ? 'm' : 'n',
				     arg);
		*(c == OPT_M ? &o->m : &o->n) = v;
		return 1;
	case 'd':
		return opt_dtype(arg, &o->dtype) < 0 ? -1 : 1;
	case OPT_SEED:
		if (parse_int_in(arg, 0, (1ll << 62), &v) < 0)
			return error("--seed takes a non-negative integer, not '%s'", arg);
		o->seed = v;
		return 1;
	case OPT_SEED_FILE:
		if (job_seed_read(arg, &v) < 0)
			return error("--seed-file %s: not a file holding one non-negative integer", arg);
		o->seed = v;
		o->seed_file = abs_path(arg);
		return 1;
	case OPT_REF_CACHE:
		if (!*arg)
			return error("--ref-cache takes a folder");
		o->ref_cache = abs_path(arg);
		return 1;
	}
	return 0;
}

/* --deadline KIND=SECONDS: 1, or -1 bad (after error()) */
static int deadline_opt(struct job_opts *o, const char *arg)
{
	const char *eq = strchr(arg, '=');
	double s = 0;
	if (!eq || parse_num_in(eq + 1, 1e-3, 1e7, &s) < 0)
		return error("--deadline takes KIND=SECONDS (0.001 to 1e7), not '%s'", arg);
	char kind[32];
	snprintf(kind, sizeof kind, "%.*s", (int)(eq - arg), arg);
	if (!strcmp(kind, "compile")) {
		o->compile_s = s;
		return 1;
	}
	if (!strcmp(kind, "rendezvous")) {
		o->rendezvous_s = s;
		return 1;
	}
	int k = phase_kind_parse(kind);
	if (k < 0)
		return error("unknown phase '%s' in --deadline", kind);
	o->deadline_s[k] = s;
	return 1;
}

/* job_opt's timing: --measure-perf and what it takes; 1, 0, -1 as above */
static int timing_opt(struct job_opts *o, int c, const char *arg)
{
	long long v;
	switch (c) {
	case OPT_MEASURE_PERF: o->measure_perf = 1; return 1;
	case OPT_WARMUP:
	case OPT_ITERS:
		if (parse_int_in(arg, c == OPT_WARMUP ? 0 : 1, 1000000, &v) < 0)
			return error("--%s takes a count, not '%s'", c == OPT_WARMUP ? "warmup" : "iters",
				     arg);
		*(c == OPT_WARMUP ? &o->warmup : &o->iters) = (int)v;
		o->measure_perf = 1;
		return 1;
	case OPT_TIMING: {
		int m = perf_mode_parse(arg);
		char names[64];
		if (m < 0)
			return error("--timing takes %s, not '%s'", perf_mode_list(names, sizeof names),
				     arg);
		o->timing = (enum perf_mode)m;
		o->timing_given = 1;
		o->measure_perf = 1;
		return 1;
	}
	case OPT_TRACE: o->trace_path = arg; o->measure_perf = 1; return 1;
	case OPT_HW: {
		struct hw_spec h;
		char err[600];
		if (hw_load(arg, &h, err, sizeof err) < 0)
			return error("--hw: %s", err);
		o->hw = arg;
		return 1;
	}
	}
	return 0;
}

int job_opt(struct job_opts *o, int c, const char *arg)
{
	long long v;
	int r = instance_opt(o, c, arg);
	if (r)
		return r;
	if ((r = timing_opt(o, c, arg)))
		return r;
	switch (c) {
	case 'j': o->json_path = arg; return 1;
	case OPT_DEADLINE: return deadline_opt(o, arg);
	case OPT_LOG_DIR: o->log_dir = arg; return 1;
	case OPT_KEEP_LOGS: o->keep_logs = 1; return 1;
	case OPT_ARCH: o->arch = arg; return 1;
	case OPT_NO_SANDBOX: o->no_sandbox = 1; return 1;
	case OPT_DEVICE_TIMEOUT:
		if (parse_int_in(arg, 1, 3600000, &v) < 0)
			return error("--device-timeout takes milliseconds, not '%s'", arg);
		o->device_timeout_ms = (int)v;
		return 1;
	case OPT_LAUNCHER:
		if (strcmp(arg, "slurm") && strcmp(arg, "mpi") && strcmp(arg, "torch") &&
		    strcmp(arg, "env"))
			return error("--launcher takes slurm, mpi, torch or env, not '%s'", arg);
		o->launcher = arg;
		return 1;
	case 'q': o->quiet = 1; return 1;
	}
	return 0;
}

/* a number as strtod reads it back: the shortest of %.15g and %.17g that
 * does (0.1 stays "0.1") */
static const char *num_arg(double v, char *buf, size_t n)
{
	snprintf(buf, n, "%.15g", v);
	if (strtod(buf, NULL) != v)
		snprintf(buf, n, "%.17g", v);
	return buf;
}

void job_opts_argv(const struct job_opts *o, struct strvec *a)
{
	struct job_opts d;
	job_opts_init(&d);
	char num[40];
	if (strcmp(o->backend, d.backend)) {
		strvec_push(a, "--backend");
		strvec_push(a, o->backend);
	}
	if (o->world) {
		strvec_push(a, "--gpus");
		strvec_pushf(a, "%d", o->world);
	}
	if (o->m != d.m) {
		strvec_push(a, "--m");
		strvec_pushf(a, "%lld", o->m);
	}
	if (o->n != d.n) {
		strvec_push(a, "--n");
		strvec_pushf(a, "%lld", o->n);
	}
	if (o->dtype != d.dtype) {
		strvec_push(a, "--dtype");
		strvec_push(a, dtype_name(o->dtype));
	}
	/* eval's default (5) is not job_opts_init's (1): always said */
	strvec_push(a, "--trials");
	strvec_pushf(a, "%d", o->trials);
	if (o->atol >= 0) {
		strvec_push(a, "--atol");
		strvec_push(a, num_arg(o->atol, num, sizeof num));
	}
	if (o->rtol >= 0) {
		strvec_push(a, "--rtol");
		strvec_push(a, num_arg(o->rtol, num, sizeof num));
	}
	if (o->seed_file) {   /* never the seed itself on a command line */
		strvec_push(a, "--seed-file");
		strvec_push(a, o->seed_file);
	} else if (o->seed >= 0 && !o->seed_drawn) {
		strvec_push(a, "--seed");
		strvec_pushf(a, "%lld", o->seed);
	}
	if (o->ref_cache) {
		strvec_push(a, "--ref-cache");
		strvec_push(a, o->ref_cache);
	}
	if (o->measure_perf)
		strvec_push(a, "--measure-perf");
	if (o->warmup != d.warmup) {
		strvec_push(a, "--warmup");
		strvec_pushf(a, "%d", o->warmup);
	}
	if (o->iters != d.iters) {
		strvec_push(a, "--iters");
		strvec_pushf(a, "%d", o->iters);
	}
	const char *timing = o->timing_given ? perf_mode_name(o->timing) : NULL;
	const char *const paired[][2] = { { "--timing", timing }, { "--trace", o->trace_path },
					  { "--hw", o->hw } };
	for (size_t i = 0; i < ARRAY_SIZE(paired); i++)
		if (paired[i][1]) {
			strvec_push(a, paired[i][0]);
			strvec_push(a, paired[i][1]);
		}
	for (int k = 0; k < PH_KIND_COUNT; k++)
		if (o->deadline_s[k] != d.deadline_s[k]) {
			strvec_push(a, "--deadline");
			strvec_pushf(a, "%s=%s", phase_kind_name((enum phase_kind)k),
				     num_arg(o->deadline_s[k], num, sizeof num));
		}
	if (o->compile_s != d.compile_s) {
		strvec_push(a, "--deadline");
		strvec_pushf(a, "compile=%s", num_arg(o->compile_s, num, sizeof num));
	}
	if (o->rendezvous_s != d.rendezvous_s) {
		strvec_push(a, "--deadline");
		strvec_pushf(a, "rendezvous=%s", num_arg(o->rendezvous_s, num, sizeof num));
	}
	if (o->device_timeout_ms != d.device_timeout_ms) {
		strvec_push(a, "--device-timeout");
		strvec_pushf(a, "%d", o->device_timeout_ms);
	}
	const char *const more[][2] = { { "--log-dir", o->log_dir }, { "--arch", o->arch },
					{ "--launcher", o->launcher } };
	for (size_t i = 0; i < ARRAY_SIZE(more); i++)
		if (more[i][1]) {
			strvec_push(a, more[i][0]);
			strvec_push(a, more[i][1]);
		}
	if (o->keep_logs)
		strvec_push(a, "--keep-logs");
	if (o->no_sandbox)
		strvec_push(a, "--no-sandbox");
	if (o->quiet)
		strvec_push(a, "-q");
	if (o->json_path) {
		strvec_push(a, "--json");
		strvec_push(a, o->json_path);
	}
}

void job_progress(const struct job_opts *o, const char *fmt, ...)
{
	if (o->quiet)
		return;
	va_list ap;
	va_start(ap, fmt);
	vreport("pkb: ", fmt, ap);
	va_end(ap);
}

/* GPUs the driver exposes here (the parent never touches CUDA): the
 * driver's /proc entries, narrowed by CUDA_VISIBLE_DEVICES. */
int gpu_count(void)
{
	int n = 0;
	DIR *d = opendir("/proc/driver/nvidia/gpus");
	if (d) {
		struct dirent *e;
		while ((e = readdir(d)))
			if (e->d_name[0] != '.')
				n++;
		closedir(d);
	}
	const char *vis = getenv("CUDA_VISIBLE_DEVICES");
	if (vis && n > 0) {
		int v = *vis ? 1 : 0;
		for (const char *c = vis; *c; c++)
			v += *c == ',';
		if (v < n)
			n = v;
	}
	return n;
}

json_t *gpu_probe(int *rc)
{
	char *log = xstrfmt("/tmp/pkb-probe.%d.json", (int)getpid());
	char *argv[] = { (char *)pkb_self_exe(), "__probe", NULL };
	*rc = run_logged(argv, log, 60);
	char *out = *rc == 0 ? read_file(log, NULL) : NULL;
	unlink(log);
	free(log);
	json_t *pr = out ? json_loads(out, 0, NULL) : NULL;
	free(out);
	return pr;
}

/* Byte counts are int64 (roofline, show, the buffers): bound the shape so
 * that they fit (issue 30: roofline --m 2^40 --n 2^40 printed 0 B of HBM).
 * 2^40 elements is 4 TiB of fp32 per tensor, 20x an H200's memory; times
 * W <= 63, 4 bytes and a few tensors it stays below 2^50. */
int job_check_shape(const struct job_opts *o)
{
	if (o->m > (1ll << 31) || o->n > (1ll << 31) || o->m * o->n > (1ll << 40))
		return error("M=%lld N=%lld is too large: M and N at most 2^31 and M*N at "
			     "most 2^40 elements", o->m, o->n);
	return 0;
}

/* A fresh input seed for each evaluation: a fixed default let a candidate
 * memoise outputs across runs (keyed by nothing at all) or rebuild its
 * peers' inputs instead of communicating them. 62 bits from the OS; the
 * JSON records it and --seed reproduces the run. */
int job_seed_draw(long long *seed)
{
	uint64_t v;
	if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v)
		return -1;
	*seed = (long long)(v >> 2);
	return 0;
}

int job_seed_read(const char *path, long long *seed)
{
	char *txt = read_file(path, NULL);
	char *nl = txt ? strchr(txt, '\n') : NULL;
	if (nl)
		*nl = 0;
	int r = txt ? parse_int_in(txt, 0, 1ll << 62, seed) : -1;
	free(txt);
	return r;
}

static int job_draw_seed(struct job_opts *o)
{
	if (job_seed_draw(&o->seed) < 0)
		return error("cannot draw an input seed from the OS (getrandom): pass --seed S");
	o->seed_drawn = 1;
	return 0;
}

int job_resolve(struct job_opts *o, struct pkb_io *io)
{
	/* across nodes W counts every node's ranks: by default one a task */
	if (o->launcher) {
		char err[400];
		if (rdv_env_read(o->launcher, &o->nodes, err, sizeof err) < 0) {
			error("%s", err);
			hint("run pkb under srun, mpirun or torchrun --no-python, with MASTER_ADDR and "
			     "MASTER_PORT set (docs/MULTINODE.md)");
			return -1;
		}
		if (!o->world)
			o->world = o->nodes.nodes;
		if (o->world % o->nodes.nodes)
			return error("--gpus %d does not split over %d nodes (the launcher's tasks): "
				     "every node runs as many ranks", o->world, o->nodes.nodes);
	}
	if (!o->world) {
		int g = gpu_count();
		o->world = g >= 2 ? g : 2;
	}
	if (job_check_shape(o) < 0)
		return -1;
	if (o->seed < 0 && job_draw_seed(o) < 0)
		return -1;
	struct pkb_dims d = {
		.world = o->world, .rank = 0, .m = o->m, .n = o->n,
		.dtype = o->dtype, .trial = o->trial0,
	};
	if (problem_describe(o->p, &d, io) < 0)
		return error("problem %03d_%s at W=%d M=%lld N=%lld %s: %s", o->p->id, o->p->name,
			     o->world, o->m, o->n, dtype_name(o->dtype), io->err);
	return 0;
}

enum pkb_outcome job_build(const struct job_opts *o, struct job_solution *s,
			   const char *backend, char *msg, size_t n)
{
	struct build_opts bo;
	build_opts_init(&bo);
	if (o->arch)
		bo.arch = o->arch;
	bo.reference = s->nccl;
	bo.timeout_s = o->compile_s;
	s->build = xcalloc(1, sizeof *s->build);
	char *tk = NULL;
	/* ThunderKittens is the user's, found through the environment: where
	 * it is not, this machine cannot build the candidate (env_error) */
	if (loader_backend_uses_tk(backend) && !(tk = build_tk_root(msg, n)))
		return OUT_ENV_ERROR;
	/* the same for the triton backend's Python */
	char *py = NULL;
	if (loader_backend_uses_python(backend) && !(py = build_python_path(msg, n)))
		return OUT_ENV_ERROR;
	bo.tk_root = tk;
	bo.python = py;
	job_progress(o, "compiling the %s '%s'", s->role, s->src);
	int rc = build_solution(s->src, &bo, s->build);
	free(tk);
	free(py);
	if (rc < 0 || !s->build->ok) {
		snprintf(msg, n, "%s", s->build->log ? s->build->log : "compilation failed");
		return OUT_COMPILE_ERROR;
	}
	if (s->build->cached)
		job_progress(o, "%s: compile cache hit (%.8s)", s->role, s->build->key);
	if (loader_backend_uses_python(backend))   /* no object to scan: its sandbox is the rule */
		return OUT_PASS;
	char why[512];
	int r = loader_scan(s->build->so_path, backend, why, sizeof why);
	if (r != 0) {
		snprintf(msg, n, "the %s %s", s->role, why);
		return OUT_LOAD_REFUSED;
	}
	return OUT_PASS;
}

/* A record the ranks' own code sends, or -1 with `why`: a rank runs the
 * candidate in its process, and the parent once filed whatever came last
 * (a second timing record of the reference, written from the candidate's
 * pkb_fini, made any speedup). */
static int check_record(void *arg, int rank, json_t *rec, char *why, size_t n)
{
	struct job_records *R = arg;
	const struct wire_job *j = R->job;
	const char *kind = json_string_value(json_object_get(rec, "kind"));
	json_int_t from = json_integer_value(json_object_get(rec, "rank"));
	char which[32] = "";
	if (from != rank) {
		snprintf(why, n, "rank %d sent a record in rank %lld's name: a record the harness's "
			 "rank does not send", rank, (long long)from);
		return -1;
	}
	if (!strcmp(kind, "trial")) {
		json_int_t t = json_integer_value(json_object_get(rec, "trial"));
		if (j->mode != WIRE_EVAL || t < j->trial0 || t >= (json_int_t)j->trial0 + j->trials) {
			snprintf(why, n, "rank %d sent a record of trial %lld, which the job does not "
				 "run", rank, (long long)t);
			return -1;
		}
		snprintf(which, sizeof which, "%lld", (long long)t);
	} else if (!strcmp(kind, "perf") || !strcmp(kind, "proc")) {
		/* one of each per solution process: its timing, its steps */
		const char *sol = json_string_value(json_object_get(rec, "solution"));
		int perf = !strcmp(kind, "perf"), known = 0;
		for (int i = 0; i < j->n_sol; i++)
			known |= sol && !strcmp(sol, j->sol[i].role);
		if ((perf && !j->has_perf) || !known) {
			snprintf(why, n, "rank %d sent a %s record the job does not ask for", rank,
				 perf ? "timing" : "process");
			return -1;
		}
		snprintf(which, sizeof which, "%s", sol);
	} else if (j->mode != WIRE_RUN) {
		snprintf(why, n, "rank %d sent a '%s' record in an evaluation", rank, kind);
		return -1;
	}
	char *key = xstrfmt("%d %s %s", rank, kind, which);
	int dup = json_object_get(R->seen, key) != NULL;
	if (!dup)
		json_object_set_new(R->seen, key, json_true());
	free(key);
	if (dup) {
		snprintf(why, n, "rank %d sent a second %s record%s%s: a record the harness's rank "
			 "does not send", rank, kind, which[0] ? " of " : "", which);
		return -1;
	}
	return 0;
}

static void collect(void *arg, int rank, json_t *rec)
{
	struct job_records *R = arg;
	(void)rank;
	const char *kind = json_string_value(json_object_get(rec, "kind"));
	json_t *dst = !kind ? NULL : !strcmp(kind, "trial") ? R->trial
		      : !strcmp(kind, "run") ? R->run : !strcmp(kind, "perf") ? R->perf
		      : !strcmp(kind, "proc") ? R->proc : NULL;
	if (dst)
		json_array_append(dst, rec);
}

/* The announcements of each phase kind a rank makes for this job (rank.c:
 * a load, an init and a pkb_fini per solution, a checked call of each
 * solution a trial in eval, one in run, four timing steps, the teardown):
 * launch.c refuses more, so no rank outlives the sum of its phases'
 * budgets. */
static void job_phase_limits(const struct wire_job *j, int *max)
{
	int n = j->n_sol;
	max[PH_START] = 1;
	max[PH_CUDA_INIT] = 1;
	max[PH_NCCL_INIT] = 1;
	max[PH_LOAD] = n;
	max[PH_INIT] = n;
	max[PH_TRIAL] = n * (j->mode != WIRE_EVAL ? 1 : j->trials > 0 ? j->trials : 1);
	max[PH_SAVE] = j->save_dir[0] ? 1 : -1;
	/* preparing; per solution warmup and timed calls */
	max[PH_TIMING] = j->has_perf ? 1 + 2 * n : -1;
	/* each solution's pkb_fini, the timing's re-check, teardown */
	max[PH_FINI] = n + 2;
}

/* 0..15 extra warmup calls, unknown to the solutions: a candidate that counts
 * calls cannot tell which ones are timed or re-checked */
static int warmup_jitter(void)
{
	unsigned char b = 0;
	FILE *f = fopen("/dev/urandom", "rb");
	if (f) {
		if (fread(&b, 1, 1, f) != 1)
			b = 0;
		fclose(f);
	}
	return b & 15;
}

int job_ref_cache_check(struct job_opts *o, const struct job_solution *sols, int n_sol)
{
	struct wire_job wj;
	wire_job_init(&wj);
	wj.n_sol = n_sol < WIRE_MAX_SOL ? n_sol : WIRE_MAX_SOL;
	for (int i = 0; i < wj.n_sol; i++) {
		snprintf(wj.sol[i].so, sizeof wj.sol[i].so, "%s", sols[i].build->so_path);
		wj.sol[i].nccl = sols[i].nccl;
	}
	/* as given (nothing made where it is refused), then as it resolves */
	for (int pass = 0; pass < 2; pass++) {
		if (pass) {
			char *real = NULL;
			if (mkdir_p(o->ref_cache) < 0 || !(real = realpath(o->ref_cache, NULL)))
				return error("--ref-cache %s: cannot make it: %s", o->ref_cache,
					     strerror(errno));
			o->ref_cache = real;   /* kept for the process's life */
		}
		if (!o->no_sandbox && sandbox_rank_can_read(&wj, o->ref_cache))
			return error("--ref-cache %s: a solution process could read it (a system "
				     "folder, a solution's or a library's); the outputs kept there "
				     "are the answers, so pick a folder outside them", o->ref_cache);
	}
	return 0;
}

/* The job every rank of this launch gets (wire.h), or -1 when a path does
 * not fit it */
static int job_wire(const struct job_opts *o, enum wire_mode mode,
		    const struct job_solution *sols, int n_sol, struct wire_job *wj)
{
	wire_job_init(wj);
	int bad = 0;
	wj->mode = mode;
	snprintf(wj->problem, sizeof wj->problem, "%d", o->p->id);
	wj->m = o->m;
	wj->n = o->n;
	wj->dtype = o->dtype;
	wj->seed = (long long)o->seed;
	wj->seed_drawn = o->seed_drawn;
	wj->trials = o->trials;
	wj->trial0 = o->trial0;
	wj->device_timeout_ms = o->device_timeout_ms;
	wj->sandbox = !o->no_sandbox;
	if (o->save_dir)
		bad |= snprintf(wj->save_dir, sizeof wj->save_dir, "%s", o->save_dir) >=
		       (int)sizeof wj->save_dir;
	if (o->ref_cache)
		bad |= snprintf(wj->ref_cache, sizeof wj->ref_cache, "%s", o->ref_cache) >=
		       (int)sizeof wj->ref_cache;
	wj->atol = o->atol;
	wj->rtol = o->rtol;
	wj->n_sol = n_sol < WIRE_MAX_SOL ? n_sol : WIRE_MAX_SOL;
	for (int i = 0; i < wj->n_sol; i++) {
		snprintf(wj->sol[i].role, sizeof wj->sol[i].role, "%s", sols[i].role);
		bad |= snprintf(wj->sol[i].so, sizeof wj->sol[i].so, "%s", sols[i].build->so_path) >=
		       (int)sizeof wj->sol[i].so;
		wj->sol[i].nccl = sols[i].nccl;
	}
	if (o->measure_perf) {
		wj->has_perf = 1;
		wj->perf.warmup = o->warmup + warmup_jitter();
		wj->perf.iters = o->iters;
		wj->perf.block = 10;
		wj->perf.mode = o->timing;
	}
	return bad || n_sol > WIRE_MAX_SOL ? -1 : 0;
}

int job_launch(struct job_opts *o, enum wire_mode mode, struct job_solution *sols, int n_sol,
	       struct launch_result *res, struct job_records *rec, char **log_dir_out)
{
	const char *fake = getenv("PKB_RANK_CMD");   /* tests: a fake rank program */
	/* the ranks of this node (of them all, across nodes) */
	int here = o->launcher ? o->world / o->nodes.nodes : o->world;
	if (!fake) {
		int g = gpu_count();
		if (g < here) {
			memset(res, 0, sizeof *res);
			res->outcome = OUT_ENV_ERROR;
			res->culprit = -1;
			snprintf(res->message, sizeof res->message,
				 "needs %d NVIDIA GPUs on this machine, found %d", here, g);
			return 0;
		}
	}
	char *dir = o->log_dir ? xstrdup(o->log_dir) : xstrdup("/tmp/pkb-logs.XXXXXX");
	if (o->log_dir ? mkdir_p(dir) < 0 : !mkdtemp(dir)) {
		error("cannot create log folder '%s'", dir);
		free(dir);
		return -1;
	}
	/* the job every rank gets (wire.h); launch.c addresses a copy to each */
	struct wire_job wj;
	if (job_wire(o, mode, sols, n_sol, &wj) < 0) {
		error("the job does not fit the wire (a path over 4095 bytes?)");
		free(dir);
		return -1;
	}
	json_t *job = wire_job_pack(&wj);

	struct launch_opts lo;
	launch_opts_init(&lo, o->world);
	memcpy(lo.deadline_s, o->deadline_s, sizeof lo.deadline_s);
	lo.log_dir = dir;
	/* the ranks' TMPDIR, removed after the launch whatever happened in it */
	const char *tmpdir = getenv("TMPDIR");
	char *tmp = xstrfmt("%s/pkb-tmp.XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
	if (!mkdtemp(tmp)) {
		error("cannot create a temporary folder '%s': %s", tmp, strerror(errno));
		free(tmp);
		json_decref(job);
		free(dir);
		return -1;
	}
	lo.tmp_dir = tmp;
	lo.job = job;
	lo.on_result = collect;
	lo.check_result = check_record;
	lo.arg = rec;
	job_phase_limits(&wj, lo.phase_max);
	rec->job = &wj;
	rec->seen = json_object();
	if (o->launcher)
		lo.nodes = &o->nodes;
	lo.rendezvous_s = o->rendezvous_s;
	const char *fake_argv[] = { fake, NULL };
	if (fake)
		lo.argv = fake_argv;
	rec->trial = json_array();
	rec->run = json_array();
	rec->perf = json_array();
	rec->proc = json_array();
	/* a timed launch needs MPS (docs/MPS.md): the user's daemon, or one of
	 * its own for this launch, stopped after it */
	struct mps mps;
	memset(&mps, 0, sizeof mps);
	if (wj.has_perf && !fake) {
		char why[400];
		if (mps_start(&mps, why, sizeof why) != 0) {
			memset(res, 0, sizeof *res);
			res->outcome = OUT_ENV_ERROR;
			res->culprit = -1;
			snprintf(res->message, sizeof res->message, "timing needs an NVIDIA MPS "
				 "daemon (the judge times another process's calls; docs/MPS.md): %s",
				 why);
			json_decref(job);
			json_decref(rec->seen);
			rec->seen = NULL;
			rec->job = NULL;
			rm_rf(tmp);
			free(tmp);
			*log_dir_out = dir;
			return 0;
		}
	}
	job_progress(o, "launching %d ranks (logs in %s)", o->world, dir);
	int r = launch_run(&lo, res);
	mps_stop(&mps);
	rm_rf(tmp);
	free(tmp);
	json_decref(rec->seen);
	rec->seen = NULL;
	rec->job = NULL;
	/* across nodes a drawn seed is node 0's (rdv_join adopts it) */
	json_t *seed = json_object_get(job, "seed");
	if (json_is_integer(seed))
		o->seed = (long long)json_integer_value(seed);
	json_decref(job);
	*log_dir_out = dir;
	return r;
}

int job_write_trace(const struct job_opts *o, json_t *perf)
{
	char title[160];
	snprintf(title, sizeof title, "pkb %03d_%s W=%d M=%lld N=%lld %s", o->p->id, o->p->name,
		 o->world, o->m, o->n, dtype_name(o->dtype));
	json_t *t = report_trace(perf, o->world, title);
	int r = json_write_file(o->trace_path, t);
	json_decref(t);
	return r;
}

json_t *job_roofline(const struct job_opts *o, const char *device, double t_ms, double ref_ms,
		     int *below, char *line, size_t n)
{
	struct hw_spec h;
	struct roofline r;
	char err[600];
	struct pkb_dims d = { .world = o->world, .m = o->m, .n = o->n,
			      .dtype = o->dtype };
	*below = 0;
	if (hw_for_device(o->hw, device, o->world, &h, err, sizeof err) < 0 ||
	    roofline_compute(o->p, &d, &h, &r, err, sizeof err) < 0) {
		snprintf(line, n, "roofline: none (%s)", err);
		return json_pack("{s:s}", "error", err);
	}
	double t = t_ms * 1e-3, tref = ref_ms * 1e-3, s = sol_score(t, tref, r.t_bound);
	*below = t < r.t_bound;
	json_t *j = json_pack("{s:s,s:f,s:f,s:s,s:f}", "hw", h.name, "bound_us", r.t_bound * 1e6,
			      "serial_us", r.t_serial * 1e6, "bottleneck", r.bottleneck, "fraction",
			      t > 0 ? r.t_bound / t : 0.0);
	json_object_set_new(j, "sol_score", isnan(s) ? json_null() : json_real(s));
	size_t off = (size_t)snprintf(line, n, "roofline %.2f us on %s (%s-bound): at %.0f%% of it",
				      r.t_bound * 1e6, h.name, r.bottleneck,
				      t > 0 ? 100 * r.t_bound / t : 0.0);
	if (!isnan(s) && off < n)
		off += (size_t)snprintf(line + off, n - off, ", speed-of-light score %.3f", s);
	/* a time within a few floors of the timed loop's floor is mostly that
	 * floor, for every solution alike (docs/TIMING.md) */
	double floor_s = hw_local_floor(device, o->world);
	if (floor_s > 0) {
		json_object_set_new(j, "timing_floor_us", json_real(floor_s * 1e6));
		if (t > 0 && t < 3 * floor_s && off < n)
			snprintf(line + off, n - off, "; the timed loop's floor here is %.2f us "
				 "(an empty call, pkb calibrate)", floor_s * 1e6);
	}
	return j;
}

void job_stamp(json_t *rec)
{
	char date[32], host[256] = "";
	time_t now = time(NULL);
	struct tm tm;
	strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
	gethostname(host, sizeof host - 1);
	json_object_set_new(rec, "pkb_version", json_string(PKB_VERSION));
	json_object_set_new(rec, "date", json_string(date));
	json_object_set_new(rec, "host", json_string(host));
	/* what the solution processes' sandbox had here (sandbox.h: the
	 * abstract-socket and signal scopes need ABI 6) */
	char why[300];
	json_object_set_new(rec, "landlock_abi", json_integer(sandbox_landlock_abi(why, sizeof why)));
}

void job_stamp_gpus(json_t *rec, json_t *records)
{
	char gpus[512] = "";
	const char *seen[64];
	int n_seen = 0;
	size_t i;
	json_t *r;
	json_array_foreach(records, i, r) {
		const char *g = json_string_value(json_object_get(r, "gpu"));
		int k = 0;
		while (g && *g && k < n_seen && strcmp(seen[k], g))
			k++;
		if (!g || !*g || k < n_seen || n_seen == 64)
			continue;
		seen[n_seen++] = g;
		size_t at = strlen(gpus);
		snprintf(gpus + at, sizeof gpus - at, "%s%s", at ? ", " : "", g);
	}
	if (n_seen)
		json_object_set_new(rec, "gpu", json_string(gpus));
}

enum pkb_outcome job_perf(const struct job_opts *o, json_t *perf, const char *role, double ref_ms,
			  json_t *rec, struct perf_summary *ps, int *trace_failed, char *line,
			  size_t line_n, char *msg, size_t n)
{
	report_perf(perf, role, o->world, o->iters, ps);
	if (o->trace_path && job_write_trace(o, perf) < 0)
		*trace_failed = 1;
	int below = 0;
	json_object_set_new(rec, "roofline", job_roofline(o, ps->device, ps->st.median, ref_ms,
							   &below, line, line_n));
	return report_perf_verdict(ps, role, below, line, msg, n);
}

int job_finish(const struct job_opts *o, json_t *rec, enum pkb_outcome out, const char *msg,
	       const char *logs, int culprit, int print_pass, int trace_failed)
{
	json_object_set_new(rec, "outcome", json_string(outcome_name(out)));
	json_object_set_new(rec, "seed", json_integer((json_int_t)o->seed));
	json_object_set_new(rec, "exit_code", json_integer(outcome_exit_code(out)));
	if (msg && *msg)
		json_object_set_new(rec, "message", json_string(msg));
	json_object_set_new(rec, "log_dir", logs ? json_string(logs) : json_null());
	if (o->json_path)
		json_write_file(o->json_path, rec);
	json_decref(rec);
	if (out != OUT_PASS || print_pass)
		printf("%s%s%s\n", outcome_name(out), msg && *msg ? ": " : "", msg ? msg : "");
	/* logs is NULL when nothing was launched (no GPUs, a compile error):
	 * there is then no folder to point at */
	if (out == OUT_PASS && logs && !o->keep_logs && !o->log_dir)
		rm_rf(logs);
	else if (out != OUT_PASS && logs && culprit >= 0)
		hint("rank logs kept in %s (rank %d failed first)", logs, culprit);
	else if (out != OUT_PASS && logs)
		hint("rank logs kept in %s", logs);
	return out == OUT_PASS && trace_failed ? PKB_EXIT_INPUT : outcome_exit_code(out);
}
