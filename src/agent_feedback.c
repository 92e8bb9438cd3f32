/*
 * agent_feedback.c -- see agent_feedback.h. Each verdict has its own
 * details (a kernel engineer's first questions: which error, which element,
 * which rank, how fast against what bound); every message ends with the best
 * so far, the steps left and the request for the whole file again.
 */
#include "agent_feedback.h"
#include "loader.h"    /* defines: loader_backend_rule */
#include "util.h"      /* defines: strbuf, xstrdup, warning */

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *jstr(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

/* a value as eval records it: a number, or "nan"/"inf" as a string */
static void jnum(json_t *v, char *buf, size_t n)
{
	if (json_is_string(v))
		snprintf(buf, n, "%s", json_string_value(v));
	else if (json_is_number(v))
		snprintf(buf, n, "%.6g", json_number_value(v));
	else
		snprintf(buf, n, "?");
}

/* nvcc's own messages, from the first error on: each error line with the
 * few lines under it (the source line and the caret), at most 8 errors and
 * ~3 KB, the candidate's path shown as candidate.cu */
static void trim_compiler(struct strbuf *b, const char *log, const char *path)
{
	char *t = xstrdup(log);
	/* the path as the compiler printed it becomes "candidate.cu" */
	struct strbuf clean = { 0 };
	size_t pl = strlen(path);
	for (const char *p = t; *p;) {
		if (pl && !strncmp(p, path, pl)) {
			strbuf_addstr(&clean, "candidate.cu");
			p += pl;
		} else {
			strbuf_add(&clean, p++, 1);
		}
	}
	free(t);
	if (!clean.s)
		clean.s = xstrdup("");
	int errors = 0, shown = 0, under = 0;
	struct strbuf out = { 0 };
	const char *summary = NULL;
	for (char *l = clean.s, *next; l && *l; l = next) {
		char *nl = strchr(l, '\n');
		next = nl ? nl + 1 : NULL;
		if (nl)
			*nl = 0;
		int is_err = strstr(l, "error") && (strstr(l, ": error") || strstr(l, "error:") ||
						    strstr(l, "error   :") || strstr(l, "fatal"));
		if (strstr(l, "errors detected in the compilation") ||
		    strstr(l, "error detected in the compilation")) {
			summary = l;
			continue;
		}
		if (is_err) {
			errors++;
			under = 0;
			if (shown < 8 && out.len < 3000) {
				strbuf_addf(&out, "%s\n", l);
				shown++;
				under = 3;
			}
		} else if (under > 0 && strstr(l, ": warning") == NULL && *l) {
			strbuf_addf(&out, "%s\n", l);
			under--;
		} else {
			under = 0;
		}
	}
	if (!errors) {
		/* no line reads as an error: the start of the log as it is */
		strbuf_addf(b, "```\n%.3000s\n```\n", clean.s);
	} else {
		strbuf_addf(b, "```\n%s", out.s);
		if (errors > shown)
			strbuf_addf(b, "... %d more error%s not shown\n", errors - shown,
			       errors - shown > 1 ? "s" : "");
		if (summary)
			strbuf_addf(b, "%s\n", summary);
		strbuf_addf(b, "```\n");
	}
	free(out.s);
	free(clean.s);
}

static const char *look_sentence(const char *look)
{
	if (!strcmp(look, "untouched"))
		return "untouched: no element was written (every one still holds the 0xFF poison "
		       "pkb fills outputs with before each call)";
	if (!strcmp(look, "zeros"))
		return "all zeros";
	if (!strcmp(look, "local_only"))
		return "local-only: this rank's own 1/W slice of the output is right, the rest "
		       "is wrong: what comes from the peers is missing or wrong";
	if (!strcmp(look, "partly_untouched"))
		return "partly untouched: some wrong elements were never written (still the "
		       "0xFF poison)";
	return look;
}

/* one wrong output of trial `first` on `rank`: how many elements are
 * wrong, the worst one, the L2 error, and its look, on one line */
static void wrong_output(struct strbuf *b, long first, int rank, json_t *o)
{
	long long bad = json_integer_value(json_object_get(o, "n_bad"));
	long long n = json_integer_value(json_object_get(o, "n"));
	strbuf_addf(b, "- trial %ld, rank %d, output '%s': %lld of %lld elements wrong",
	       first, rank, jstr(o, "name"), bad, n);
	json_t *w = json_object_get(o, "worst");
	if (w) {
		char ref[48], cand[48], co[128] = "";
		size_t c = 0, d;
		json_t *x;
		jnum(json_object_get(w, "ref"), ref, sizeof ref);
		jnum(json_object_get(w, "cand"), cand, sizeof cand);
		json_array_foreach(json_object_get(w, "coords"), d, x)
			if (c < sizeof co)
				c += (size_t)snprintf(co + c, sizeof co - c, "%s%lld",
						      d ? "," : "",
						      (long long)json_integer_value(x));
		strbuf_addf(b, "; worst at flat index %lld [%s]: expected %s, got %s "
		       "(allowed error %.3g)",
		       (long long)json_integer_value(json_object_get(w, "index")), co,
		       ref, cand, json_number_value(json_object_get(w, "bound")));
	}
	if (json_is_true(json_object_get(o, "l2_failed")))
		strbuf_addf(b, "; relative L2 error %.3g over the limit %.3g",
		       json_number_value(json_object_get(o, "l2_rel")),
		       json_number_value(json_object_get(o, "l2_limit")));
	const char *look = json_string_value(json_object_get(o, "look"));
	if (look)
		strbuf_addf(b, "; looks %s", look_sentence(look));
	else if (json_integer_value(json_object_get(o, "n_bad_zero")) > 0)
		strbuf_addf(b, "; %lld of the wrong elements are 0",
		       (long long)json_integer_value(json_object_get(o, "n_bad_zero")));
	strbuf_addf(b, "\n");
}

/* per failing output of the first failing trial (at most 8): which output,
 * which rank, the worst element, how many wrong, and its look; the number
 * of lines written */
static int mismatch_details(struct strbuf *b, json_t *ev)
{
	json_t *trials = json_object_get(ev, "trial_records"), *t;
	long first = -1;
	size_t i;
	json_array_foreach(trials, i, t)
		if (!json_is_true(json_object_get(t, "ok"))) {
			long tr = (long)json_integer_value(json_object_get(t, "trial"));
			if (first < 0 || tr < first)
				first = tr;
		}
	if (first < 0)
		return 0;
	int bad_ranks = 0, ranks = 0, lines = 0;
	json_array_foreach(trials, i, t) {
		if (json_integer_value(json_object_get(t, "trial")) != first)
			continue;
		ranks++;
		if (json_is_true(json_object_get(t, "ok")))
			continue;
		bad_ranks++;
		int rank = (int)json_integer_value(json_object_get(t, "rank"));
		size_t k;
		json_t *o;
		json_array_foreach(json_object_get(t, "outputs"), k, o) {
			if (json_is_true(json_object_get(o, "ok")) || lines >= 8)
				continue;
			lines++;
			wrong_output(b, first, rank, o);
		}
	}
	if (ranks)
		strbuf_addf(b, "%d of %d ranks wrong in trial %ld.\n", bad_ranks, ranks, first);
	return lines;
}

static void rank_phases(struct strbuf *b, json_t *ev)
{
	json_t *ranks = json_object_get(json_object_get(ev, "launch"), "ranks"), *r;
	size_t i;
	json_array_foreach(ranks, i, r) {
		strbuf_addf(b, "- rank %lld reached phase '%s'",
		       (long long)json_integer_value(json_object_get(r, "rank")), jstr(r, "phase"));
		if (json_is_true(json_object_get(r, "failed")))
			strbuf_addf(b, " and failed: %s", jstr(r, "message"));
		else if (json_is_true(json_object_get(r, "done")))
			strbuf_addf(b, " (finished)");
		strbuf_addf(b, "\n");
	}
}

/* the speedup, the per-rank medians and the roofline on `hw`, the machine
 * the prompt described */
static void perf_details(struct strbuf *b, json_t *ev, const char *hw)
{
	json_t *cp = json_object_get(ev, "candidate_perf"), *rp = json_object_get(ev, "reference_perf");
	json_t *sp = json_object_get(ev, "speedup");
	if (!cp || !json_is_number(sp)) {
		strbuf_addf(b, "Not timed.\n");
		return;
	}
	json_t *tm = json_object_get(ev, "timing");
	strbuf_addf(b, "Speedup %.3fx against the reference: median %.2f us against %.2f us "
	       "(%lld timed calls, each the slowest rank, %s timing).\n", json_number_value(sp),
	       json_number_value(json_object_get(cp, "median_ms")) * 1e3,
	       json_number_value(json_object_get(rp, "median_ms")) * 1e3,
	       (long long)json_integer_value(json_object_get(cp, "n")),
	       tm ? jstr(tm, "mode") : "warm");
	json_t *rm = json_object_get(cp, "rank_median_ms"), *x;
	size_t i;
	if (json_array_size(rm)) {
		strbuf_addf(b, "Per rank (median):");
		json_array_foreach(rm, i, x)
			strbuf_addf(b, "%s rank %zu %.2f us", i ? "," : "", i, json_number_value(x) * 1e3);
		strbuf_addf(b, "; skew between ranks %.2f us.\n",
		       json_number_value(json_object_get(cp, "skew_ms")) * 1e3);
	}
	json_t *rl = json_object_get(ev, "roofline");
	if (json_is_string(json_object_get(rl, "error"))) {
		strbuf_addf(b, "Roofline: none (%s).\n", jstr(rl, "error"));
	} else if (rl) {
		/* an --eval-cmd without {hw} lets the far side pick its own */
		if (strcmp(jstr(rl, "hw"), hw))
			warning("the evaluation's roofline is on %s, the prompt described %s: put "
				"--hw {hw} in --eval-cmd", jstr(rl, "hw"), hw);
		strbuf_addf(b, "Roofline: the lower bound is %.2f us on %s, %s-bound; this candidate "
		       "runs at %.0f%% of it", json_number_value(json_object_get(rl, "bound_us")),
		       jstr(rl, "hw"), jstr(rl, "bottleneck"),
		       100 * json_number_value(json_object_get(rl, "fraction")));
		json_t *s = json_object_get(rl, "sol_score");
		if (json_is_number(s))
			strbuf_addf(b, " (speed-of-light score %.3f: 0.5 is the reference, 1 the bound)",
			       json_number_value(s));
		strbuf_addf(b, ".\n");
	}
}

/* what the verdict of fb's step found, after "Step S: VERDICT." */
static void verdict_details(struct strbuf *b, const struct agent_feedback *fb, json_t *ev)
{
	const char *verdict = fb->verdict;
	const char *msg = ev ? jstr(ev, "message") : "";
	if (!strcmp(verdict, "no_code")) {
		strbuf_addf(b, " Your reply had no fenced code block: send the whole .cu file in one "
		       "```cuda block.\n");
	} else if (!strcmp(verdict, "truncated")) {
		strbuf_addf(b, " Your reply stopped at the token limit (%d tokens) before the file was "
		       "complete: send the whole file again, shorter.\n", fb->tokens_out);
	} else if (!strcmp(verdict, "compile_error")) {
		json_t *co = json_object_get(ev, "compiler_output");
		strbuf_addf(b, " nvcc's first errors:\n");
		trim_compiler(b, json_is_string(co) ? json_string_value(co) : msg, fb->cand_path);
	} else if (!strcmp(verdict, "load_refused")) {
		strbuf_addf(b, " The symbol scan refused the compiled file: %s.\nThe %s backend's rule: "
		       "%s.\n", msg, fb->backend, loader_backend_rule(fb->backend));
	} else if (!strcmp(verdict, "mismatch")) {
		/* eval's line when the records say no more (a timed call's
		 * output, an input written) */
		struct strbuf d = { 0 };
		if (mismatch_details(&d, ev))
			strbuf_addf(b, "\n%s", d.s);
		else
			strbuf_addf(b, " %s\n", msg);
		free(d.s);
	} else if (!strcmp(verdict, "runtime_error") || !strcmp(verdict, "timeout")) {
		strbuf_addf(b, " %s\nWhere each rank was:\n", msg);
		rank_phases(b, ev);
	} else if (!strcmp(verdict, "flagged")) {
		strbuf_addf(b, " Correct, but the time is not trusted, so it does not count: %s\n", msg);
	} else if (!strcmp(verdict, "pass")) {
		strbuf_addf(b, " Correct: %s.\n", msg);
		perf_details(b, ev, fb->hw);
	} else if (!strcmp(verdict, "internal_error")) {
		strbuf_addf(b, " pkb's evaluation failed (a harness error, not necessarily your "
		       "file's): %s\n", msg);
	} else {
		strbuf_addf(b, " %s\n", msg);
	}
}

char *agent_feedback_build(const struct agent_feedback *fb, json_t *ev)
{
	struct strbuf b = { 0 };
	strbuf_addf(&b, "Step %d: %s.", fb->step, fb->verdict);
	verdict_details(&b, fb, ev);
	if (!fb->best_step)
		strbuf_addf(&b, "No correct candidate yet");
	else if (isnan(fb->best_speedup))
		strbuf_addf(&b, "Best so far: step %d (not timed)", fb->best_step);
	else
		strbuf_addf(&b, "Best so far: step %d, %.3fx", fb->best_step, fb->best_speedup);
	strbuf_addf(&b, ". Steps left: %d.", fb->steps_left);
	if (fb->target > 0)
		strbuf_addf(&b, " Target: %.2fx.", fb->target);
	strbuf_addf(&b, "\nReply with the whole improved .cu file in one ```cuda block.\n");
	return b.s;
}
