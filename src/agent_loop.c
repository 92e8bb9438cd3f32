/*
 * agent_loop.c -- see agent_loop.h. One step: the reply (asked, or read
 * back when a killed run got it), its file, the evaluation, the feedback,
 * then the trajectory line and the answer; the conversation's turns grow by
 * the reply and the feedback. Every budget is checked between steps; the
 * time budget also bounds a request's retries.
 *
 * The model's text only ever becomes the bytes of a candidate file, which
 * runs inside pkb eval's rank processes (symbol scan, deadlines, process
 * group kill). Nothing it writes is a command, a path or an argument.
 */
#define _GNU_SOURCE
#include "agent_loop.h"
#include "agent_feedback.h"   /* defines: agent_feedback_build */
#include "exitcode.h"
#include "llm_http.h"         /* defines: llm_http_post, llm_hint_status */
#include "problem.h"
#include "rundir.h"
#include "util.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const agent_stop_names[] = { NULL, "steps", "budget_s", "budget_tokens",
					 "target_speedup" };

static char *step_path(const struct agent_conv *c, int step, const char *what)
{
	return xstrfmt("%s/step_%d.%s", c->dir, step, what);
}

static void add_turn(struct agent_conv *c, int assistant, const char *text)
{
	c->turns = xrealloc(c->turns, (size_t)(c->n_turns + 1) * sizeof *c->turns);
	c->texts = xrealloc(c->texts, (size_t)(c->n_turns + 1) * sizeof *c->texts);
	c->texts[c->n_turns] = xstrdup(text);
	c->turns[c->n_turns] = (struct llm_turn){ .assistant = assistant,
						  .text = c->texts[c->n_turns] };
	c->n_turns++;
}

static enum agent_stop stop_reason(const struct agent *a, const struct agent_conv *c)
{
	if (a->target > 0 && c->best_step && c->best_speedup >= a->target)
		return AGENT_STOP_TARGET;
	if (c->step >= a->steps)
		return AGENT_STOP_STEPS;
	if (a->budget_tokens > 0 && c->tokens >= a->budget_tokens)
		return AGENT_STOP_TOKENS;
	if (a->budget_s > 0 && c->seconds >= a->budget_s)
		return AGENT_STOP_SECONDS;
	return AGENT_STOP_NONE;
}

void agent_progress(const struct agent *a, const char *fmt, ...)
{
	if (a->quiet)
		return;
	va_list ap;
	va_start(ap, fmt);
	vreport("agent: ", fmt, ap);
	va_end(ap);
}

/* ---- one problem's files ---------------------------------------------------- */

/* the reply record of the answer (generate's, with the agent's own part):
 * `cand` the answer's file, `stop` NULL while the conversation goes on */
static json_t *answer_record(const struct agent *a, const struct agent_conv *c,
			     const char *cand, const char *stop)
{
	char date[32];
	rundir_utc_now(date, sizeof date);
	json_t *rec = json_pack("{s:i,s:s,s:i,s:s,s:s,s:s,s:s,s:s,s:s,s:i,s:f,s:i,s:I,s:I}",
				"problem", c->p->id, "name", c->p->name, "sample", 0, "model",
				a->model, "provider", a->prov->name, "date", date, "prompt_sha256",
				c->pr.sha256, "template_sha256", c->pr.template_sha256, "outcome",
				c->answer_step ? "ok" : "no_code", "http_status", 200, "latency_s",
				c->model_s, "attempts", c->attempts, "tokens_in", (json_int_t)0,
				"tokens_out", (json_int_t)0);
	json_object_set_new(rec, "tokens", json_integer(c->tokens));
	json_object_set_new(rec, "prompt", json_string(c->prompt_file));
	json_object_set_new(rec, "candidate", c->answer_step
			    ? json_string(cand + strlen(a->run_dir) + 1) : json_null());
	json_t *ag = json_pack("{s:i,s:s,s:s}", "steps", c->step, "trajectory",
			       "trajectory.jsonl", "last_verdict", c->last_verdict);
	char *tdir = xstrfmt("agent/%03d/trajectory.jsonl", c->p->id);
	json_object_set_new(ag, "trajectory", json_string(tdir));
	free(tdir);
	json_object_set_new(ag, "answer_step", c->answer_step ? json_integer(c->answer_step)
							       : json_null());
	json_object_set_new(ag, "best_step", c->best_step ? json_integer(c->best_step) : json_null());
	json_object_set_new(ag, "best_speedup", c->best_step && !isnan(c->best_speedup)
				? json_real(c->best_speedup) : json_null());
	json_object_set_new(ag, "seconds", json_real(c->seconds));
	json_object_set_new(ag, "stop", stop ? json_string(stop) : json_null());
	json_object_set_new(rec, "agent", ag);
	return rec;
}

