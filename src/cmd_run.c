/*
 * cmd_run.c -- `pkb run ID`: the original's dryrun. Runs one solution (the
 * reference by default) for one trial on every rank, prints what each output
 * looks like, and with --save writes every rank's inputs (in the original's
 * positional order, named) and outputs as safetensors files.
 */
#define _GNU_SOURCE
#include "build.h"
#include "cmds.h"
#include "dtype.h"      /* defines: dtype_name */
#include "exitcode.h"
#include "job.h"
#include "loader.h"    /* defines: loader_backend_uses_nccl */
#include "report.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char head[] =
"usage: pkb run ID [--solution reference|FILE.cu] [options]\n"
"\n"
"Run one solution of problem ID for one trial on every rank.\n"
"\n";

enum { OPT_SAVE = OPT_JOB_END };
static const struct opt run_opts[] = {
	{ 's', "solution", "S", "reference (default) or a candidate FILE.cu" },
	{ 'b', "backend", "B", "the candidate's backend: cuda (default), nccl-device,\n"
				       "parallelkittens" },
	{ 'k', "trial", "K", "which trial's inputs (default 0)" },
	{ OPT_SAVE, "save", "DIR", "write rank_R_inputs/outputs.safetensors into DIR" },
	OPTS_END,
};
static const struct opt *const tables[] = { run_opts, job_opts_dims, job_opts_json,
					    job_opts_launch, NULL };

/* what each rank's outputs look like, on stdout */
static void print_outputs(json_t *run)
{
	printf("%-5s %-24s %12s %12s %10s\n", "rank", "output", "mean|x|", "max|x|",
	       "nonfinite");
	size_t i;
	json_t *r;
	json_array_foreach(run, i, r) {
		size_t k;
		json_t *op;
		json_array_foreach(json_object_get(r, "outputs"), k, op)
			printf("%-5lld %-24s %12.5g %12.5g %10lld\n",
			       (long long)json_integer_value(json_object_get(r, "rank")),
			       json_string_value(json_object_get(op, "name")),
			       json_number_value(json_object_get(op, "mean_abs")),
			       json_number_value(json_object_get(op, "amax")),
			       (long long)json_integer_value(json_object_get(op, "nonfinite")));
	}
}

/* the timed calls of `role`: their summary into rec, a line on stdout;
 * the timing verdict, with its message in msg */
static enum pkb_outcome run_perf(const struct job_opts *o, const char *role, json_t *perf,
				 json_t *rec, int *trace_failed, char *msg, size_t n)
{
	struct perf_summary ps;
	char rl_line[300];
	enum pkb_outcome out = job_perf(o, perf, role, 0, rec, &ps, trace_failed, rl_line,
					sizeof rl_line, msg, n);
	json_object_set_new(rec, "perf", report_perf_json(&ps));
	if (out == OUT_PASS) {
		printf("time: median %.2f us, mean %.2f, min %.2f, p90 %.2f, std %.2f "
		       "(n=%d, max over %d ranks, %s)\n", ps.st.median * 1e3,
		       ps.st.mean * 1e3, ps.st.min * 1e3, ps.st.p90 * 1e3,
		       ps.st.std * 1e3, ps.st.n, o->world, perf_mode_name(ps.mode));
		printf("%s\n", rl_line);
	}
	return out;
}

int cmd_run(int argc, char **argv)
{
	struct job_opts o;
	job_opts_init(&o);
	const char *solution = "reference", *save = NULL;
	int c;
	struct opts_parser P;
	opts_init(&P, tables);
	while ((c = opts_next(&P, argc, argv)) != -1) {
		int r = job_opt(&o, c, optarg);
		if (r < 0)
			return PKB_EXIT_USAGE;
		if (r)
			continue;
		switch (c) {
		case 's': solution = optarg; break;
		case 'k': {
			long long t;
			if (parse_int_in(optarg, 0, 1 << 30, &t) < 0) {
				error("--trial takes a non-negative integer, not '%s'", optarg);
				return PKB_EXIT_USAGE;
			}
			o.trial0 = (int)t;
			break;
		}
		case OPT_SAVE: save = optarg; break;
		case 'h': opts_usage(stdout, head, tables, NULL); return 0;
		default: opts_usage(stderr, head, tables, NULL); return PKB_EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		error("run takes one problem");
		opts_usage(stderr, head, tables, NULL);
		return PKB_EXIT_USAGE;
	}
	const char *backend = o.backend;   /* -b: job_opt checked it */
	o.p = problem_find(argv[optind]);
	if (!o.p) {
		error("no problem '%s'", argv[optind]);
		hint("'pkb list' shows the problems");
		return PKB_EXIT_INPUT;
	}
	struct pkb_io io;
	if (job_resolve(&o, &io) < 0)
		return PKB_EXIT_INPUT;
	int is_ref = !strcmp(solution, "reference"), trace_failed = 0;
	char *src = is_ref ? problem_reference_path(o.p) : xstrdup(solution);
	if (!is_ref && check_source_file(src) < 0) {
		free(src);
		return PKB_EXIT_INPUT;
	}
	char *save_abs = NULL;
	if (save) {
		if (mkdir_p(save) < 0) {
			error("cannot create '%s'", save);
			free(src);
			return PKB_EXIT_INPUT;
		}
		save_abs = realpath(save, NULL);
	}
	struct job_solution sol = { .role = is_ref ? "reference" : "candidate", .src = src,
				    .nccl = is_ref || loader_backend_uses_nccl(backend) };
	char msg[4096] = "";
	enum pkb_outcome out = job_build(&o, &sol, is_ref ? "reference" : backend, msg, sizeof msg);
	json_t *rec = json_pack("{s:s,s:s,s:i,s:I,s:I,s:s,s:i}", "problem", o.p->name,
				"solution", solution, "world", o.world, "m", (json_int_t)o.m,
				"n", (json_int_t)o.n, "dtype", dtype_name(o.dtype), "trial", o.trial0);
	job_stamp(rec);
	struct launch_result res = { .culprit = -1 };
	struct job_records R = { 0 };
	char *logs = NULL;
	if (out == OUT_PASS) {
		o.save_dir = save_abs;   /* the ranks write into it */
		if (job_launch(&o, WIRE_RUN, &sol, 1, &res, &R, &logs) < 0) {
			out = OUT_INTERNAL;
		} else {
			out = res.outcome;
			snprintf(msg, sizeof msg, "%s", res.message);
			json_object_set_new(rec, "launch", report_launch_json(&res));
		}
	}
	if (out == OUT_PASS) {
		print_outputs(R.run);
		json_object_set_new(rec, "ranks", json_incref(R.run));
		json_object_set_new(rec, "processes", json_incref(R.proc));
		job_stamp_gpus(rec, R.run);
		if (o.measure_perf)
			out = run_perf(&o, sol.role, R.perf, rec, &trace_failed, msg, sizeof msg);
		if (save_abs)
			printf("saved inputs and outputs of %d ranks to %s\n", o.world, save_abs);
	}
	json_decref(R.trial);
	json_decref(R.run);
	json_decref(R.perf);
	json_decref(R.proc);
	free(src);
	free(save_abs);
	if (sol.build) {
		build_result_free(sol.build);
		free(sol.build);
	}
	int rc = job_finish(&o, rec, out, msg, logs, res.culprit, 0, trace_failed);
	launch_result_free(&res);
	free(logs);
	return rc;
}
