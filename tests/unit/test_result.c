/*
 * test_result.c -- src/result.c on real records: tests/unit/data/
 * eval_records.jsonl holds four `result` fields of bench/results/ (a timed
 * pass on 8 H200s, a mismatch, a compile_error, a timeout, in that order),
 * each read and its fields compared with the file's. Then the same records
 * broken one field at a time: each refused, naming the field.
 */
#include "../../src/result.h"
#include "../../src/util.h"
#include "t.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int near(double a, double b) { return fabs(a - b) <= 1e-12 * fabs(b); }

static int streq(const char *a, const char *b) { return a && b && !strcmp(a, b); }

/* the records of the data file, one per line */
static json_t *load(void)
{
	const char *root = getenv("PKB_ROOT");
	char *path = xstrfmt("%s/tests/unit/data/eval_records.jsonl", root ? root : ".");
	size_t len;
	char *txt = read_file(path, &len);
	json_t *a = json_array();
	for (char *p = txt, *nl; p && p < txt + len; p = nl + 1) {
		nl = strchr(p, '\n');
		json_array_append_new(a, json_loadb(p, (size_t)(nl - p), 0, NULL));
	}
	free(txt);
	free(path);
	return a;
}

static void timed_pass(json_t *rec)
{
	struct result r;
	char err[300] = "";
	CHECKF(result_read(rec, &r, err, sizeof err) == 0, "%s", err);
	CHECK(streq(r.outcome, "pass"));
	CHECK(r.exit_code == 0);
	CHECK(streq(r.message, "1 of 1 trials, every output of 8 ranks"));
	CHECK(streq(r.dtype, "bf16") && r.m == 32 && r.n == 1024);
	CHECK(streq(r.pkb_version, "0.1") && streq(r.date, "2026-11-22T11:06:59Z"));
	CHECK(streq(r.nvcc, "Build cuda_13.0.r13.0/compiler.36424714_0"));
	CHECK(streq(r.timing_mode, "warm") && streq(r.device, "NVIDIA H200"));
	CHECK(!r.driver && !r.cuda_runtime && !r.nccl && !r.compiler_output);
	CHECK(near(r.speedup, 1.0020789371692893));
	CHECK(r.cand.present && r.cand.n == 100);
	CHECK(near(r.cand.median_ms, 0.0230880007147789));
	CHECK(near(r.cand.skew_ms, 0.0007679993286728859));
	CHECK(r.ref.present && near(r.ref.median_ms, 0.023135999217629433));
	CHECK(r.cand.n_rank_median == 0);
	CHECK(r.roofline.present && !r.roofline.error);
	CHECK(streq(r.roofline.hw, "h200_8") && streq(r.roofline.bottleneck, "interconnect"));
	CHECK(near(r.roofline.bound_us, 0.2548622222222222));
	CHECK(near(r.roofline.fraction, 0.011038730696984167));
	CHECK(near(r.roofline.sol_score, 0.500524983742367));
	CHECK(r.n_trials == 8 && r.n_ranks == 8);
	int ok = 1;
	for (int i = 0; i < r.n_trials; i++)
		ok &= r.trials[i].ok && r.trials[i].n_out == 1 && r.trials[i].out[0].ok &&
		      r.trials[i].out[0].n_bad == 0 && streq(r.trials[i].out[0].name, "out");
	CHECK(ok);
	CHECK(r.ranks[3].rank == 3 && r.ranks[3].done && !r.ranks[3].failed);
	CHECK(streq(r.ranks[3].phase, "tearing down") && !r.ranks[3].message);
	result_free(&r);
	CHECK(!r.outcome && !r.trials && isnan(r.speedup));
}

static void mismatch(json_t *rec)
{
	struct result r;
	char err[300] = "";
	CHECKF(result_read(rec, &r, err, sizeof err) == 0, "%s", err);
	CHECK(streq(r.outcome, "mismatch") && r.exit_code == 3);
	CHECK(!r.cand.present && !r.ref.present && !r.roofline.present && isnan(r.speedup));
	CHECK(isnan(r.cand.median_ms) && isnan(r.roofline.bound_us));
	CHECK(r.n_trials == 2);
	const struct result_trial *t = &r.trials[0];
	CHECK(t->trial == 0 && t->rank == 1 && !t->ok && t->n_out == 1);
	const struct result_output *o = &t->out[0];
	CHECK(streq(o->name, "out") && !o->ok && o->l2_failed && !o->look);
	CHECK(o->n == 1048576 && o->n_bad == 1012891 && o->n_bad_zero == 0);
	CHECK(near(o->l2_rel, 0.9995127533854649) && near(o->l2_limit, 0.013531646934131853));
	CHECK(o->worst.present && o->worst.index == 836734);
	CHECK(o->worst.n_coords == 2 && o->worst.coords[0] == 817 && o->worst.coords[1] == 126);
	CHECK(o->worst.ref == -1.453125 && o->worst.cand == 6.34375 && !o->worst.ref_str);
	CHECK(o->worst.bound == 0.0631103515625);
	CHECK(r.trials[1].rank == 0 && r.trials[1].out[0].worst.cand == -9.25);
	result_free(&r);
}