/* the agent's answer as generate's sample 0: the best correct step's file
 * (else the last with code), then the reply record that marks it */
static int write_answer(const struct agent *a, struct agent_conv *c, const char *stop)
{
	char *cand = xstrfmt("%s/candidates/%03d/sample_0.%s", a->run_dir, c->p->id,
			     prompt_backend_ext(a->po.backend));
	char *rep = xstrfmt("%s/replies/%03d/sample_0.json", a->run_dir, c->p->id);
	int rc = 0;
	if (!c->answer_step && !stop)
		goto out;
	if (c->answer_step) {
		char *src = step_path(c, c->answer_step, prompt_backend_ext(a->po.backend));
		size_t len;
		char *txt = read_file(src, &len);
		free(src);
		if (!txt || rundir_write(cand, txt, len) < 0) {
			free(txt);
			rc = error("cannot write '%s': %s", cand, strerror(errno));
			goto out;
		}
		free(txt);
	}
	json_t *rec = answer_record(a, c, cand, stop);
	rc = rundir_write_json(rep, rec);
	json_decref(rec);
out:
	free(cand);
	free(rep);
	return rc;
}

/* take in one finished step's line (a fresh one or one read back) */
static void account(struct agent_conv *c, json_t *line)
{
	c->step = (int)json_integer_value(json_object_get(line, "step"));
	c->tokens = json_integer_value(json_object_get(line, "tokens_total"));
	c->seconds += json_number_value(json_object_get(line, "seconds"));
	c->model_s += json_number_value(json_object_get(line, "model_s"));
	c->attempts += (int)json_integer_value(json_object_get(line, "attempts"));
	const char *v = json_str(line, "verdict", "");
	snprintf(c->last_verdict, sizeof c->last_verdict, "%s", v);
	json_t *sp = json_object_get(line, "speedup");
	double s = json_is_number(sp) ? json_number_value(sp) : NAN;
	if (!strcmp(v, "pass")) {
		/* the fastest correct one; an untimed pass counts only first */
		if (!c->best_step || (!isnan(s) && (isnan(c->best_speedup) || s > c->best_speedup))) {
			c->best_step = c->step;
			c->best_speedup = s;
		}
	}
	if (c->best_step)
		c->answer_step = c->best_step;
	else if (json_is_string(json_object_get(line, "candidate")))
		c->answer_step = c->step;
}

/* the conversation so far, from the files; -1 when they do not fit */
static int load_conv(struct agent_conv *c)
{
	char *tp = xstrfmt("%s/trajectory.jsonl", c->dir);
	/* a kill inside write() leaves a torn last line: cut, so that the
	 * next line starts on a line of its own */
	if (rundir_trim_torn(tp) > 0)
		warning("%s: a torn last line (a killed run) was cut away", tp);
	json_t *lines = rundir_read_jsonl(tp);
	free(tp);
	if (!lines)
		return -1;
	size_t i;
	json_t *l;
	json_array_foreach(lines, i, l) {
		if (json_integer_value(json_object_get(l, "step")) != (json_int_t)i + 1) {
			json_decref(lines);
			return error("%s/trajectory.jsonl: line %zu is not step %zu", c->dir, i + 1,
				     i + 1);
		}
		char *rp = step_path(c, (int)i + 1, "reply.json");
		json_t *rec = json_load_file(rp, 0, NULL);
		const char *text = json_string_value(json_object_get(rec, "text"));
		if (!text) {
			json_decref(rec);
			json_decref(lines);
			int rc = error("'%s' is missing or holds no text", rp);
			free(rp);
			return rc;
		}
		free(rp);
		add_turn(c, 1, *text ? text : "(no text)");
		add_turn(c, 0, json_str(l, "feedback", ""));
		json_decref(rec);
		account(c, l);
	}
	json_decref(lines);
	return 0;
}

