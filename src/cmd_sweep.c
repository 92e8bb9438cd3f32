/*
 * cmd_sweep.c -- `pkb sweep DIR`: every candidate of a run directory through
 * `pkb eval` as a child process, in lanes of W GPUs side by side (lanes.c),
 * one JSON line per evaluation in DIR/results.jsonl; resumable after any
 * kill. `--slurm` submits the evaluations still missing as one Slurm job
 * array whose task I runs `pkb sweep DIR --shard I/N` into a file of its
 * own (results.d/shard-I-of-N.jsonl); `--jobs FILE` runs the commands of a
 * file in the same lanes (tools/test-gpu).
 *
 * Layouts read: DIR/candidates/NNN/FILE.cu (pkb generate; a DIR/replies/NNN/
 * sample_K.json without its .cu is recorded as no_code), else DIR/NNN/FILE.cu
 * and DIR/NNN_FILE.cu; .py for each .cu (the triton backend's candidates).
 *
 * Every candidate is evaluated twice (issue 44, item 10): at the announced
 * shape, the prompt's, as asked (timed with --measure-perf), and, for
 * correctness only, at a hidden shape the prompt never showed, drawn per
 * problem from the run (or --hidden-shape MxN); one record holds both.
 *
 * This file is the command: its options, the instance (the command line's,
 * else DIR/run.json's), the plan and --status. The tasks are
 * sweep_tasks.c's, running them here sweep_run.c's, the records
 * sweep_records.c's and the Slurm job array sweep_slurm.c's.
 */
#define _GNU_SOURCE
#include "cmds.h"
#include "build.h"     /* defines: build_result_free */
#include "dtype.h"     /* defines: dtype_name */
#include "exitcode.h"
#include "job.h"       /* defines: gpu_count, job_stamp */
#include "loader.h"    /* defines: loader_backend_valid */
#include "problem.h"
#include "result.h"    /* defines: result_read */
#include "roofline.h"  /* defines: hw_load */
#include "sandbox.h"   /* defines: sandbox_rank_can_read */
#include "results.h"   /* defines: RESULTS_SHARD_DIR */
#include "slurm.h"
#include "sweep_records.h" /* defines: sweep_load_done, sweep_host_versions */
#include "sweep_run.h"   /* defines: sweep_run_local, sweep_run_dry, sweep_run_jobs */
#include "sweep_slurm.h" /* defines: struct slurm_opts, sweep_submit */
#include "sweep_tasks.h" /* defines: struct sweep, struct task, sweep_scan */
#include "wire.h"      /* defines: wire_job_init */
#include "ncclso.h"    /* defines: nccl_version */
#include "opts.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char head[] =
"usage: pkb sweep DIR [options]\n"
"       pkb sweep DIR --slurm [--nodes N] [--gpus-per-node G] [--partition P]\n"
"                 [--time T] [--account A] [options]\n"
"       pkb sweep DIR --slurm --status\n"
"       pkb sweep --jobs FILE [--ngpus N] [-q]\n"
"\n"
"Evaluate every candidate under DIR with `pkb eval`, in lanes of W GPUs side\n"
"by side, and append one JSON line per evaluation to DIR/results.jsonl.\n"
"Run it again to go on: keys already recorded are not run twice. W, dtype,\n"
"shape and backend are DIR/run.json's unless given here.\n"
"\n";
static const char tail[] =
"\n"
"exit status: 0 done (whatever the candidates' outcomes), 1 unreadable or\n"
"unwritable results, a bad run.json, or sbatch refused, 2 usage, 9 no GPU\n"
"here, an env_error (not recorded: runs again), or no process could be\n"
"forked, 128+S stopped by signal S (records kept)\n";

/* ---- option parsing, shared by a sweep and by --status (which reads
 * the options of the last submission back) ---- */
enum { O_DRY_RUN = OPT_JOB_END, O_NGPUS, O_TIMEOUT, O_SHARD, O_JOBS, O_SLURM, O_STATUS, O_NODES,
       O_GPN, O_PARTITION, O_TIME, O_ACCOUNT, O_CPUS, O_HIDDEN };

