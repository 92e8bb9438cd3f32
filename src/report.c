/*
 * report.c -- see report.h.
 */
#include "report.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void describe_output(json_t *o, char *buf, size_t n)
{
	json_t *w = json_object_get(o, "worst");
	const char *name = json_string_value(json_object_get(o, "name"));
	long long bad = json_integer_value(json_object_get(o, "n_bad"));
	long long total = json_integer_value(json_object_get(o, "n"));
	size_t off = (size_t)snprintf(buf, n, "output '%s': %lld of %lld elements wrong", name, bad,
				      total);
	if (w && off < n) {
		char coords[128] = "";
		size_t c = 0;
		json_t *co = json_object_get(w, "coords");
		for (size_t i = 0; i < json_array_size(co) && c < sizeof coords; i++)
			c += (size_t)snprintf(coords + c, sizeof coords - c, "%s%lld", i ? "," : "",
					      (long long)json_integer_value(json_array_get(co, i)));
		char ref[48], cand[48];
		json_t *rv = json_object_get(w, "ref"), *cv = json_object_get(w, "cand");
		if (json_is_string(rv))
			snprintf(ref, sizeof ref, "%s", json_string_value(rv));
		else
			snprintf(ref, sizeof ref, "%.6g", json_number_value(rv));
		if (json_is_string(cv))
			snprintf(cand, sizeof cand, "%s", json_string_value(cv));
		else
			snprintf(cand, sizeof cand, "%.6g", json_number_value(cv));
		off += (size_t)snprintf(buf + off, n - off, "; worst at [%s]: reference %s, candidate %s "
					"(bound %.3g)", coords, ref, cand,
					json_number_value(json_object_get(w, "bound")));
	}
	if (json_is_true(json_object_get(o, "l2_failed")) && off < n)
		snprintf(buf + off, n - off, "; relative L2 error %.3g over the limit %.3g",
			 json_number_value(json_object_get(o, "l2_rel")),
			 json_number_value(json_object_get(o, "l2_limit")));
}

int report_trials(json_t *trials, int world, char *msg, size_t n, int *trials_passed)
{
	/* trials arrive rank by rank; find the smallest failing trial, lowest rank */
	long best_trial = -1;
	int best_rank = -1;
	json_t *best = NULL;
	long max_trial = -1;
	size_t i;
	json_t *t;
	json_array_foreach(trials, i, t) {
		long tr = (long)json_integer_value(json_object_get(t, "trial"));
		int rk = (int)json_integer_value(json_object_get(t, "rank"));
		if (tr > max_trial)
			max_trial = tr;
		if (json_is_true(json_object_get(t, "ok")))
			continue;
		if (!best || tr < best_trial || (tr == best_trial && rk < best_rank)) {
			best = t;
			best_trial = tr;
			best_rank = rk;
		}
	}
	/* a trial passed when all W ranks reported it ok */
	int passed = 0;
	for (long tr = 0; tr <= max_trial; tr++) {
		int ok = 0;
		json_array_foreach(trials, i, t)
			if (json_integer_value(json_object_get(t, "trial")) == tr &&
			    json_is_true(json_object_get(t, "ok")))
				ok++;
		passed += ok == world;
	}
	*trials_passed = passed;
	if (!best)
		return 0;
	json_t *o;
	json_array_foreach(json_object_get(best, "outputs"), i, o) {
		if (json_is_true(json_object_get(o, "ok")))
			continue;
		char d[768];
		describe_output(o, d, sizeof d);
		snprintf(msg, n, "trial %ld, rank %d: %s", best_trial, best_rank, d);
		break;
	}
	return 1;
}

