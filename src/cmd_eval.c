/*
 * cmd_eval.c -- `pkb eval ID FILE.cu`: the candidate against the reference,
 * on identical inputs, for every trial, in one launch of the rank processes;
 * optionally timed against each other in the same launch.
 */
#include "build.h"      /* defines: struct build_result */
#include "cmds.h"
#include "dtype.h"      /* defines: dtype_name */
#include "exitcode.h"
#include "job.h"        /* defines: job_opts, job_build, job_launch */
#include "loader.h"     /* defines: loader_backend_uses_nccl */
#include "report.h"
#include "therm.h"      /* defines: THERM_FINI_RISE_C */
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char head[] =
"usage: pkb eval ID FILE.cu [options]\n"
"\n"
"Run the candidate FILE.cu and problem ID's reference on identical inputs for\n"
"every trial, on every rank, in one launch, and compare every output.\n"
"\n";
static const char tail[] =
"\n"
"exit status: 0 pass, 3 mismatch, 4 compile_error, 5 load_refused,\n"
"6 runtime_error, 7 timeout, 8 flagged, 9 no suitable GPU (docs/EXIT_CODES.md)\n";

static const struct opt *const tables[] = { job_opts_eval, job_opts_dims, job_opts_json,
					    job_opts_launch, NULL };

/* Build the reference, then the candidate (its flags and nvcc's version
 * into rec): OUT_PASS, or the outcome with its one-line message in `line`
 * (a reference that does not build is pkb's error, not the candidate's). */
static enum pkb_outcome build_both(const struct job_opts *o, struct job_solution *sols,
				   json_t *rec, char *line, size_t n)
{
	char msg[4096] = "";
	enum pkb_outcome out = job_build(o, &sols[0], "reference", msg, sizeof msg);
	if (out != OUT_PASS) {
		snprintf(line, n, "the reference does not build: %s", msg);
		return OUT_INTERNAL;
	}
	out = job_build(o, &sols[1], o->backend, msg, sizeof msg);
	if (sols[1].build->flags)   /* none where the build could not start (env_error) */
		json_object_set_new(rec, "compile_flags", json_string(sols[1].build->flags));
	json_object_set_new(rec, "nvcc", json_string(build_nvcc_version()));
	if (out == OUT_PASS)
		return out;
	if (out == OUT_COMPILE_ERROR)
		fprintf(stderr, "%s\n", msg);
	/* the one-line verdict keeps the compiler's first error line */
	char *first = strstr(msg, "error");
	snprintf(line, n, "%.511s", first && out == OUT_COMPILE_ERROR ? first : msg);
	char *nl = strchr(line, '\n');
	if (nl)
		*nl = 0;
	if (out == OUT_COMPILE_ERROR)
		json_object_set_new(rec, "compiler_output", json_string(msg));
	return out;
}

/* The launch's trial records checked: every trial reported and passed on
 * every rank (*passed of them, also in rec); `out` the launch's outcome,
 * kept when it is not a pass, the message of a failure in msg. */
static enum pkb_outcome check_trials(const struct job_opts *o, json_t *trials,
				     enum pkb_outcome out, json_t *rec, int *passed, char *msg,
				     size_t n)
{
	char m[1024];
	*passed = 0;
	if (out == OUT_PASS) {
		if (report_trials(trials, o->world, m, sizeof m, passed)) {
			out = OUT_MISMATCH;
			snprintf(msg, n, "%s", m);
		} else if (*passed < o->trials) {
			out = OUT_INTERNAL;
			snprintf(msg, n, "only %d of %d trials reported", *passed, o->trials);
		}
	} else {
		report_trials(trials, o->world, m, sizeof m, passed);
	}
	json_object_set_new(rec, "trials_passed", json_integer(*passed));
	return out;
}