static const struct opt sweep_opts[] = {
	{ 'p', "problems", "SPEC", "all (default), 1-8,13, or a category name" },
	{ 'g', "gpus", "W", "world size of each evaluation (default: run.json's\n"
			     "world, else 2)" },
	{ O_NGPUS, "ngpus", "N", "GPUs to use (default: those visible, else 8)" },
	{ 'j', "lanes", "J", "evaluations at once (default N / W: one per set of W\n"
			     "GPUs; more share the sets, untimed ones only)" },
	{ 't', "trials", "K", "trials per evaluation (default 5)" },
	{ 'd', "dtype", "T", "passed to eval (default: run.json's, else bf16)" },
	{ OPT_M, "m", "M", "passed to eval (default: run.json's, else 1024)" },
	{ OPT_N, "n", "N", "passed to eval (default: run.json's, else 1024)" },
	{ 'b', "backend", "B", "passed to eval: cuda, nccl-device, parallelkittens,\n"
			       "triton (default: run.json's, else cuda)" },
	{ O_HIDDEN, "hidden-shape", "MxN", "also evaluate every candidate, untimed, at this\n"
					  "shape the prompt never showed; a sample passes\n"
					  "only at both (default: drawn per problem from\n"
					  "run.json; off: the announced shape alone)" },
	{ O_DRY_RUN, "dry-run", NULL, "no GPU: compile and scan every candidate, record\n"
				      "compile_error and load_refused, leave the rest to\n"
				      "run on a GPU node" },
	{ OPT_MEASURE_PERF, "measure-perf", NULL, "time the candidates (each alone on its GPUs)" },
	{ OPT_TIMING, "timing", "MODE", "passed to eval: warm (default), cold or graph; with\n"
					"--iters and --warmup part of the key when not\n"
					"eval's default (each implies --measure-perf)" },
	{ OPT_ITERS, "iters", "N", "passed to eval (default 100)" },
	{ OPT_WARMUP, "warmup", "N", "passed to eval (default 500)" },
	{ OPT_HW, "hw", "NAME", "passed to eval: the roofline's machine" },
	{ O_TIMEOUT, "timeout", "S", "kill an evaluation after S seconds (default 1800;\n"
				     "eval's own phase deadlines should end it first)" },
	{ OPT_DEADLINE, "deadline", "K=S", "passed to eval (repeatable)" },
	{ OPT_DEVICE_TIMEOUT, "device-timeout", "MS", "passed to eval" },
	{ OPT_ARCH, "arch", "SM", "passed to eval (and the --dry-run's compiles)" },
	{ OPT_NO_SANDBOX, "no-sandbox", NULL, "passed to eval (trusted candidates only)" },
	{ OPT_ATOL, "atol", "A", "passed to eval (recorded: pkb score keeps such\n"
				 "records apart from those at the problem's tolerances)" },
	{ OPT_RTOL, "rtol", "R", "passed to eval (recorded, as --atol)" },
	{ 'o', "out", "FILE", "results file (default DIR/results.jsonl)" },
	{ O_SHARD, "shard", "I/N", "only the evaluations of shard I of N (0 <= I < N),\n"
				   "into DIR/" RESULTS_SHARD_DIR "/shard-I-of-N.jsonl\n"
				   "(what a --slurm task runs)" },
	{ 'q', "quiet", NULL, "no progress on stderr" },
	OPTS_END,
};
static const struct opt slurm_table[] = {
	{ O_SLURM, "slurm", NULL, "submit it (again: only what is still missing)" },
	{ O_STATUS, "status", NULL, "the array's tasks as Slurm reports them, and the\n"
				    "counts" },
	{ O_NODES, "nodes", "N", "array tasks, one shard of the evaluations each\n"
				 "(default 1)" },
	{ O_GPN, "gpus-per-node", "G", "GPUs of each task (--gres=gpu:G; default 8)" },
	{ O_PARTITION, "partition", "P", "passed to sbatch" },
	{ O_TIME, "time", "T", "passed to sbatch" },
	{ O_ACCOUNT, "account", "A", "passed to sbatch" },
	{ O_CPUS, "cpus-per-task", "C", "passed to sbatch" },
	OPTS_END,
};
static const struct opt jobs_table[] = {
	{ O_JOBS, "jobs", "FILE", "run the commands of FILE in lanes instead (no DIR); a\n"
				  "JSON line each: {\"world\": W, \"share\": S, \"argv\": [...]}\n"
				  "(share: launches a GPU may carry at once, default 1)" },
	OPTS_END,
};
static const struct opt *const tables[] = { sweep_opts, slurm_table, jobs_table, NULL };

static void usage(FILE *f)
{
	const struct opt *const t1[] = { sweep_opts, NULL }, *const t2[] = { slurm_table, NULL },
			 *const t3[] = { jobs_table, NULL };
	opts_usage(f, head, t1, "\nSlurm (docs/SCALE.md): the evaluations still missing as one "
				"job array\n");
	opts_help(f, t2);
	fputc('\n', f);
	opts_usage(f, NULL, t3, tail);
}

/* an int option (opt_int) */
static int int_arg(const char *name, const char *v, int lo, int hi, int *out)
{
	long long x;
	if (opt_int(name, v, lo, hi, &x) < 0)
		return -1;
	*out = (int)x;
	return 0;
}

/* the options of the evaluation itself: eval's, checked by job_opt and
 * passed on to eval and to --slurm's tasks (-p, -j and --timeout, the
 * sweep's own, go to the tasks too) */