void report_perf(json_t *perf, const char *role, int world, int iters, struct perf_summary *ps)
{
	memset(ps, 0, sizeof *ps);
	ps->recheck_ok = 1;
	json_t **by_rank = xcalloc((size_t)world, sizeof *by_rank);
	size_t i;
	json_t *p;
	json_array_foreach(perf, i, p) {
		const char *r = json_string_value(json_object_get(p, "solution"));
		int rk = (int)json_integer_value(json_object_get(p, "rank"));
		if (r && !strcmp(r, role) && rk >= 0 && rk < world)
			by_rank[rk] = p;
	}
	int n = iters;
	for (int r = 0; r < world; r++) {
		if (!by_rank[r]) {
			free(by_rank);
			return;
		}
		int got = (int)json_array_size(json_object_get(by_rank[r], "times_ms"));
		if (got < n)
			n = got;
	}
	double *mx = xcalloc((size_t)n + 1, sizeof *mx), *skew = xcalloc((size_t)n + 1, sizeof *skew);
	for (int k = 0; k < n; k++) {
		double hi = -INFINITY, lo = INFINITY;
		for (int r = 0; r < world; r++) {
			double v = json_number_value(json_array_get(
				json_object_get(by_rank[r], "times_ms"), (size_t)k));
			hi = v > hi ? v : hi;
			lo = v < lo ? v : lo;
		}
		mx[k] = hi;
		skew[k] = hi - lo;
	}
	stats_compute(mx, n, &ps->st);
	struct stats sk;
	stats_compute(skew, n, &sk);
	ps->skew_ms = sk.median;
	free(mx);
	free(skew);
	/* the host clock around each block of calls against the events' span:
	 * work that escaped the harness stream shows up only on the host clock */
	for (int r = 0; r < world; r++) {
		double host = json_number_value(json_object_get(by_rank[r], "host_ms"));
		double span = json_number_value(json_object_get(by_rank[r], "span_ms"));
		ps->groups = (int)json_integer_value(json_object_get(by_rank[r], "groups"));
		if (host > ps->host_ms) {
			ps->host_ms = host;
			ps->span_ms = span;
		}
		int blocks = (iters + 9) / 10;
		if (host > 1.5 * span + 0.25 * blocks)
			ps->escaped = 1;
		if (!json_is_true(json_object_get(by_rank[r], "recheck_ok")) && ps->recheck_ok) {
			ps->recheck_ok = 0;
			json_t *o;
			json_array_foreach(json_object_get(by_rank[r], "recheck"), i, o) {
				if (json_is_true(json_object_get(o, "ok")))
					continue;
				char d[400];
				describe_output(o, d, sizeof d);
				snprintf(ps->recheck_msg, sizeof ps->recheck_msg,
					 "rank %d, a timed call: %s", r, d);
				break;
			}
		}
	}
	ps->ok = 1;
	free(by_rank);
}

json_t *report_perf_json(const struct perf_summary *ps)
{
	return json_pack("{s:i,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:b,s:b,s:f,s:f,s:i}",
			 "n", ps->st.n, "median_ms", ps->st.median, "mean_ms", ps->st.mean,
			 "min_ms", ps->st.min, "max_ms", ps->st.max, "p90_ms", ps->st.p90,
			 "std_ms", ps->st.std, "skew_ms", ps->skew_ms, "recheck_ok", ps->recheck_ok,
			 "escaped_stream", ps->escaped, "host_ms", ps->host_ms, "span_ms",
			 ps->span_ms, "input_groups", ps->groups);
}

json_t *report_launch_json(const struct launch_result *res)
{
	json_t *ranks = json_array();
	for (int r = 0; res->ranks && r < res->world; r++) {
		const struct rank_report *rr = &res->ranks[r];
		json_t *o = json_pack("{s:i,s:s,s:b,s:b}", "rank", r, "phase", rr->phase, "done",
				      rr->done, "failed", rr->failed);
		if (rr->failed)
			json_object_set_new(o, "message", json_string(rr->message));
		json_array_append_new(ranks, o);
	}
	return json_pack("{s:f,s:o}", "wall_s", res->wall_s, "ranks", ranks);
}