/* the timing table of a pass on stdout */
static void print_perf(const struct job_opts *o, const struct perf_summary *ref,
		       const struct perf_summary *cand, double speedup, double by_median,
		       double by_mean, const char *rl_line)
{
	printf("%-10s %10s %10s %10s %10s %10s %8s\n", "", "median_us", "mean_us",
	       "min_us", "p90_us", "std_us", "skew_us");
	const struct perf_summary *rows[2] = { ref, cand };
	const char *names[2] = { "reference", "candidate" };
	for (int k = 0; k < 2; k++)
		printf("%-10s %10.2f %10.2f %10.2f %10.2f %10.2f %8.2f\n", names[k],
		       rows[k]->st.median * 1e3, rows[k]->st.mean * 1e3,
		       rows[k]->st.min * 1e3, rows[k]->st.p90 * 1e3,
		       rows[k]->st.std * 1e3, rows[k]->skew_ms * 1e3);
	printf("speedup %.3fx (the smaller of reference / candidate by medians, "
	       "%.3fx, and by means, %.3fx; n=%d, max over %d ranks, %s, %d input "
	       "groups)\n", speedup, by_median, by_mean, cand->st.n, o->world,
	       perf_mode_name(cand->mode), cand->groups);
	printf("%s\n", rl_line);
}

/* The timed calls of a pass: both solutions' summaries, the speedup and
 * the timing into rec, the table on stdout; the timing verdict, with its
 * message in msg (a pass keeps msg as it was). */
static enum pkb_outcome eval_perf(const struct job_opts *o, json_t *perf, json_t *rec,
				  int *trace_failed, char *msg, size_t n)
{
	struct perf_summary ref, cand;
	report_perf(perf, "reference", o->world, o->iters, &ref);
	char rl_line[300];
	enum pkb_outcome out = job_perf(o, perf, "candidate", ref.st.median, rec, &cand,
					trace_failed, rl_line, sizeof rl_line, msg, n);
	json_object_set_new(rec, "reference_perf", report_perf_json(&ref));
	json_object_set_new(rec, "candidate_perf", report_perf_json(&cand));
	/* the smaller of the ratios of medians and of means (issue 44):
	 * work moved between calls (one call doing the next ones' work,
	 * the rest returning at once) lowers the candidate's median but
	 * not its mean, so it cannot raise the mean ratio, and so not
	 * the speedup; on tight distributions the two agree to ~2% */
	double by_median = cand.st.median > 0 ? ref.st.median / cand.st.median : 0;
	double by_mean = cand.st.mean > 0 ? ref.st.mean / cand.st.mean : 0;
	double speedup = by_median < by_mean ? by_median : by_mean;
	json_object_set_new(rec, "speedup", json_real(speedup));
	json_object_set_new(rec, "speedup_median", json_real(by_median));
	json_object_set_new(rec, "speedup_mean", json_real(by_mean));
	json_object_set_new(rec, "timing", json_pack("{s:s,s:i,s:i,s:s}", "mode",
						     perf_mode_name(cand.mode), "iters", o->iters,
						     "block", cand.block, "device", cand.device));
	/* the reference is trusted: only its records must be there */
	if (!ref.ok) {
		out = OUT_INTERNAL;
		snprintf(msg, n, "timing records missing");
	}
	/* a GPU the candidate left hot (therm.h): the reference would run at
	 * lower boost clocks than the candidate did, so no speedup is trusted */
	if (out == OUT_PASS && cand.heat.fini_rise_c > THERM_FINI_RISE_C) {
		out = OUT_FLAGGED;
		snprintf(msg, n, "the candidate's pkb_fini and exit raised rank %d's GPU by %d C "
			 "(more than %d C): work run after its last timed call heats the GPU the "
			 "reference is timed on next", cand.rise_rank, cand.heat.fini_rise_c,
			 THERM_FINI_RISE_C);
	}
	if (out == OUT_PASS && ref.heat.hot_c > 0) {
		out = OUT_FLAGGED;
		snprintf(msg, n, "rank %d's GPU was still %d C above its temperature at the "
			 "candidate's warmup after %.0f s: the reference cannot be timed as the "
			 "candidate was (the candidate's work heated the GPU, in pkb_fini or after "
			 "its calls)", ref.hot_rank, ref.heat.hot_c, ref.heat.cool_s);
	}
	if (out == OUT_PASS)
		print_perf(o, &ref, &cand, speedup, by_median, by_mean, rl_line);
	return out;
}