/* the problem's folders (their stale temporary files removed), its whole
 * first prompt kept before the first request (issue 38, as generate keeps
 * its samples'), and the conversation so far; -1 with *fail */
static int conv_open(const struct agent *a, struct agent_conv *c, int *fail)
{
	c->best_speedup = NAN;
	c->dir = xstrfmt("%s/agent/%03d", a->run_dir, c->p->id);
	char *d1 = xstrfmt("%s/candidates/%03d", a->run_dir, c->p->id);
	char *d2 = xstrfmt("%s/replies/%03d", a->run_dir, c->p->id);
	int mk = mkdir_p(c->dir) < 0 || mkdir_p(d1) < 0 || mkdir_p(d2) < 0;
	if (!mk) {
		rundir_remove_stale(c->dir);
		rundir_remove_stale(d1);
		rundir_remove_stale(d2);
	}
	free(d1);
	free(d2);
	if (mk) {
		error("cannot create '%s': %s", c->dir, strerror(errno));
		*fail = PKB_EXIT_INPUT;
		return -1;
	}
	c->prompt_file = rundir_store_prompt(a->run_dir, c->pr.sha256, c->pr.template_sha256,
					     c->pr.system, c->pr.user);
	if (!c->prompt_file || load_conv(c) < 0) {
		*fail = PKB_EXIT_INPUT;
		return -1;
	}
	return 0;
}

void agent_conv_free(struct agent_conv *c)
{
	for (int i = 0; i < c->n_turns; i++)
		free(c->texts[i]);
	free(c->texts);
	free(c->turns);
	free(c->dir);
	free(c->prompt_file);
	prompt_free(&c->pr);
}

/* ---- the reply -------------------------------------------------------------- */

/* a request that got no usable reply: the exit status it ends the run
 * with, or 0 when the time budget ran out first (not a failure) */
static int request_failed(const struct agent *a, const struct agent_conv *c, int step,
			  double until, int rc, long status, const struct llm_http_buf *resp,
			  int attempts, const char *err)
{
	if (until > 0 && now_s() >= until - 0.5 && (rc < 0 || llm_http_retryable(status)))
		return 0;
	if (rc == 0 && !llm_http_retryable(status)) {
		error("%03d step %d: HTTP %ld from the %s API: %.300s", c->p->id, step, status,
		      a->prov->name, resp->s ? resp->s : "");
		llm_hint_status(status, &a->keyinfo);
		return PKB_EXIT_PROVIDER;
	}
	error("%03d step %d: no reply after %d attempts: %s", c->p->id, step, attempts, err);
	hint("run the same command again to go on from step %d", step);
	return PKB_EXIT_INCOMPLETE;
}

/* the record of a 200's reply (`tries`, the attempts that failed, goes
 * into it), or NULL when the reply does not parse (tries freed) */