static const int eval_ids[] = { 'g', 't', 'd', 'b', OPT_M, OPT_N, OPT_MEASURE_PERF, OPT_TIMING,
				OPT_ITERS, OPT_WARMUP, OPT_HW, OPT_DEADLINE, OPT_DEVICE_TIMEOUT,
				OPT_ARCH, OPT_NO_SANDBOX, OPT_ATOL, OPT_RTOL };

static int is_eval_opt(int c)
{
	for (size_t i = 0; i < ARRAY_SIZE(eval_ids); i++)
		if (eval_ids[i] == c)
			return 1;
	return 0;
}

/* 0, 1: --help printed, -1: a usage error printed */
static int parse_opts(struct sweep *s, struct slurm_opts *so, const char **jobs, int argc,
		      char **argv)
{
	int c;
	struct opts_parser P;
	opts_init(&P, tables);
	while ((c = opts_next(&P, argc, argv)) != -1) {
		const struct opt *o = opts_find(tables, c);
		const char *name = o ? o->name : NULL;
		if (c == 'p' || c == 'j' || c == O_TIMEOUT || c == O_HIDDEN || is_eval_opt(c)) {
			json_array_append_new(s->args, json_sprintf("--%s", o->name));
			if (o->arg)
				json_array_append_new(s->args, json_string(optarg));
		}
		if (is_eval_opt(c) && job_opt(&s->eval, c, optarg) < 0)
			return -1;
		switch (c) {
		case 'p': s->spec = optarg; break;
		case 'g':
			s->W = s->eval.world;
			s->from[0] = "--gpus";
			break;
		case O_NGPUS: if (int_arg(name, optarg, 1, 4096, &s->ngpus) < 0) return -1; break;
		case 'j': if (int_arg("lanes", optarg, 1, 4096, &s->lanes) < 0) return -1; break;
		case 'd':
			s->dtype = optarg;
			s->from[1] = "--dtype";
			break;
		case 'b':
			s->backend = optarg;
			s->from[3] = "--backend";
			break;
		case O_DRY_RUN: s->dry_run = 1; break;
		case OPT_M:
		case OPT_N:
			if (c == OPT_M)
				s->m_arg = optarg;
			else
				s->n_arg = optarg;
			s->from[2] = "--m/--n";
			break;
		case O_TIMEOUT: s->timeout_s = atof(optarg); break;
		case O_HIDDEN: {
			char *end;
			s->hidden_off = !strcmp(optarg, "off");
			s->hidden_m = s->hidden_n = 0;
			if (s->hidden_off)
				break;
			errno = 0;
			s->hidden_m = strtoll(optarg, &end, 10);
			if (*end == 'x')
				s->hidden_n = strtoll(end + 1, &end, 10);
			if (*end || errno || !isdigit((unsigned char)*optarg) || s->hidden_m < 1 ||
			    s->hidden_n < 1 || s->hidden_m > (1ll << 40) || s->hidden_n > (1ll << 40))
				return error("--hidden-shape takes MxN (768x2048) or off, not '%s'", optarg);
			break;
		}
		case OPT_ATOL: s->atol = optarg; break;
		case OPT_RTOL: s->rtol = optarg; break;
		case 'o': s->out = optarg; break;
		case O_SHARD: {
			char *end;
			s->shard_i = (int)strtol(optarg, &end, 10);
			s->shard_n = *end == '/' ? (int)strtol(end + 1, &end, 10) : 0;
			if (*end || s->shard_n < 1 || s->shard_i < 0 || s->shard_i >= s->shard_n)
				return error("--shard takes I/N with 0 <= I < N, not '%s'", optarg);
			break;
		}
		case 'q': s->quiet = 1; break;
		case O_JOBS: *jobs = optarg; break;
		case O_SLURM: so->on = 1; break;
		case O_STATUS: so->status = 1; break;
		case O_NODES: if (int_arg(name, optarg, 1, 100000, &so->nodes) < 0) return -1; break;
		case O_GPN: if (int_arg(name, optarg, 1, 4096, &so->gpn) < 0) return -1; break;
		case O_PARTITION: so->partition = optarg; break;
		case O_TIME: so->time = optarg; break;
		case O_ACCOUNT: so->account = optarg; break;
		case O_CPUS: so->cpus = optarg; break;
		case 'h': usage(stdout); return 1;
		default:
			if (is_eval_opt(c))
				break;
			usage(stderr);
			return -1;
		}
	}
	s->trials = s->eval.trials;
	s->perf = s->eval.measure_perf;   /* also --timing, --iters, --warmup */
	if (!(s->timeout_s > 0))
		return error("--timeout takes a number of seconds > 0");
	static const char *const words[] = { "partition", "time", "account", "cpus-per-task" };
	const char *vals[] = { so->partition, so->time, so->account, so->cpus };
	for (int i = 0; i < 4; i++)
		if (vals[i] && slurm_check_word(words[i], vals[i]) < 0)
			return -1;
	return 0;
}

