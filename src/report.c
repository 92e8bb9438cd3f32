/*
 * report.c -- see report.h.
 */
#include "report.h"
#include "util.h"
#include "wire.h"   /* defines: struct wire_perf, wire_perf_unpack */

#include <limits.h>
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

/* rank r's heat into the summary, ranks in order: the readings only while
 * every rank so far has them; a rank still hot counts whatever the others
 * read */
static void heat_of_rank(struct perf_summary *ps, const struct wire_heat *w, int r)
{
	struct wire_heat *h = &ps->heat;
	if (r == 0) {
		h->read = 1;
		h->sm_mhz[0] = h->sm_mhz[1] = INT_MAX;
		ps->hot_rank = ps->rise_rank = -1;
		h->fini_rise_c = INT_MIN;
	}
	if (!w->read) {
		h->read = 0;
		return;
	}
	for (int k = 0; k < 2; k++) {
		h->temp_c[k] = w->temp_c[k] > h->temp_c[k] ? w->temp_c[k] : h->temp_c[k];
		h->sm_mhz[k] = w->sm_mhz[k] < h->sm_mhz[k] ? w->sm_mhz[k] : h->sm_mhz[k];
	}
	h->cool_s = w->cool_s > h->cool_s ? w->cool_s : h->cool_s;
	if (w->hot_c > h->hot_c) {
		h->hot_c = w->hot_c;
		ps->hot_rank = r;
	}
	if (w->fini_rise_c > h->fini_rise_c) {
		h->fini_rise_c = w->fini_rise_c;
		ps->rise_rank = r;
	}
}