static json_t *reply_record(const struct agent *a, const struct agent_conv *c, int step,
			    const struct llm_http_buf *resp, long status, double latency,
			    int attempts, json_t *tries)
{
	struct llm_reply r;
	json_t *doc = NULL;
	if (llm_parse(a->prov->api, resp->s ? resp->s : "", resp->len, &r, &doc) < 0) {
		error("%03d step %d: a malformed reply after %d attempts (%s)", c->p->id, step,
		      attempts, r.err);
		hint("run the same command again to ask again");
		json_decref(doc);
		json_decref(tries);
		return NULL;
	}
	char date[32], sha[65];
	rundir_utc_now(date, sizeof date);
	sha256_hex(r.text, strlen(r.text), sha);
	json_t *rec = json_pack("{s:i,s:s,s:i,s:s,s:s,s:s,s:i,s:f,s:i,s:s,s:b,s:I,s:I,s:s,s:s}",
				"problem", c->p->id, "name", c->p->name, "step", step, "model",
				a->model, "provider", a->prov->name, "date", date, "http_status",
				(int)status, "latency_s", latency, "attempts", attempts,
				"finish_reason", r.finish, "truncated", r.truncated, "tokens_in",
				(json_int_t)r.tokens_in, "tokens_out", (json_int_t)r.tokens_out,
				"reply_sha256", sha, "text", r.text);
	json_object_set_new(rec, "reply", doc ? json_incref(doc)
					      : json_stringn_nocheck(resp->s, resp->len));
	json_object_set_new(rec, "retried", tries);
	json_decref(doc);
	llm_reply_free(&r);
	return rec;
}

/* ask for step `step`'s reply (or read it back when a killed run got it);
 * its record, or NULL with *fail set (or 0: the time budget ran out) */
static json_t *get_reply(const struct agent *a, struct agent_conv *c, int step, double until,
			 int *fresh, int *fail)
{
	char *rp = step_path(c, step, "reply.json");
	json_t *rec = NULL;
	if (access(rp, F_OK) == 0) {
		rec = json_load_file(rp, 0, NULL);
		if (json_is_string(json_object_get(rec, "text"))) {
			free(rp);
			return rec;
		}
		json_decref(rec);
	}
	struct llm_request rq = { .prov = a->prov, .base_url = a->base_url, .model = a->model,
				  .key = a->key, .system = c->pr.system, .user = c->pr.user,
				  .turns = c->turns, .n_turns = c->n_turns,
				  .temperature = a->temperature, .max_tokens = a->max_tokens };
	json_t *body = llm_body(&rq);
	char *btxt = json_dumps(body, JSON_COMPACT | JSON_REAL_PRECISION(10));
	json_decref(body);
	struct llm_http_buf resp = { 0 };
	long status = 0;
	int attempts = 0;
	char err[512];
	double t0 = now_s();
	json_t *tries = json_array();
	int rc = llm_http_post(&rq, btxt, a->timeout_s, a->retries, a->backoff_s, until, &status,
			       &resp, &attempts, tries, err, sizeof err);
	double latency = now_s() - t0;
	free(btxt);
	rundir_redact(resp.s, &resp.len, a->key);
	*fail = 0;
	if (rc < 0 || status != 200) {
		*fail = request_failed(a, c, step, until, rc, status, &resp, attempts, err);
		json_decref(tries);
	} else if (!(rec = reply_record(a, c, step, &resp, status, latency, attempts, tries))) {
		*fail = PKB_EXIT_INCOMPLETE;
	} else if (rundir_write_json(rp, rec) < 0) {
		json_decref(rec);
		rec = NULL;
		*fail = PKB_EXIT_INPUT;
	} else {
		*fresh = 1;
	}
	free(resp.s);
	free(rp);
	return rec;
}

/* ---- one step --------------------------------------------------------------- */

/* one step as it goes */
struct step {
	int n;
	json_t *rec;              /* the reply's record */
	int fresh;                /* asked by this run (else read back from a killed one) */
	char *code;               /* the reply's file; NULL: none */
	char *cu;                 /* RUN/agent/NNN/step_N.cu */
	const char *verdict;      /* eval's outcome, or no_code, truncated */
	json_t *ev;               /* eval's record; NULL: nothing evaluated */
	struct result r;          /* ev read (result.h); result_none's when NULL */
	double eval_s;
	double speedup;           /* NaN: not a timed pass */
};

/* the reply's file, written and evaluated: s->verdict and s->ev; -1 with
 * *fail when the step cannot be recorded (it is evaluated again by the
 * next run) */