int cmd_eval(int argc, char **argv)
{
	struct job_opts o;
	job_opts_init(&o);
	o.trials = 5;
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
		case 'h': opts_usage(stdout, head, tables, tail); return 0;
		default: opts_usage(stderr, head, tables, tail); return PKB_EXIT_USAGE;
		}
	}
	if (argc - optind != 2) {
		error("eval takes a problem and a candidate file");
		opts_usage(stderr, head, tables, tail);
		return PKB_EXIT_USAGE;
	}
	const char *backend = o.backend;
	o.p = problem_find(argv[optind]);
	if (!o.p) {
		error("no problem '%s'", argv[optind]);
		hint("'pkb list' shows the problems");
		return PKB_EXIT_INPUT;
	}
	const char *cand_path = argv[optind + 1];
	if (check_source_file(cand_path) < 0)
		return PKB_EXIT_INPUT;
	struct pkb_io io;
	if (job_resolve(&o, &io) < 0)
		return PKB_EXIT_INPUT;

	char *ref_path = problem_reference_path(o.p);
	struct job_solution sols[2] = {
		{ .role = "reference", .src = ref_path, .nccl = 1 },
		{ .role = "candidate", .src = cand_path, .nccl = loader_backend_uses_nccl(backend) },
	};
	json_t *rec = json_pack("{s:i,s:s,s:s,s:s,s:i,s:I,s:I,s:s,s:i,s:I,s:b}", "pkb_abi", PKB_ABI_VERSION,
				"problem", o.p->name, "candidate", cand_path, "backend", backend,
				"world", o.world, "m", (json_int_t)o.m, "n", (json_int_t)o.n,
				"dtype", dtype_name(o.dtype), "trials", o.trials, "seed", (json_int_t)o.seed,
				"measure_perf", o.measure_perf);
	json_object_set_new(rec, "problem_id", json_integer(o.p->id));
	job_stamp(rec);
	char line[4200];
	enum pkb_outcome out = build_both(&o, sols, rec, line, sizeof line);
	if (out != OUT_PASS) {
		free(ref_path);
		return job_finish(&o, rec, out, line, NULL, -1, 1, 0);
	}
	if (o.ref_cache && job_ref_cache_check(&o, sols, 2) < 0) {
		free(ref_path);
		json_decref(rec);
		return PKB_EXIT_USAGE;
	}

	struct launch_result res;
	struct job_records R = { 0 };
	char *logs = NULL;
	if (job_launch(&o, WIRE_EVAL, sols, 2, &res, &R, &logs) < 0) {
		free(ref_path);
		return job_finish(&o, rec, OUT_INTERNAL, "could not start the ranks", NULL, -1,
				  1, 0);
	}
	json_object_set_new(rec, "launch", report_launch_json(&res));
	json_object_set_new(rec, "trial_records", json_incref(R.trial));
	json_object_set_new(rec, "processes", json_incref(R.proc));
	job_stamp_gpus(rec, R.trial);
	char msg[4096];
	snprintf(msg, sizeof msg, "%s", res.message);
	int passed, trace_failed = 0;
	out = check_trials(&o, R.trial, res.outcome, rec, &passed, msg, sizeof msg);
	if (out == OUT_PASS && o.measure_perf)
		out = eval_perf(&o, R.perf, rec, &trace_failed, msg, sizeof msg);
	if (out == OUT_PASS)
		snprintf(msg, sizeof msg, "%d of %d trials, every output of %d ranks", passed,
			 o.trials, o.world);
	json_decref(R.trial);
	json_decref(R.run);
	json_decref(R.perf);
	json_decref(R.proc);
	for (int i = 0; i < 2; i++) {
		build_result_free(sols[i].build);
		free(sols[i].build);
	}
	free(ref_path);
	int rc = job_finish(&o, rec, out, msg, logs, res.culprit, 1, trace_failed);
	launch_result_free(&res);
	free(logs);
	return rc;
}