void report_perf(json_t *perf, const char *role, int world, int iters, struct perf_summary *ps)
{
	memset(ps, 0, sizeof *ps);
	ps->recheck_ok = 1;
	/* each rank's record of this solution, unpacked (wire.h; launch.c has
	 * checked every record, so one that does not unpack is not used) */
	struct wire_perf *by_rank = xcalloc((size_t)world, sizeof *by_rank);
	int *have = xcalloc((size_t)world, sizeof *have);
	size_t i;
	json_t *p;
	json_array_foreach(perf, i, p) {
		struct wire_perf w;
		char err[300];
		if (wire_perf_unpack(p, &w, err, sizeof err) < 0)
			continue;
		/* the mode is named once, here: a name the table lacks makes
		 * the record as unusable as one that does not unpack */
		if (!strcmp(w.solution, role) && w.rank >= 0 && w.rank < world &&
		    perf_mode_parse(w.mode) >= 0) {
			wire_perf_free(&by_rank[w.rank]);
			by_rank[w.rank] = w;
			have[w.rank] = 1;
		} else {
			wire_perf_free(&w);
		}
	}
	int n = iters;
	for (int r = 0; r < world; r++) {
		if (!have[r])
			goto out;
		if (by_rank[r].n < n)
			n = by_rank[r].n;
	}
	double *mx = xcalloc((size_t)n + 1, sizeof *mx), *skew = xcalloc((size_t)n + 1, sizeof *skew);
	for (int k = 0; k < n; k++) {
		double hi = -INFINITY, lo = INFINITY;
		for (int r = 0; r < world; r++) {
			double v = by_rank[r].times_ms[k];
			hi = v > hi ? v : hi;
			lo = v < lo ? v : lo;
		}
		mx[k] = hi;
		skew[k] = hi - lo;
	}
	stats_compute(mx, n, &ps->st);
	/* each rank's own median: a slow rank (a far peer, a straggler
	 * block) shows here, not in the max over ranks */
	ps->ranks = world < (int)ARRAY_SIZE(ps->rank_median_ms) ? world
							      : (int)ARRAY_SIZE(ps->rank_median_ms);
	for (int r = 0; r < ps->ranks; r++) {
		struct stats one;
		memcpy(mx, by_rank[r].times_ms, (size_t)n * sizeof *mx);
		stats_compute(mx, n, &one);
		ps->rank_median_ms[r] = one.median;
	}
	struct stats sk;
	stats_compute(skew, n, &sk);
	ps->skew_ms = sk.median;
	free(mx);
	free(skew);
	/* the host clock around each block of calls against the events' span:
	 * work that escaped the harness stream shows up only on the host clock */
	for (int r = 0; r < world; r++) {
		const struct wire_perf *w = &by_rank[r];
		double host = w->host_ms;
		double span = w->span_ms;
		ps->groups = w->groups;
		ps->block = w->block;
		ps->mode = (enum perf_mode)perf_mode_parse(w->mode);
		snprintf(ps->device, sizeof ps->device, "%s", w->device);
		ps->gate_expired = w->gate_expired > ps->gate_expired ? w->gate_expired
								       : ps->gate_expired;
		if (w->inputs_modified && ps->recheck_ok) {
			ps->inputs_modified = 1;
			ps->recheck_ok = 0;
			snprintf(ps->recheck_msg, sizeof ps->recheck_msg,
				 "rank %d: a timed call modified its inputs (inputs are read-only)", r);
		}
		if (host > ps->host_ms) {
			ps->host_ms = host;
			ps->span_ms = span;
		}
		heat_of_rank(ps, &w->heat, r);
		int blocks = (iters + ps->block - 1) / (ps->block > 0 ? ps->block : 10);
		if (host > 1.5 * span + 0.25 * blocks)
			ps->escaped = 1;
		if (!w->recheck_ok && ps->recheck_ok) {
			ps->recheck_ok = 0;
			json_t *o;
			json_array_foreach(w->recheck, i, o) {
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
out:
	for (int r = 0; r < world; r++)
		wire_perf_free(&by_rank[r]);
	free(by_rank);
	free(have);
}

enum pkb_outcome report_perf_verdict(const struct perf_summary *ps, const char *role, int below,
				     const char *bound_line, char *msg, size_t n)
{
	if (!ps->ok) {
		snprintf(msg, n, "timing records missing");
		return OUT_INTERNAL;
	}
	if (!ps->recheck_ok) {
		snprintf(msg, n, "%s", ps->recheck_msg);
		return OUT_MISMATCH;
	}
	if (ps->escaped) {
		snprintf(msg, n, "work escaped the timed stream: the host clock saw %.3f ms where "
			 "the stream's events span %.3f ms", ps->host_ms, ps->span_ms);
		return OUT_FLAGGED;
	}
	if (below) {
		snprintf(msg, n, "the %s's median %.3f us is below the hardware's lower bound (%s): "
			 "not physically possible, so its timing is not trusted", role,
			 ps->st.median * 1e3, bound_line);
		return OUT_FLAGGED;
	}
	return OUT_PASS;
}

json_t *report_perf_json(const struct perf_summary *ps)
{
	json_t *o = json_pack("{s:i,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:b,s:b,s:f,s:f,s:i}",
			      "n", ps->st.n, "median_ms", ps->st.median, "mean_ms", ps->st.mean,
			      "min_ms", ps->st.min, "max_ms", ps->st.max, "p90_ms", ps->st.p90,
			      "std_ms", ps->st.std, "skew_ms", ps->skew_ms, "recheck_ok",
			      ps->recheck_ok, "escaped_stream", ps->escaped, "host_ms", ps->host_ms,
			      "span_ms", ps->span_ms, "input_groups", ps->groups);
	json_object_set_new(o, "mode", json_string(perf_mode_name(ps->mode)));
	json_object_set_new(o, "block", json_integer(ps->block));
	json_object_set_new(o, "inputs_modified", json_boolean(ps->inputs_modified));
	json_object_set_new(o, "gate_expired", json_integer(ps->gate_expired));
	json_t *rm = json_array();
	for (int r = 0; r < ps->ranks; r++)
		json_array_append_new(rm, json_real(ps->rank_median_ms[r]));
	json_object_set_new(o, "rank_median_ms", rm);
	if (ps->heat.read)
		json_object_set_new(o, "gpu_heat", wire_heat_pack(&ps->heat));
	return o;
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
		json_t *secs = json_object();
		for (int k = 0; k < PH_KIND_COUNT; k++)
			if (rr->kind_s[k] > 0)
				json_object_set_new(secs, phase_kind_name((enum phase_kind)k),
						    json_real(rr->kind_s[k]));
		json_object_set_new(o, "phase_seconds", secs);
		if (rr->done && rr->exited)
			json_object_set_new(o, "exit_s", json_real(rr->exit_s));
		json_array_append_new(ranks, o);
	}
	return json_pack("{s:f,s:o}", "wall_s", res->wall_s, "ranks", ranks);
}

json_t *report_trace(json_t *perf, int world, const char *title)
{
	json_t *ev = json_array();
	json_array_append_new(ev, json_pack("{s:s,s:s,s:i,s:{s:s}}", "name", "process_name", "ph",
					    "M", "pid", world, "args", "name", title));
	for (int r = 0; r < world; r++) {
		char name[32];
		snprintf(name, sizeof name, "rank %d", r);
		json_array_append_new(ev, json_pack("{s:s,s:s,s:i,s:{s:s}}", "name", "process_name",
						    "ph", "M", "pid", r, "args", "name", name));
	}
	size_t i;
	json_t *p;
	json_array_foreach(perf, i, p) {
		const char *role = json_string_value(json_object_get(p, "solution"));
		int r = (int)json_integer_value(json_object_get(p, "rank"));
		int tid = role && !strcmp(role, "reference") ? 0 : 1;
		json_t *t = json_object_get(p, "times_ms"), *s = json_object_get(p, "start_ms");
		if (!role || r < 0 || r >= world || !json_is_array(t) || !json_is_array(s))
			continue;
		json_array_append_new(ev, json_pack("{s:s,s:s,s:i,s:i,s:{s:s}}", "name",
						    "thread_name", "ph", "M", "pid", r, "tid", tid,
						    "args", "name", role));
		for (size_t k = 0; k < json_array_size(t) && k < json_array_size(s); k++)
			json_array_append_new(ev, json_pack(
				"{s:s,s:s,s:s,s:i,s:i,s:f,s:f,s:{s:i}}", "name", role, "cat", "call",
				"ph", "X", "pid", r, "tid", tid, "ts",
				json_number_value(json_array_get(s, k)) * 1e3, "dur",
				json_number_value(json_array_get(t, k)) * 1e3, "args", "call", (int)k));
	}
	return json_pack("{s:o,s:s}", "traceEvents", ev, "displayTimeUnit", "ns");
}