static int step_evaluate(const struct agent *a, const struct agent_conv *c, struct step *s,
			 int *fail)
{
	int truncated = json_is_true(json_object_get(s->rec, "truncated"));
	int blocks = 0;
	const char *ext = prompt_backend_ext(a->po.backend);   /* .cu, or .py (triton) */
	s->code = truncated ? NULL : llm_extract(json_str(s->rec, "text", ""), ext, a->block,
						 &blocks);
	s->verdict = truncated ? "truncated" : s->code ? NULL : "no_code";
	s->cu = step_path(c, s->n, ext);
	if (!s->code)
		return 0;
	if (rundir_write(s->cu, s->code, strlen(s->code)) < 0) {
		error("cannot write '%s': %s", s->cu, strerror(errno));
		*fail = PKB_EXIT_INPUT;
		return -1;
	}
	char why[1024];
	char *res = step_path(c, s->n, "eval.json"), *out = step_path(c, s->n, "out");
	char *log = step_path(c, s->n, "log");
	struct agent_eval_job j = { .p = c->p, .po = &a->po, .trials = a->trials, .step = s->n,
				    .run = a->run_dir, .cu = s->cu, .json = res, .out = out,
				    .log = log };
	s->ev = agent_eval_run(&a->ev, &j, &s->eval_s, &s->r, why, sizeof why);
	free(res);
	free(out);
	free(log);
	if (!s->ev) {
		error("%03d step %d: %s", c->p->id, s->n, why);
		hint("the step's output is in %s/step_%d.log; run again to evaluate it again",
		     c->dir, s->n);
		*fail = PKB_EXIT_ENV;
		return -1;
	}
	s->verdict = s->r.outcome;
	const char *msg = s->r.message ? s->r.message : "";
	/* no GPU there: no step can be evaluated, stop (the step is
	 * evaluated again by the next run) */
	if (!strcmp(s->verdict, "env_error")) {
		error("%03d step %d: the evaluation cannot run: %s", c->p->id, s->n, msg);
		*fail = PKB_EXIT_ENV;
		return -1;
	}
	/* a harness error is said, and the step is recorded: stopping
	 * would meet it again at the same step on every run */
	if (!strcmp(s->verdict, "internal_error"))
		warning("%03d step %d: pkb's evaluation failed: %s", c->p->id, s->n, msg);
	if (!isnan(s->r.speedup) && !strcmp(s->verdict, "pass"))
		s->speedup = s->r.speedup;
	return 0;
}

/* the step's trajectory line as the accounting sees it (the feedback,
 * which names the best so far including this step, comes after) */
static json_t *step_line(const struct agent *a, const struct agent_conv *c,
			 const struct step *s, double seconds)
{
	long long tin = json_integer_value(json_object_get(s->rec, "tokens_in"));
	long long tout = json_integer_value(json_object_get(s->rec, "tokens_out"));
	json_t *line = json_pack("{s:i,s:I,s:I,s:I,s:s,s:s,s:f,s:f,s:f,s:i}", "step", s->n,
				 "tokens_in", (json_int_t)tin, "tokens_out", (json_int_t)tout,
				 "tokens_total", (json_int_t)(c->tokens + (tin > 0 ? tin : 0) +
							     (tout > 0 ? tout : 0)),
				 "reply_sha256", json_str(s->rec, "reply_sha256", ""), "verdict",
				 s->verdict, "seconds", seconds, "model_s",
				 json_number_value(json_object_get(s->rec, "latency_s")), "eval_s",
				 s->eval_s, "attempts",
				 (int)json_integer_value(json_object_get(s->rec, "attempts")));
	json_object_set_new(line, "speedup", isnan(s->speedup) ? json_null()
							       : json_real(s->speedup));
	json_object_set_new(line, "message", json_string(s->r.message ? s->r.message : ""));
	json_object_set_new(line, "candidate", s->code
			    ? json_string(s->cu + strlen(a->run_dir) + 1) : json_null());
	return line;
}

/* the message that answers the step (after account: the best so far
 * includes it) */
static char *step_feedback(const struct agent *a, const struct agent_conv *c,
			   const struct step *s)
{
	struct agent_feedback fb = {
		.step = s->n, .verdict = s->verdict, .cand_path = s->cu,
		.tokens_out = (int)json_integer_value(json_object_get(s->rec, "tokens_out")),
		.backend = a->po.backend, .hw = a->po.hw, .best_step = c->best_step,
		.best_speedup = c->best_speedup, .steps_left = a->steps - s->n,
		.target = a->target,
	};
	return agent_feedback_build(&fb, s->ev ? &s->r : NULL);
}