static void sweep_init(struct sweep *s, struct slurm_opts *so)
{
	memset(s, 0, sizeof(*s));
	*so = (struct slurm_opts){ .nodes = 1, .gpn = 8 };
	job_opts_init(&s->eval);
	s->eval.trials = s->trials = 5;
	s->timeout_s = 1800;
	s->spec = "all";
	s->args = json_array();
}

static void sweep_free(struct sweep *s)
{
	for (int i = 0; i < s->n; i++) {
		free(s->t[i].sample);
		free(s->t[i].path);
		free(s->t[i].key);
	}
	free(s->t);
	for (size_t i = 0; i < ARRAY_SIZE(s->hid); i++)
		free(s->hid[i].why);
	json_decref(s->args);
	json_decref(s->versions);
	json_decref(s->run_args);
}

/* the GPUs to use: --ngpus, else the driver's (narrowed by
 * CUDA_VISIBLE_DEVICES), else as many as CUDA_VISIBLE_DEVICES names (a
 * Slurm task's GRES on a machine without the driver's /proc files: the
 * tests), else 8 */
static int default_ngpus(void)
{
	int n = gpu_count();
	const char *vis = getenv("CUDA_VISIBLE_DEVICES");
	if (!n && vis && *vis) {
		n = 1;
		for (const char *c = vis; *c; c++)
			n += *c == ',';
	}
	return n ? n : 8;
}

/* ---- the instance: the command line's, else the run's ---- */

/* One value of run.json's args, checked as eval checks its option (job_opt,
 * which says why it is refused) and kept in s->eval: W, M and N are
 * integers, dtype and backend strings. 1, or 0 when refused. */
static int run_arg(struct sweep *s, int c, json_t *v)
{
	char num[32];
	const char *arg = json_string_value(v);
	if (c == 'g' || c == OPT_M || c == OPT_N) {
		if (!json_is_integer(v))
			return 0;
		snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
		arg = num;
	}
	return arg && job_opt(&s->eval, c, arg) == 1;
}

/* W, dtype, shape and backend of the evaluations: each as the command line
 * gives it, else as DIR/run.json's args give it (the instance the prompts
 * of `pkb generate` and `pkb agent` described: a sweep that ignored it
 * timed a W = 4 prompt's candidates at W = 2, and refused nccl-device ones
 * as cuda), else eval's default. A value equal to eval's default is not
 * passed on, so that the keys of sweeps that never named it stay. One
 * line on stderr (unless quiet) names each value and where it came from.
 * 0, or -1 (after error()) when run.json is there but not a run's. */
static int resolve_instance(struct sweep *s, int quiet)
{
	char *path = xstrfmt("%s/run.json", s->root);
	json_t *args = NULL;
	if (access(path, F_OK) == 0) {
		json_error_t je;
		json_t *rj = json_load_file(path, 0, &je);
		args = json_object_get(rj, "args");
		if (!json_is_object(args)) {
			json_decref(rj);
			error("%s: not a run's run.json (%s)", path, rj ? "no \"args\" object" : je.text);
			free(path);
			return -1;
		}
		s->run_args = json_incref(args);
		json_decref(rj);
	}
	free(path);
	const char *bad = NULL;
	json_t *v;
	if (!s->W) {
		v = json_object_get(args, "world");
		if (v && !run_arg(s, 'g', v))
			bad = "world";
		s->W = v && !bad ? s->eval.world : 2;
		s->from[0] = v && !bad ? "run.json" : "default";
	}
	const char *dtype = s->dtype;
	if (!dtype && (v = json_object_get(args, "dtype"))) {
		dtype = json_string_value(v);
		if (!run_arg(s, 'd', v))
			bad = "dtype";
		else if (strcmp(dtype, "bf16"))
			s->dtype = dtype;
		s->from[1] = "run.json";
	}
	int mn_run = 0;
	const char **mn[2] = { &s->m_arg, &s->n_arg };
	char *buf[2] = { s->m_buf, s->n_buf };
	for (int i = 0; i < 2; i++) {
		if (*mn[i] || !(v = json_object_get(args, i ? "n" : "m")))
			continue;
		if (!run_arg(s, i ? OPT_N : OPT_M, v)) {
			bad = i ? "n" : "m";
			continue;
		}
		snprintf(buf[i], sizeof s->m_buf, "%lld", (long long)json_integer_value(v));
		if (json_integer_value(v) != 1024)
			*mn[i] = buf[i];
		mn_run = 1;
	}
	const char *backend = s->backend;
	if (!backend && (v = json_object_get(args, "backend"))) {
		backend = json_string_value(v);
		if (!run_arg(s, 'b', v))
			bad = "backend";
		else if (strcmp(backend, "cuda"))
			s->backend = backend;
		s->from[3] = "run.json";
	}
	if (bad)
		return error("%s/run.json: args.%s is not a valid %s", s->root, bad, bad);
	s->eval.world = s->W;
	s->hidden_seed = sweep_hidden_seed(s);
	const char *shape_from = !s->from[2] ? (mn_run ? "run.json" : "default")
				 : mn_run ? "--m/--n and run.json" : s->from[2];
	if (!quiet)
		fprintf(stderr, "sweep: W = %d (%s), dtype %s (%s), shape %sx%s (%s), backend %s (%s)\n",
			s->W, s->from[0], dtype ? dtype : "bf16", s->from[1] ? s->from[1] : "default",
			s->m_arg ? s->m_arg : mn_run && s->m_buf[0] ? s->m_buf : "1024",
			s->n_arg ? s->n_arg : mn_run && s->n_buf[0] ? s->n_buf : "1024", shape_from,
			backend ? backend : "cuda", s->from[3] ? s->from[3] : "default");
	return 0;
}