static void compile_error(json_t *rec)
{
	struct result r;
	char err[300] = "";
	CHECKF(result_read(rec, &r, err, sizeof err) == 0, "%s", err);
	CHECK(streq(r.outcome, "compile_error") && r.exit_code == 4);
	CHECK(r.compiler_output && strstr(r.compiler_output, "launch_the_allreduce"));
	CHECK(r.n_trials == 0 && r.n_ranks == 0 && !r.timing_mode && !r.pkb_version);
	result_free(&r);
}

static void timeout(json_t *rec)
{
	struct result r;
	char err[300] = "";
	CHECKF(result_read(rec, &r, err, sizeof err) == 0, "%s", err);
	CHECK(streq(r.outcome, "timeout") && r.exit_code == 7);
	CHECK(r.n_trials == 0 && r.n_ranks == 2);
	CHECK(r.ranks[1].rank == 1 && r.ranks[1].failed && !r.ranks[1].done);
	CHECK(streq(r.ranks[1].phase, "trial 0: candidate"));
	CHECK(streq(r.ranks[1].message, "rank 1: phase 'trial 0: candidate' passed its 20 s deadline"));
	result_free(&r);
}

/* rec with one change made by `edit` must be refused, err holding `want` */
static void refused(json_t *rec, const char *what, void (*edit)(json_t *), const char *want)
{
	json_t *c = json_deep_copy(rec);
	edit(c);
	struct result r;
	char err[300] = "";
	CHECKF(result_read(c, &r, err, sizeof err) == -1, "%s: read", what);
	CHECKF(strstr(err, want) != NULL, "%s: '%s', want '%s'", what, err, want);
	CHECKF(!r.outcome && !r.trials && !r.ranks && isnan(r.speedup), "%s: not cleared", what);
	json_decref(c);
}

static void no_outcome(json_t *c) { json_object_del(c, "outcome"); }
static void outcome_number(json_t *c) { json_object_set_new(c, "outcome", json_integer(0)); }
static void median_string(json_t *c)
{
	json_object_set_new(json_object_get(c, "candidate_perf"), "median_ms", json_string("fast"));
}
static void n_bad_real(json_t *c)
{
	json_t *t = json_array_get(json_object_get(c, "trial_records"), 1);
	json_object_set_new(json_array_get(json_object_get(t, "outputs"), 0), "n_bad",
			    json_real(1.5));
}
static void trial_not_object(json_t *c)
{
	json_array_set_new(json_object_get(c, "trial_records"), 2, json_string("ok"));
}
static void rank_done_string(json_t *c)
{
	json_t *r = json_array_get(json_object_get(json_object_get(c, "launch"), "ranks"), 0);
	json_object_set_new(r, "done", json_string("yes"));
}
static void roofline_array(json_t *c) { json_object_set_new(c, "roofline", json_array()); }

/* null reads as absent; a compared value may be a string ("inf") */
static void lenient(json_t *pass, json_t *mism)
{
	json_t *c = json_deep_copy(pass);
	json_object_set_new(json_object_get(c, "roofline"), "sol_score", json_null());
	json_object_set_new(c, "message", json_null());
	struct result r;
	char err[300] = "";
	CHECKF(result_read(c, &r, err, sizeof err) == 0, "%s", err);
	CHECK(isnan(r.roofline.sol_score) && !r.message && streq(r.outcome, "pass"));
	result_free(&r);
	json_decref(c);
	c = json_deep_copy(mism);
	json_t *t = json_array_get(json_object_get(c, "trial_records"), 0);
	json_t *w = json_object_get(json_array_get(json_object_get(t, "outputs"), 0), "worst");
	json_object_set_new(w, "cand", json_string("inf"));
	CHECKF(result_read(c, &r, err, sizeof err) == 0, "%s", err);
	CHECK(streq(r.trials[0].out[0].worst.cand_str, "inf"));
	result_free(&r);
	json_decref(c);
	json_t *a = json_array();
	CHECK(result_read(a, &r, err, sizeof err) == -1 && strstr(err, "not a JSON object"));
	CHECK(result_read(NULL, &r, err, sizeof err) == -1);
	json_decref(a);
}

int main(void)
{
	json_t *recs = load();
	CHECKF(json_array_size(recs) == 4, "%zu records", json_array_size(recs));
	json_t *pass = json_array_get(recs, 0), *mism = json_array_get(recs, 1);
	timed_pass(pass);
	mismatch(mism);
	compile_error(json_array_get(recs, 2));
	timeout(json_array_get(recs, 3));
	refused(pass, "no outcome", no_outcome, "'outcome' missing");
	refused(pass, "outcome 0", outcome_number, "'outcome' is not a string");
	refused(pass, "median a string", median_string, "'candidate_perf.median_ms' is not a number");
	refused(pass, "n_bad 1.5", n_bad_real, "'trial_records[1].outputs[0].n_bad' is not an integer");
	refused(pass, "a trial a string", trial_not_object, "'trial_records[2]' is not an object");
	refused(pass, "done a string", rank_done_string, "'launch.ranks[0].done' is not true or false");
	refused(pass, "roofline an array", roofline_array, "'roofline' is not an object");
	lenient(pass, mism);
	json_decref(recs);
	return t_done("test_result");
}