/* the step taken in: its line appended (last: it marks the step done),
 * the answer, the conversation's two new turns; -1 with *fail */
static int step_record(const struct agent *a, struct agent_conv *c, const struct step *s,
		       double t0, int *fail)
{
	/* a reply read back from a killed run counts its latency, not the
	 * time since this run started */
	double seconds = s->fresh ? now_s() - t0
			 : json_number_value(json_object_get(s->rec, "latency_s")) + s->eval_s;
	json_t *line = step_line(a, c, s, seconds);
	account(c, line);
	char *fb = step_feedback(a, c, s);
	json_object_set_new(line, "best_step", c->best_step ? json_integer(c->best_step) : json_null());
	json_object_set_new(line, "feedback", json_string(fb));
	char date[32];
	rundir_utc_now(date, sizeof date);
	json_object_set_new(line, "date", json_string(date));
	char *txt = json_dumps(line, JSON_COMPACT | JSON_REAL_PRECISION(10));
	char *tp = xstrfmt("%s/trajectory.jsonl", c->dir);
	int rc = rundir_append_line(tp, txt);
	free(tp);
	free(txt);
	if (rc == 0)
		rc = write_answer(a, c, NULL);
	if (rc == 0) {
		/* the APIs refuse an empty assistant turn (a reply cut
		 * before any text) */
		const char *text = json_str(s->rec, "text", "");
		add_turn(c, 1, *text ? text : "(no text)");
		add_turn(c, 0, fb);
		char sps[32] = "";
		if (!isnan(s->speedup))
			snprintf(sps, sizeof sps, " %.3fx,", s->speedup);
		const char *msg = s->r.message && strcmp(s->verdict, "pass") ? s->r.message : "";
		agent_progress(a, "%03d step %d/%d: %s,%s %lld tokens, %.1f s%s%s", c->p->id,
			       s->n, a->steps, s->verdict, sps, c->tokens, seconds,
			       *msg ? ": " : "", msg);
	} else {
		*fail = PKB_EXIT_INPUT;
	}
	free(fb);
	json_decref(line);
	return rc == 0 ? 0 : -1;
}

/* One step: the reply, its file, the evaluation, the feedback, the line.
 * 0 (done), 1 (the time budget ran out first), or -1 with *fail. */
static int do_step(const struct agent *a, struct agent_conv *c, int *fail)
{
	struct step s = { .n = c->step + 1, .speedup = NAN };
	double t0 = now_s();
	double until = a->budget_s > 0 ? t0 + (a->budget_s - c->seconds) : 0;
	s.rec = get_reply(a, c, s.n, until, &s.fresh, fail);
	if (!s.rec)
		return *fail ? -1 : 1;
	result_none(&s.r);
	int rc = step_evaluate(a, c, &s, fail);
	if (rc == 0)
		rc = step_record(a, c, &s, t0, fail);
	result_free(&s.r);
	json_decref(s.ev);
	json_decref(s.rec);
	free(s.code);
	free(s.cu);
	return rc;
}

int agent_loop_problem(const struct agent *a, struct agent_conv *c, int *fail)
{
	if (conv_open(a, c, fail) < 0)
		return -1;
	if (c->step)
		agent_progress(a, "%03d: going on after step %d (%lld tokens, %.1f s)", c->p->id,
			       c->step, c->tokens, c->seconds);
	enum agent_stop s;
	int r = 0;
	while ((s = stop_reason(a, c)) == AGENT_STOP_NONE) {
		r = do_step(a, c, fail);
		if (r)
			break;
	}
	if (r < 0)
		return -1;
	if (r > 0)
		s = AGENT_STOP_SECONDS;
	if (write_answer(a, c, agent_stop_names[s]) < 0) {
		*fail = PKB_EXIT_INPUT;
		return -1;
	}
	return (int)s;
}