/* The model of this machine's first GPU as the driver names it ("NVIDIA
 * H100 80GB HBM3", from /proc/driver/nvidia/gpus/ * /information: the parent
 * never touches CUDA), or the pretend ranks' (PKB_FAKE_DEVICE, as
 * tests/unit/fake_rank.c reports it); NULL when there is none. */
static char *machine_gpu(int fake)
{
	if (fake)
		return xstrdup(getenv("PKB_FAKE_DEVICE") ? getenv("PKB_FAKE_DEVICE") : "NVIDIA H200");
	DIR *d = opendir("/proc/driver/nvidia/gpus");
	char *model = NULL;
	struct dirent *e;
	while (d && !model && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char *path = xstrfmt("/proc/driver/nvidia/gpus/%s/information", e->d_name);
		char *txt = read_file(path, NULL), *m = txt ? strstr(txt, "Model:") : NULL;
		if (m) {
			m += 6;
			m += strspn(m, " \t");
			model = xstrdup(m);
			model[strcspn(model, "\n")] = 0;
		}
		free(txt);
		free(path);
	}
	if (d)
		closedir(d);
	return model;
}

/* hw/h100_8 and hw/h100_4 describe one GPU: the name before its '_' */
static int same_gpu(const char *a, const char *b)
{
	size_t n = strcspn(a, "_");
	return n == strcspn(b, "_") && !strncmp(a, b, n);
}

/* One line when the GPUs here are not those the run's prompts described
 * (run.json's args.hw, a machine of hw/): the speedups are measured on
 * this machine, the prompt's peaks and roofline were another's. This
 * machine's is the nominal one of its GPU (hw_for_device, as eval's
 * roofline finds it); a GPU with none differs from every description. */
static void warn_hardware(const struct sweep *s)
{
	const char *hw = json_string_value(json_object_get(s->run_args, "hw"));
	struct hw_spec want, mine;
	char err[300];
	if (!hw || !strcmp(hw, "local") || hw_load(hw, &want, err, sizeof err) < 0)
		return;
	char *here = machine_gpu(s->fake);
	if (here && (hw_for_device(NULL, here, s->W, &mine, err, sizeof err) < 0 ||
		     !same_gpu(mine.name, want.name)))
		warning("this machine's GPUs (%s) are not the hardware the run's prompts described "
			"(run.json: hw %s, %s): speedups are measured here", here, hw, want.title);
	free(here);
}

/* One line for the hidden shapes of the problems evaluated ("sweep: hidden
 * shape 768x2048 (drawn), correctness only"; with several, how many
 * problems have each), and one per problem that has none, with why */
static void say_hidden(struct sweep *s, char **skip)
{
	json_t *shapes = json_object();
	for (size_t i = 1; i < ARRAY_SIZE(s->hid); i++) {
		const struct hidden *h = &s->hid[i];
		if (!h->known || (skip[i] && *skip[i]))
			continue;
		if (!h->m) {
			fprintf(stderr, "sweep: no hidden shape for %03zu: %s\n", i, h->why);
			continue;
		}
		char k[64];
		snprintf(k, sizeof k, "%lldx%lld", h->m, h->n);
		json_object_set_new(shapes, k, json_integer(json_integer_value(json_object_get(shapes, k)) + 1));
	}
	const char *k;
	json_t *v;
	size_t n = json_object_size(shapes), i = 0;
	if (n)
		fprintf(stderr, "sweep: hidden shape%s", n > 1 ? "s" : "");
	json_object_foreach(shapes, k, v) {
		if (n == 1)
			fprintf(stderr, " %s", k);
		else
			fprintf(stderr, "%s %s for %lld problem%s", i ? "," : "", k,
				(long long)json_integer_value(v), json_integer_value(v) > 1 ? "s" : "");
		i++;
	}
	if (n)
		fprintf(stderr, " (%s), correctness only\n", s->hidden_m ? "--hidden-shape" : "drawn");
	json_decref(shapes);
}

