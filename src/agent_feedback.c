/*
 * agent_feedback.c -- see agent_feedback.h. Each verdict has its own
 * details (a kernel engineer's first questions: which error, which element,
 * which rank, how fast against what bound); every message ends with the best
 * so far, the steps left and the request for the whole file again.
 */
#include "agent_feedback.h"
#include "loader.h"    /* defines: loader_backend_rule */
#include "util.h"      /* defines: strbuf, xstrdup, warning */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a string of the record, "" where it has none */
static const char *or_empty(const char *s)
{
	return s ? s : "";
}

/* a value as eval records it: a number, or "nan"/"inf" as a string */
static void value_text(double x, const char *s, char *buf, size_t n)
{
	if (s)
		snprintf(buf, n, "%s", s);
	else if (!isnan(x))
		snprintf(buf, n, "%.6g", x);
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
static void wrong_output(struct strbuf *b, long first, int rank, const struct result_output *o)
{
	strbuf_addf(b, "- trial %ld, rank %d, output '%s': %lld of %lld elements wrong",
	       first, rank, or_empty(o->name), o->n_bad, o->n);
	const struct result_worst *w = &o->worst;
	if (w->present) {
		char ref[48], cand[48], co[128] = "";
		size_t c = 0;
		value_text(w->ref, w->ref_str, ref, sizeof ref);
		value_text(w->cand, w->cand_str, cand, sizeof cand);
		for (int d = 0; d < w->n_coords; d++)
			if (c < sizeof co)
				c += (size_t)snprintf(co + c, sizeof co - c, "%s%lld",
						      d ? "," : "", w->coords[d]);
		strbuf_addf(b, "; worst at flat index %lld [%s]: expected %s, got %s "
		       "(allowed error %.3g)", w->index < 0 ? 0 : w->index, co, ref, cand,
		       isnan(w->bound) ? 0.0 : w->bound);
	}
	if (o->l2_failed)
		strbuf_addf(b, "; relative L2 error %.3g over the limit %.3g",
		       isnan(o->l2_rel) ? 0.0 : o->l2_rel, isnan(o->l2_limit) ? 0.0 : o->l2_limit);
	if (o->look)
		strbuf_addf(b, "; looks %s", look_sentence(o->look));
	else if (o->n_bad_zero > 0)
		strbuf_addf(b, "; %lld of the wrong elements are 0", o->n_bad_zero);
	strbuf_addf(b, "\n");
}

/* per failing output of the first failing trial (at most 8): which output,
 * which rank, the worst element, how many wrong, and its look; the number
 * of lines written */
static int mismatch_details(struct strbuf *b, const struct result *ev)
{
	long first = -1;
	for (int i = 0; i < ev->n_trials; i++)
		if (!ev->trials[i].ok) {
			long tr = ev->trials[i].trial < 0 ? 0 : ev->trials[i].trial;
			if (first < 0 || tr < first)
				first = tr;
		}
	if (first < 0)
		return 0;
	int bad_ranks = 0, ranks = 0, lines = 0;
	for (int i = 0; i < ev->n_trials; i++) {
		const struct result_trial *t = &ev->trials[i];
		if ((t->trial < 0 ? 0 : t->trial) != first)
			continue;
		ranks++;
		if (t->ok)
			continue;
		bad_ranks++;
		int rank = t->rank < 0 ? 0 : t->rank;
		for (int k = 0; k < t->n_out; k++) {
			if (t->out[k].ok || lines >= 8)
				continue;
			lines++;
			wrong_output(b, first, rank, &t->out[k]);
		}
	}
	if (ranks)
		strbuf_addf(b, "%d of %d ranks wrong in trial %ld.\n", bad_ranks, ranks, first);
	return lines;
}

static void rank_phases(struct strbuf *b, const struct result *ev)
{
	for (int i = 0; i < ev->n_ranks; i++) {
		const struct result_rank *r = &ev->ranks[i];
		strbuf_addf(b, "- rank %d reached phase '%s'", r->rank < 0 ? 0 : r->rank,
		       or_empty(r->phase));
		if (r->failed)
			strbuf_addf(b, " and failed: %s", or_empty(r->message));
		else if (r->done)
			strbuf_addf(b, " (finished)");
		strbuf_addf(b, "\n");
	}
}

/* the speedup, the per-rank medians and the roofline on `hw`, the machine
 * the prompt described */
/* a time of the record in us; 0 where it has none (as it always said) */
static double us(double ms)
{
	return isnan(ms) ? 0.0 : ms * 1e3;
}

static void perf_details(struct strbuf *b, const struct result *ev, const char *hw)
{
	const struct result_perf *cp = &ev->cand;
	if (!cp->present || isnan(ev->speedup)) {
		strbuf_addf(b, "Not timed.\n");
		return;
	}
	strbuf_addf(b, "Speedup %.3fx against the reference: median %.2f us against %.2f us "
	       "(%lld timed calls, each the slowest rank, %s timing).\n", ev->speedup,
	       us(cp->median_ms), us(ev->ref.median_ms), cp->n,
	       ev->timing_mode ? ev->timing_mode : "warm");
	if (cp->n_rank_median) {
		strbuf_addf(b, "Per rank (median):");
		for (int i = 0; i < cp->n_rank_median; i++)
			strbuf_addf(b, "%s rank %d %.2f us", i ? "," : "", i, cp->rank_median_ms[i] * 1e3);
		strbuf_addf(b, "; skew between ranks %.2f us.\n", us(cp->skew_ms));
	}
	const struct result_roofline *rl = &ev->roofline;
	if (rl->error) {
		strbuf_addf(b, "Roofline: none (%s).\n", rl->error);
	} else if (rl->present) {
		/* an --eval-cmd without {hw} lets the far side pick its own */
		if (strcmp(or_empty(rl->hw), hw))
			warning("the evaluation's roofline is on %s, the prompt described %s: put "
				"--hw {hw} in --eval-cmd", or_empty(rl->hw), hw);
		strbuf_addf(b, "Roofline: the lower bound is %.2f us on %s, %s-bound; this candidate "
		       "runs at %.0f%% of it", isnan(rl->bound_us) ? 0.0 : rl->bound_us,
		       or_empty(rl->hw), or_empty(rl->bottleneck),
		       isnan(rl->fraction) ? 0.0 : 100 * rl->fraction);
		if (!isnan(rl->sol_score))
			strbuf_addf(b, " (speed-of-light score %.3f: 0.5 is the reference, 1 the bound)",
			       rl->sol_score);
		strbuf_addf(b, ".\n");
	}
}

/* what the verdict of fb's step found, after "Step S: VERDICT." */
static void verdict_details(struct strbuf *b, const struct agent_feedback *fb,
			    const struct result *ev)
{
	const char *verdict = fb->verdict;
	const char *msg = ev ? or_empty(ev->message) : "";
	if (!strcmp(verdict, "no_code")) {
		strbuf_addf(b, " Your reply had no fenced code block: send the whole .cu file in one "
		       "```cuda block.\n");
	} else if (!strcmp(verdict, "truncated")) {
		strbuf_addf(b, " Your reply stopped at the token limit (%d tokens) before the file was "
		       "complete: send the whole file again, shorter.\n", fb->tokens_out);
	} else if (!strcmp(verdict, "compile_error")) {
		strbuf_addf(b, " nvcc's first errors:\n");
		trim_compiler(b, ev && ev->compiler_output ? ev->compiler_output : msg, fb->cand_path);
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

char *agent_feedback_build(const struct agent_feedback *fb, const struct result *ev)
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
