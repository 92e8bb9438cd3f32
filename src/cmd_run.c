/*
 * cmd_run.c -- `pkb run ID`: the original's dryrun. Runs one solution (the
 * reference by default) for one trial on every rank, prints what each output
 * looks like, and with --save writes every rank's inputs (in the original's
 * positional order, named) and outputs as safetensors files.
 */
#define _GNU_SOURCE
#include "build.h"
#include "cmds.h"
#include "exitcode.h"
#include "job.h"
#include "loader.h"    /* defines: loader_backend_valid */
#include "report.h"
#include "util.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
"usage: pkb run ID [--solution reference|FILE.cu] [options]\n"
"\n"
"Run one solution of problem ID for one trial on every rank.\n"
"\n"
"  -s, --solution S       reference (default) or a candidate FILE.cu\n"
"  -b, --backend B        the candidate's backend: cuda (default), nccl-device\n"
"  -k, --trial K          which trial's inputs (default 0)\n"
"      --save DIR         write rank_R_inputs/outputs.safetensors into DIR\n"
JOB_OPTIONS_HELP;

int cmd_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "solution", required_argument, NULL, 's' },
		{ "backend", required_argument, NULL, 'b' },
		{ "trial", required_argument, NULL, 'k' },
		{ "save", required_argument, NULL, 2001 },
		JOB_LONG_OPTIONS,
		{ 0 },
	};
	struct job_opts o;
	job_opts_init(&o);
	const char *solution = "reference", *backend = "cuda", *save = NULL;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "s:b:k:g:d:j:qh", longopts, NULL)) != -1) {
		int r = job_opt(&o, c, optarg);
		if (r < 0)
			return PKB_EXIT_USAGE;
		if (r)
			continue;
		switch (c) {
		case 's': solution = optarg; break;
		case 'b': backend = optarg; break;
		case 'k':
			o.trial0 = atoi(optarg);
			if (o.trial0 < 0) {
				error("--trial takes a non-negative integer");
				return PKB_EXIT_USAGE;
			}
			break;
		case 2001: save = optarg; break;
		case 'h': fputs(usage, stdout); return 0;
		default: fputs(usage, stderr); return PKB_EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		error("run takes one problem");
		fputs(usage, stderr);
		return PKB_EXIT_USAGE;
	}
	if (!loader_backend_valid(backend)) {
		error("unknown backend '%s'", backend);
		return PKB_EXIT_USAGE;
	}
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
				"n", (json_int_t)o.n, "dtype", o.dtype, "trial", o.trial0);
	job_stamp(rec);
	struct launch_result res = { 0 };
	struct job_records R = { 0 };
	char *logs = NULL;
	if (out == OUT_PASS) {
		o.save_dir = save_abs;   /* the ranks write into it */
		if (job_launch(&o, "run", &sol, 1, &res, &R, &logs) < 0) {
			out = OUT_INTERNAL;
		} else {
			out = res.outcome;
			snprintf(msg, sizeof msg, "%s", res.message);
			json_object_set_new(rec, "launch", report_launch_json(&res));
		}
	}
	if (out == OUT_PASS) {
		printf("%-5s %-24s %12s %12s %10s\n", "rank", "output", "mean|x|", "max|x|",
		       "nonfinite");
		size_t i;
		json_t *r;
		json_array_foreach(R.run, i, r) {
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
		json_object_set_new(rec, "ranks", json_incref(R.run));
		if (o.measure_perf) {
			struct perf_summary ps;
			report_perf(R.perf, sol.role, o.world, o.iters, &ps);
			json_object_set_new(rec, "perf", report_perf_json(&ps));
			if (o.trace_path && job_write_trace(&o, R.perf) < 0)
				trace_failed = 1;
			char rl_line[300];
			int below = 0;
			json_object_set_new(rec, "roofline", job_roofline(&o, ps.device, ps.st.median, 0,
									   &below, rl_line,
									   sizeof rl_line));
			out = report_perf_verdict(&ps, sol.role, below, rl_line, msg, sizeof msg);
			if (out == OUT_PASS) {
				printf("time: median %.2f us, mean %.2f, min %.2f, p90 %.2f, std %.2f "
				       "(n=%d, max over %d ranks, %s)\n", ps.st.median * 1e3,
				       ps.st.mean * 1e3, ps.st.min * 1e3, ps.st.p90 * 1e3,
				       ps.st.std * 1e3, ps.st.n, o.world, ps.mode);
				printf("%s\n", rl_line);
			}
		}
		if (save_abs)
			printf("saved inputs and outputs of %d ranks to %s\n", o.world, save_abs);
	}
	json_object_set_new(rec, "outcome", json_string(outcome_name(out)));
	if (*msg)
		json_object_set_new(rec, "message", json_string(msg));
	if (o.json_path) {
		json_write_file(o.json_path, rec);
	}
	if (out != OUT_PASS) {
		printf("%s: %s\n", outcome_name(out), msg);
		if (logs)
			hint("rank logs kept in %s", logs);
	} else if (logs && !o.keep_logs && !o.log_dir) {
		rm_rf(logs);
	}
	json_decref(rec);
	json_decref(R.trial);
	json_decref(R.run);
	json_decref(R.perf);
	launch_result_free(&res);
	free(logs);
	free(src);
	free(save_abs);
	if (sol.build) {
		build_result_free(sol.build);
		free(sol.build);
	}
	return out == OUT_PASS && trace_failed ? PKB_EXIT_INPUT : outcome_exit_code(out);
}