/* ---- --slurm --status ---- */
static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int status(const char *root)
{
	json_t *subs = sweep_load_submissions(root);
	if (!json_array_size(subs)) {
		json_decref(subs);
		error("no Slurm submission of %s (%s/slurm/jobs.jsonl)", root, root);
		hint("pkb sweep %s --slurm [--nodes N] ... submits one", root);
		return PKB_EXIT_INPUT;
	}
	/* the sweep's options as the last submission gave them */
	json_t *last = json_array_get(subs, json_array_size(subs) - 1);
	json_t *args = json_object_get(last, "args");
	int argc = (int)json_array_size(args) + 2;
	char **argv = xcalloc(argc + 1, sizeof(char *));
	argv[0] = "sweep";
	for (int i = 1; i < argc - 1; i++)
		argv[i] = (char *)json_string_value(json_array_get(args, i - 1));
	argv[argc - 1] = (char *)root;
	struct sweep s;
	struct slurm_opts so;
	const char *jobs = NULL;
	sweep_init(&s, &so);
	s.root = root;
	int rc = parse_opts(&s, &so, &jobs, argc, argv);
	free(argv);
	if (rc || sweep_spec_select(s.spec, s.want, sizeof(s.want)) < 0 || resolve_instance(&s, 1) < 0) {
		sweep_free(&s);
		json_decref(subs);
		error("%s/slurm/jobs.jsonl: the options of the last submission do not parse", root);
		return PKB_EXIT_INPUT;
	}
	sweep_scan(&s, root);
	json_t *done = json_object();
	rc = sweep_load_done(&s, NULL, done);   /* only read: tasks may be appending */
	json_t *oc = json_object();
	int recorded = 0;
	for (int i = 0; i < s.n; i++) {
		const char *o = json_string_value(json_object_get(done, s.t[i].key));
		if (!json_object_get(done, s.t[i].key))
			continue;
		recorded++;
		o = o ? o : "?";
		json_object_set_new(oc, o, json_integer(json_integer_value(json_object_get(oc, o)) + 1));
	}
	printf("sweep %s: %d evaluations, %d recorded", root, s.n, recorded);
	/* outcomes by name, whatever order they were recorded in */
	const char *k, **names = xcalloc(json_object_size(oc) + 1, sizeof(char *));
	json_t *v;
	size_t nn = 0;
	json_object_foreach(oc, k, v)
		names[nn++] = k;
	qsort(names, nn, sizeof(*names), cmp_str);
	for (size_t q = 0; q < nn; q++)
		printf("%s%s %lld", q ? ", " : " (", names[q],
		       (long long)json_integer_value(json_object_get(oc, names[q])));
	free(names);
	printf("%s, %d missing\n", nn ? ")" : "", s.n - recorded);
	char *log = xstrfmt("%s/slurm/.query.%d", root, (int)getpid());
	int active = 0;
	size_t i;
	json_t *sub;
	json_array_foreach(subs, i, sub) {
		const char *job = json_string_value(json_object_get(sub, "job"));
		int n = (int)json_integer_value(json_object_get(sub, "shards"));
		printf("job %s: array %s of %d shards, submitted %s\n", job,
		       json_string_value(json_object_get(sub, "array")), n,
		       json_string_value(json_object_get(sub, "date")));
		json_t *tasks = slurm_tasks(job, log);
		if (!json_array_size(tasks))
			printf("  Slurm no longer knows this job (and keeps no accounting of it)\n");
		size_t j;
		json_t *t;
		json_array_foreach(tasks, j, t) {
			const char *ts = json_string_value(json_object_get(t, "task"));
			const char *st = json_string_value(json_object_get(t, "state"));
			const char *reason = json_string_value(json_object_get(t, "reason"));
			active += slurm_state_active(st);
			printf("  task %-6s %-11s exit %-6s", ts, st,
			       json_string_value(json_object_get(t, "exit_code")));
			char *end;
			long shard = strtol(ts, &end, 10);
			if (!*end && n > 0 && shard >= 0 && shard < n) {
				int tot = 0, got = 0;
				for (int q = 0; q < s.n; q++)
					if (sweep_shard_of(s.t[q].key, n) == shard) {
						tot++;
						got += json_object_get(done, s.t[q].key) != NULL;
					}
				printf(" shard %ld: %d of %d recorded", shard, got, tot);
			}
			if (reason && *reason && strcmp(reason, "None"))
				printf(" (%s)", reason);
			putchar('\n');
		}
		json_decref(tasks);
	}
	unlink(log);
	free(log);
	if (s.n > recorded && !active)
		hint("%d missing and nothing running: pkb sweep %s --slurm ... submits them",
		     s.n - recorded, root);
	json_decref(oc);
	json_decref(done);
	json_decref(subs);
	sweep_free(&s);
	return rc ? PKB_EXIT_INPUT : 0;
}

/* What a sweep has to do: which candidates of its shard remain, which
 * problems refuse the instance and why */
struct plan {
	int *todo, ntodo;     /* indices into s->t */
	int mine;             /* candidates of this shard (all without --shard) */
	int nskip, ncode;     /* skipped; of todo, those with a file to evaluate */
	char *skip[sizeof ((struct sweep *)0)->want];   /* per problem: "" or why it is skipped */
};

/* the command line against itself and this machine, once the instance is
 * resolved: 0, or the exit code */
static int check_sweep(struct sweep *s, const struct slurm_opts *so, int machine)
{
	if (s->hidden_m == s->eval.m && s->hidden_n == s->eval.n) {
		error("--hidden-shape %lldx%lld is the announced shape", s->hidden_m, s->hidden_n);
		hint("another shape, or --hidden-shape off");
		return PKB_EXIT_USAGE;
	}
	if (s->ngpus < s->W && machine) {
		/* the machine, not the command line: as eval's "too few GPUs" */
		error("this machine shows %d GPUs: an evaluation of W = %d (%s) needs %d", s->ngpus,
		      s->W, s->from[0], s->W);
		return PKB_EXIT_ENV;
	}
	if (s->ngpus < s->W && !s->dry_run) {   /* a dry run needs no GPU */
		error("%d GPUs cannot hold an evaluation of W = %d", s->ngpus, s->W);
		hint("--ngpus (or --gpus-per-node with --slurm) at least --gpus");
		return PKB_EXIT_USAGE;
	}
	if (so->on && (s->out || s->shard_n || s->dry_run)) {
		error("--slurm chooses the results files itself: no -o, --shard or --dry-run");
		return PKB_EXIT_USAGE;
	}
	if (!s->lanes)
		s->lanes = s->ngpus >= s->W ? s->ngpus / s->W : 1;
	if (sweep_spec_select(s->spec, s->want, sizeof(s->want)) < 0)
		return PKB_EXIT_USAGE;
	return 0;
}

/* The candidates of this shard not recorded in `done`. The problems that
 * refuse this instance (a W they do not split over, a shape they reject)
 * are skipped, with the reason, as tools/test-gpu skips them: no candidate
 * could pass there, so it is no verdict */
static void plan_tasks(const struct sweep *s, json_t *done, struct plan *pl)
{
	memset(pl, 0, sizeof *pl);
	pl->todo = xcalloc(s->n + 1, sizeof(int));
	for (int i = 0; i < s->n; i++) {
		const struct task *t = &s->t[i];
		if (s->shard_n && sweep_shard_of(t->key, s->shard_n) != s->shard_i)
			continue;
		pl->mine++;
		if (json_object_get(done, t->key))
			continue;
		if (!pl->skip[t->problem]) {
			struct pkb_io *io = xcalloc(1, sizeof *io);
			struct pkb_dims d = { .world = s->W, .m = s->eval.m, .n = s->eval.n,
				.dtype = s->eval.dtype };
			char id[16];
			snprintf(id, sizeof id, "%d", t->problem);
			const struct pkb_problem *p = problem_find(id);
			pl->skip[t->problem] = !p ? xstrfmt("no problem %03d", t->problem)
				: problem_describe(p, &d, io) < 0 ? xstrdup(io->err) : xstrdup("");
			free(io);
		}
		if (*pl->skip[t->problem]) {
			pl->nskip++;
			continue;
		}
		pl->todo[pl->ntodo++] = i;
		pl->ncode += t->path != NULL;
	}
}

static void plan_free(struct plan *pl)
{
	for (size_t i = 0; i < ARRAY_SIZE(pl->skip); i++)
		free(pl->skip[i]);
	free(pl->todo);
}

/* the first lines on stderr: the counts, each problem skipped, the hidden
 * shape; a warning when run.json's machine is another */
static void say_plan(struct sweep *s, struct plan *pl)
{
	char skipped[32] = "";
	if (pl->nskip)
		snprintf(skipped, sizeof skipped, "%d skipped, ", pl->nskip);
	if (s->quiet)
		;
	else if (s->shard_n)
		fprintf(stderr, "sweep: shard %d/%d: %d of %d candidates, %d already recorded, "
			"%s%d to run\n", s->shard_i, s->shard_n, pl->mine, s->n,
			pl->mine - pl->ntodo - pl->nskip, skipped, pl->ntodo);
	else
		fprintf(stderr, "sweep: %d candidates, %d already recorded, %s%d to run\n", s->n,
			s->n - pl->ntodo - pl->nskip, skipped, pl->ntodo);
	for (size_t i = 0; i < ARRAY_SIZE(pl->skip); i++)
		if (pl->skip[i] && *pl->skip[i] && !s->quiet)
			fprintf(stderr, "sweep: skip %03zu at W = %d: %s\n", i, s->W, pl->skip[i]);
	if (!s->quiet && !s->hidden_off)
		say_hidden(s, pl->skip);
	if (s->run_args && !s->dry_run)
		warn_hardware(s);
}

/* the plan run here, appended to res_path: dry (compiles only) or on this
 * machine's GPUs; the exit code */
static int run_plan(struct sweep *s, struct plan *pl, const char *res_path)
{
	/* no GPU here: every evaluation would be an env_error, which is no
	 * verdict; refuse before any, as eval does (the pretend ranks of the
	 * tests need none) */
	int g = s->fake || s->dry_run || !pl->ncode ? s->ngpus : gpu_count();
	if (g < s->ngpus) {
		if (!g)
			error("no GPU on this machine: %d evaluations need one", pl->ncode);
		else
			error("this machine shows %d GPUs, the sweep asks for %d (--ngpus, W = %d)", g,
			      s->ngpus, s->W);
		hint("pkb sweep %s --dry-run compiles and scans them without a GPU", s->root);
		return PKB_EXIT_ENV;
	}
	if (s->shard_n) {
		char *d = xstrfmt("%s/" RESULTS_SHARD_DIR, s->root);
		mkdir_p(d);
		free(d);
	}
	int rc, fd = open(res_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd < 0) {
		error("cannot open %s: %s", res_path, strerror(errno));
		return PKB_EXIT_INPUT;
	}
	if (s->dry_run) {
		rc = sweep_run_dry(s, pl->todo, pl->ntodo, res_path, fd);
	} else {
		signal(SIGPIPE, SIG_IGN);
		s->versions = sweep_host_versions();
		rc = sweep_run_local(s, pl->todo, pl->ntodo, res_path, fd);
	}
	close(fd);
	return rc;
}

int cmd_sweep(int argc, char **argv)
{
	struct sweep s;
	struct slurm_opts so;
	const char *jobs = NULL;
	sweep_init(&s, &so);
	int r = parse_opts(&s, &so, &jobs, argc, argv);
	int rc = r < 0 ? PKB_EXIT_USAGE : 0;
	if (r)
		goto out;
	int machine = !s.ngpus && !so.on && !s.dry_run;   /* N is this machine's GPUs */
	if (!s.ngpus)
		s.ngpus = so.on ? so.gpn : default_ngpus();
	if (jobs) {
		if (argc != optind) {
			error("--jobs takes no directory");
			rc = PKB_EXIT_USAGE;
		} else {
			rc = sweep_run_jobs(jobs, s.ngpus, s.lanes, s.quiet);
		}
		goto out;
	}
	if (argc - optind != 1) {
		error("sweep takes one directory");
		usage(stderr);
		rc = PKB_EXIT_USAGE;
		goto out;
	}
	s.root = argv[optind];
	if (so.status) {
		if (!so.on) {
			error("--status goes with --slurm");
			rc = PKB_EXIT_USAGE;
		} else {
			rc = status(s.root);
		}
		goto out;
	}
	s.fake = getenv("PKB_RANK_CMD") != NULL;
	if (resolve_instance(&s, s.quiet) < 0) {
		rc = PKB_EXIT_INPUT;
		goto out;
	}
	if ((rc = check_sweep(&s, &so, machine)))
		goto out;
	sweep_keep_reference(&s);
	sweep_scan(&s, s.root);
	char *res_path = s.out ? xstrdup(s.out) : !s.shard_n ? xstrfmt("%s/results.jsonl", s.root) :
		xstrfmt("%s/" RESULTS_SHARD_DIR "/shard-%d-of-%d.jsonl", s.root, s.shard_i, s.shard_n);
	json_t *done = json_object();
	if (sweep_load_done(&s, so.on ? NULL : res_path, done) < 0) {
		rc = PKB_EXIT_INPUT;
	} else {
		struct plan pl;
		plan_tasks(&s, done, &pl);
		if (so.on) {
			rc = sweep_submit(&s, &so, pl.todo, pl.ntodo);
		} else {
			say_plan(&s, &pl);
			rc = run_plan(&s, &pl, res_path);
		}
		plan_free(&pl);
	}
	free(res_path);
	json_decref(done);
out:
	sweep_free(&s);
	return rc;
}
