/*
 * cmd_agent.c -- `pkb agent SPEC`: for each problem, a conversation with a
 * model in which every reply is one whole candidate file and every answer
 * is what pkb eval found in it (docs/AGENT.md): nvcc's first errors, the
 * symbol scan's refusal and the backend's rule, the wrong output's worst
 * element and look, each rank's phase, or the speedup, per-rank times and
 * roofline. The best correct candidate is kept; the loop stops at a step,
 * time or token budget or a target speedup.
 *
 * The model's text only ever becomes the bytes of a candidate file, which
 * runs inside pkb eval's rank processes (symbol scan, deadlines, process
 * group kill). Nothing it writes is a command, a path or an argument.
 *
 * The run directory is generate's (candidates/NNN/sample_0.cu: the agent's
 * answer, replies/NNN/sample_0.json) plus agent/NNN/: step_S.reply.json
 * (written as the reply arrives), step_S.cu, step_S.eval.json, the eval's
 * output, and trajectory.jsonl, one line per finished step, appended last:
 * a killed run goes on from the step after its last line.
 */
#define _GNU_SOURCE
#include "cmds.h"
#include "exitcode.h"
#include "job.h"       /* defines: job_opt, job_opts_argv: eval's options */
#include "llm.h"
#include "llm_http.h"
#include "loader.h"    /* defines: loader_backend_valid, loader_backend_rule */
#include "problem.h"
#include "prompt.h"    /* defines: prompt_build */
#include "rundir.h"
#include "spec.h"
#include "util.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wordexp.h>

static const char head[] =
"usage: pkb agent SPEC --model M --provider P [--steps N] [--budget-s S]\n"
"                 [--budget-tokens T] [--target-speedup X] [--run DIR]\n"
"                 [--eval-cmd TEMPLATE] [options]\n"
"\n"
"For each problem of SPEC (an id, ids and ranges, names, a category), a\n"
"conversation with model M: each reply is a whole candidate file, each answer\n"
"what pkb eval found in it. The best correct candidate is kept\n"
"(docs/AGENT.md). Run the same command again to go on after a kill.\n"
"\n";
static const char tail[] =
"\n"
"The instance (--backend ... --template) is also passed to eval, with --hw\n"
"the machine the prompt describes (by default this machine's GPUs), and so\n"
"are -t, --iters ... --no-sandbox, checked as eval checks them.\n"
"\n"
"exit status: 0 a correct candidate for every problem, 12 not for some,\n"
"10 the API refused, 11 a request failed after its retries (run again),\n"
"9 the evaluation gave no result (docs/EXIT_CODES.md)\n";

enum { O_STEPS = OPT_JOB_END, O_BUDGET_S, O_BUDGET_T, O_TARGET, O_RUN, O_EVALCMD, O_EVALTO,
       O_FORCE };
static const struct opt agent_opts[] = {
	{ O_STEPS, "steps", "N", "replies per problem, at most (default 8)" },
	{ O_BUDGET_S, "budget-s", "S", "seconds per problem (model and evaluation), at most" },
	{ O_BUDGET_T, "budget-tokens", "T", "tokens per problem (in + out, every request), at most" },
	{ O_TARGET, "target-speedup", "X", "stop at a correct candidate this much faster" },
	{ O_RUN, "run", "DIR", "the run directory (default\n"
			       "runs/agent-<provider>-<model>)" },
	{ O_EVALCMD, "eval-cmd", "TEMPLATE", "evaluate with this command instead of a local\n"
					     "`pkb eval`: its words (split as the shell would, no\n"
					     "command substitution) with {id} {name} {file} {json}\n"
					     "{gpus} {m} {n} {dtype} {trials} {backend} {step} {run}\n"
					     "replaced; the candidate is also on its stdin; the\n"
					     "result is eval's JSON, read from {json} or stdout" },
	{ O_EVALTO, "eval-timeout", "S", "kill an evaluation after S seconds (default 1800)" },
	{ 't', "trials", "K", "trials per evaluation (default 3)" },
	{ OPT_ITERS, "iters", "N", "timed calls per evaluation (eval's default: 100)" },
	{ OPT_WARMUP, "warmup", "N", "warmup calls per evaluation (eval's default: 500)" },
	{ OPT_TIMING, "timing", "MODE", "passed to eval: warm (default), cold or graph" },
	{ OPT_DEADLINE, "deadline", "K=S", "passed to eval (repeatable)" },
	{ OPT_DEVICE_TIMEOUT, "device-timeout", "MS", "passed to eval" },
	{ OPT_ARCH, "arch", "SM", "passed to eval: nvcc's target" },
	{ OPT_NO_SANDBOX, "no-sandbox", NULL, "passed to eval (trusted candidates only)" },
	{ O_FORCE, "force", NULL, "go on in a run whose run.json has other arguments" },
	{ 'q', "quiet", NULL, "no progress on stderr" },
	OPTS_END,
};
static const struct opt *const tables[] = { llm_opts_table, agent_opts, prompt_opts_table, NULL };

/* ---- the run ---------------------------------------------------------------- */

struct agent {
	const struct llm_provider *prov;
	const char *model, *base_url, *run_dir, *key;
	struct llm_key keyinfo;
	int max_tokens, retries, block, quiet;
	double temperature, timeout_s, backoff_s;
	/* budgets, each per problem; 0: none */
	int steps;
	double budget_s, target;
	long long budget_tokens;
	/* the evaluation: template words, {name} marked as \1name\2 */
	char **words;
	int n_words, json_word;   /* json_word: {json} is used (read the result there) */
	const char *eval_cmd;     /* NULL: the local pkb eval */
	double eval_timeout_s;
	struct prompt_opts po;
	const char *hw_eval;      /* --hw when given */
	int trials, iters, warmup;   /* as given (iters, warmup: 0 when not), for run.json */
	/* eval's options, checked by eval's own table (job_opt) and written
	 * by job_opts_argv into the local evaluation's command line */
	struct job_opts eval;
	int eval_only;            /* an option --eval-cmd's template must carry itself */
	char *abs_run;
};

/* one problem's conversation */
struct conv {
	const struct pkb_problem *p;
	struct prompt pr;
	char *prompt_file;        /* prompts/SHA.json in the run: the whole prompt */
	char *dir;                /* RUN/agent/NNN */
	struct llm_turn *turns;   /* assistant, user, ... */
	char **texts;             /* owned strings of turns */
	int n_turns;
	int step;                 /* finished steps */
	long long tokens;
	double seconds, model_s;
	int best_step;            /* 0: none correct */
	double best_speedup;      /* NaN: correct, not timed */
	int answer_step;          /* the step whose file is the answer: best, else the last with code */
	char last_verdict[32];
	int attempts;
};

enum stop { STOP_NONE, STOP_STEPS, STOP_SECONDS, STOP_TOKENS, STOP_TARGET };
static const char *const stop_names[] = { NULL, "steps", "budget_s", "budget_tokens",
					  "target_speedup" };

/* what ends a run early: an API that refuses (10), a request that failed
 * (11), an evaluation that gave no result (9), a file that cannot be
 * written (1) */
struct failure {
	int code;
};

static char *step_path(const struct conv *c, int step, const char *what)
{
	return xstrfmt("%s/step_%d.%s", c->dir, step, what);
}

static void add_turn(struct conv *c, int assistant, const char *text)
{
	c->turns = xrealloc(c->turns, (size_t)(c->n_turns + 1) * sizeof *c->turns);
	c->texts = xrealloc(c->texts, (size_t)(c->n_turns + 1) * sizeof *c->texts);
	c->texts[c->n_turns] = xstrdup(text);
	c->turns[c->n_turns] = (struct llm_turn){ .assistant = assistant,
						  .text = c->texts[c->n_turns] };
	c->n_turns++;
}

static enum stop stop_reason(const struct agent *a, const struct conv *c)
{
	if (a->target > 0 && c->best_step && c->best_speedup >= a->target)
		return STOP_TARGET;
	if (c->step >= a->steps)
		return STOP_STEPS;
	if (a->budget_tokens > 0 && c->tokens >= a->budget_tokens)
		return STOP_TOKENS;
	if (a->budget_s > 0 && c->seconds >= a->budget_s)
		return STOP_SECONDS;
	return STOP_NONE;
}

/* ---- the evaluation command ------------------------------------------------- */

static const char *const slots[] = { "id", "name", "file", "json", "gpus", "m", "n", "dtype",
				     "trials", "backend", "step", "run", "hw" };

/* {name} -> \1name\2, so that the shell-word splitter leaves it alone;
 * an unknown {slot} is an error */
static char *mark_slots(const char *tmpl, char *err, size_t n)
{
	size_t cap = strlen(tmpl) + 1, len = 0;
	char *out = xmalloc(cap);
	for (const char *p = tmpl; *p; p++) {
		if (*p == '\1' || *p == '\2') {
			snprintf(err, n, "a control character in the template");
			free(out);
			return NULL;
		}
		if (*p == '{') {
			const char *e = strchr(p, '}');
			size_t k = 0;
			for (; e && k < ARRAY_SIZE(slots); k++)
				if ((size_t)(e - p - 1) == strlen(slots[k]) &&
				    !strncmp(p + 1, slots[k], strlen(slots[k])))
					break;
			if (!e || k == ARRAY_SIZE(slots)) {
				snprintf(err, n, "unknown slot '%.*s' (known: {id} {name} {file} {json} "
					 "{gpus} {m} {n} {dtype} {trials} {backend} {step} {run} {hw})",
					 e ? (int)(e - p + 1) : 1, p);
				free(out);
				return NULL;
			}
			out[len++] = '\1';
			memcpy(out + len, slots[k], strlen(slots[k]));
			len += strlen(slots[k]);
			out[len++] = '\2';
			p = e;
			continue;
		}
		out[len++] = *p;
	}
	out[len] = 0;
	return out;
}

/* The user's template as words (wordexp(3): quotes, escapes and $VAR as the
 * shell has them; WRDE_NOCMD refuses $(...) and backquotes). The template
 * is the user's; the model's text never reaches it. */
static int split_template(struct agent *a, const char *tmpl)
{
	char err[256];
	char *marked = mark_slots(tmpl, err, sizeof err);
	if (!marked)
		return error("--eval-cmd: %s", err);
	wordexp_t we;
	int rc = wordexp(marked, &we, WRDE_NOCMD);
	free(marked);
	if (rc) {
		const char *why = rc == WRDE_BADCHAR ? "an unquoted | & ; < > ( ) { } or newline"
			: rc == WRDE_CMDSUB ? "command substitution, which is not allowed"
			: rc == WRDE_SYNTAX ? "a syntax error (an unclosed quote?)"
			: "it cannot be split";
		return error("--eval-cmd: %s", why);
	}
	if (!we.we_wordc) {
		wordfree(&we);
		return error("--eval-cmd: the template is empty");
	}
	a->n_words = (int)we.we_wordc;
	a->words = xcalloc((size_t)a->n_words + 1, sizeof *a->words);
	for (int i = 0; i < a->n_words; i++) {
		a->words[i] = xstrdup(we.we_wordv[i]);
		if (strstr(a->words[i], "\1json\2"))
			a->json_word = 1;
	}
	wordfree(&we);
	return 0;
}

/* The local evaluation, in the same form: pkb eval with eval's options as
 * job_opts_argv writes them (the instance, --hw the machine the prompt
 * described, so that the feedback's roofline speaks of it too: issue 38),
 * the id, file and result file as slots. */
static void local_template(struct agent *a)
{
	struct strvec w = STRVEC_INIT;
	strvec_push(&w, pkb_self_exe());
	strvec_push(&w, "eval");
	strvec_push(&w, "\1id\2");
	strvec_push(&w, "\1file\2");
	struct job_opts o = a->eval;
	o.hw = a->po.hw;
	o.measure_perf = 1;
	o.quiet = 1;
	o.json_path = "\1json\2";
	job_opts_argv(&o, &w);
	a->n_words = (int)w.n;
	a->words = w.v;
	a->json_word = 1;
}

/* one word with its slots filled: a value is put in as it is, never split
 * or interpreted again */
static char *fill_word(const char *w, const char *const *vals)
{
	char *out = NULL;
	size_t len = 0;
	for (const char *p = w; *p;) {
		const char *piece = p;
		size_t plen = 1;
		if (*p == '\1') {
			const char *e = strchr(p, '\2');
			for (size_t k = 0; e && k < ARRAY_SIZE(slots); k++)
				if ((size_t)(e - p - 1) == strlen(slots[k]) &&
				    !strncmp(p + 1, slots[k], strlen(slots[k]))) {
					piece = vals[k];
					plen = strlen(vals[k]);
					p = e;
					break;
				}
		}
		out = xrealloc(out, len + plen + 1);
		memcpy(out + len, piece, plen);
		len += plen;
		p++;
	}
	if (!out)
		out = xstrdup("");
	out[len] = 0;
	return out;
}

static char *abs_path(const char *p)
{
	if (p[0] == '/')
		return xstrdup(p);
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof cwd))
		return xstrdup(p);
	return xstrfmt("%s/%s", cwd, p);
}

/* the tail of a log, for a message */
static void log_tail(const char *path, char *buf, size_t n)
{
	size_t len;
	char *t = read_file(path, &len);
	buf[0] = 0;
	if (!t)
		return;
	const char *s = len > 600 ? t + len - 600 : t;
	snprintf(buf, n, "%s", s);
	for (char *p = buf; *p; p++)
		if (*p == '\n' && p[1])
			*p = ' ';
	free(t);
}

/* Run the evaluation of step `step`'s file; its result (eval's JSON) or
 * NULL with why (no result: the command failed, timed out, wrote none). */
static json_t *evaluate(const struct agent *a, const struct conv *c, int step, double *secs,
			char *why, size_t n)
{
	char *cu = step_path(c, step, "cu"), *res = step_path(c, step, "eval.json");
	char *out = step_path(c, step, "out"), *log = step_path(c, step, "log");
	char *acu = abs_path(cu), *ares = abs_path(res);
	char id[16], gpus[16], m[32], nn[32], trials[16], st[16];
	snprintf(id, sizeof id, "%d", c->p->id);
	snprintf(gpus, sizeof gpus, "%d", a->po.world);
	snprintf(m, sizeof m, "%lld", a->po.m);
	snprintf(nn, sizeof nn, "%lld", a->po.n);
	snprintf(trials, sizeof trials, "%d", a->trials);
	snprintf(st, sizeof st, "%d", step);
	char *name = xstrfmt("%03d_%s", c->p->id, c->p->name);
	const char *vals[] = { id, name, acu, ares, gpus, m, nn, a->po.dtype, trials,
			       a->po.backend, st, a->abs_run, a->po.hw };
	char **argv = xcalloc((size_t)a->n_words + 1, sizeof *argv);
	for (int i = 0; i < a->n_words; i++)
		argv[i] = fill_word(a->words[i], vals);
	unlink(res);
	double t0 = now_s();
	/* the local eval writes its --json file; its stdout (the verdict
	 * line) goes to the log with its stderr */
	int rc = run_redirected(argv, acu, a->eval_cmd ? out : log, log, a->eval_timeout_s);
	*secs = now_s() - t0;
	json_t *r = NULL;
	if (rc == -2) {
		snprintf(why, n, "the evaluation passed its %.0f s limit (--eval-timeout)",
			 a->eval_timeout_s);
	} else if (rc == -1) {
		snprintf(why, n, "cannot run '%s': %s", argv[0], strerror(errno));
	} else {
		size_t len = 0;
		char *txt = read_file(a->json_word ? res : out, &len);
		/* eval's JSON comes first on stdout (the verdict line follows);
		 * whatever a remote shell printed before its first '{' line is
		 * skipped */
		const char *s = txt;
		while (s && *s && *s != '{') {
			const char *nl = strchr(s, '\n');
			s = nl ? nl + 1 : s + strlen(s);
		}
		if (s && *s)
			r = json_loads(s, JSON_DISABLE_EOF_CHECK, NULL);
		free(txt);
		if (!json_is_object(r) || !json_is_string(json_object_get(r, "outcome"))) {
			json_decref(r);
			r = NULL;
			char last[700];
			log_tail(log, last, sizeof last);
			snprintf(why, n, "the evaluation (exit %d) gave no result%s%s", rc,
				 last[0] ? ": " : "", last);
		} else if (!a->json_word) {
			/* keep what came back beside the local kind */
			rundir_write_json(res, r);
		}
	}
	for (int i = 0; i < a->n_words; i++)
		free(argv[i]);
	free(argv);
	free(name);
	free(cu);
	free(res);
	free(out);
	free(log);
	free(acu);
	free(ares);
	return r;
}

/* ---- feedback: what a kernel engineer wants to see -------------------------- */

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

/* per failing output of the first failing trial: which output, which rank,
 * the worst element, how many wrong, and its look */
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

static void perf_details(const struct agent *a, struct strbuf *b, json_t *ev)
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
		if (strcmp(jstr(rl, "hw"), a->po.hw))
			warning("the evaluation's roofline is on %s, the prompt described %s: put "
				"--hw {hw} in --eval-cmd", jstr(rl, "hw"), a->po.hw);
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

/* The message that answers step `step`: the verdict and its details, the
 * best so far, what is left. */
static char *feedback(const struct agent *a, const struct conv *c, int step, const char *verdict,
		      json_t *ev, const char *cand_path, int tokens_out)
{
	struct strbuf b = { 0 };
	strbuf_addf(&b, "Step %d: %s.", step, verdict);
	const char *msg = ev ? jstr(ev, "message") : "";
	if (!strcmp(verdict, "no_code")) {
		strbuf_addf(&b, " Your reply had no fenced code block: send the whole .cu file in one "
		       "```cuda block.\n");
	} else if (!strcmp(verdict, "truncated")) {
		strbuf_addf(&b, " Your reply stopped at the token limit (%d tokens) before the file was "
		       "complete: send the whole file again, shorter.\n", tokens_out);
	} else if (!strcmp(verdict, "compile_error")) {
		json_t *co = json_object_get(ev, "compiler_output");
		strbuf_addf(&b, " nvcc's first errors:\n");
		trim_compiler(&b, json_is_string(co) ? json_string_value(co) : msg, cand_path);
	} else if (!strcmp(verdict, "load_refused")) {
		strbuf_addf(&b, " The symbol scan refused the compiled file: %s.\nThe %s backend's rule: "
		       "%s.\n", msg, a->po.backend, loader_backend_rule(a->po.backend));
	} else if (!strcmp(verdict, "mismatch")) {
		/* eval's line when the records say no more (a timed call's
		 * output, an input written) */
		struct strbuf d = { 0 };
		if (mismatch_details(&d, ev))
			strbuf_addf(&b, "\n%s", d.s);
		else
			strbuf_addf(&b, " %s\n", msg);
		free(d.s);
	} else if (!strcmp(verdict, "runtime_error") || !strcmp(verdict, "timeout")) {
		strbuf_addf(&b, " %s\nWhere each rank was:\n", msg);
		rank_phases(&b, ev);
	} else if (!strcmp(verdict, "flagged")) {
		strbuf_addf(&b, " Correct, but the time is not trusted, so it does not count: %s\n", msg);
	} else if (!strcmp(verdict, "pass")) {
		strbuf_addf(&b, " Correct: %s.\n", msg);
		perf_details(a, &b, ev);
	} else if (!strcmp(verdict, "internal_error")) {
		strbuf_addf(&b, " pkb's evaluation failed (a harness error, not necessarily your "
		       "file's): %s\n", msg);
	} else {
		strbuf_addf(&b, " %s\n", msg);
	}
	if (!c->best_step)
		strbuf_addf(&b, "No correct candidate yet");
	else if (isnan(c->best_speedup))
		strbuf_addf(&b, "Best so far: step %d (not timed)", c->best_step);
	else
		strbuf_addf(&b, "Best so far: step %d, %.3fx", c->best_step, c->best_speedup);
	strbuf_addf(&b, ". Steps left: %d.", a->steps - step);
	if (a->target > 0)
		strbuf_addf(&b, " Target: %.2fx.", a->target);
	strbuf_addf(&b, "\nReply with the whole improved .cu file in one ```cuda block.\n");
	return b.s;
}

/* ---- one problem's files ---------------------------------------------------- */

/* the agent's answer as generate's sample 0: the best correct step's file
 * (else the last with code), then the reply record that marks it */
static int write_answer(const struct agent *a, struct conv *c, const char *stop)
{
	char *cand = xstrfmt("%s/candidates/%03d/sample_0.cu", a->run_dir, c->p->id);
	char *rep = xstrfmt("%s/replies/%03d/sample_0.json", a->run_dir, c->p->id);
	int rc = 0;
	if (!c->answer_step && !stop)
		goto out;
	if (c->answer_step) {
		char *src = step_path(c, c->answer_step, "cu");
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
	rc = rundir_write_json(rep, rec);
	json_decref(rec);
out:
	free(cand);
	free(rep);
	return rc;
}

/* take in one finished step's line (a fresh one or one read back) */
static void account(struct conv *c, json_t *line)
{
	c->step = (int)json_integer_value(json_object_get(line, "step"));
	c->tokens = json_integer_value(json_object_get(line, "tokens_total"));
	c->seconds += json_number_value(json_object_get(line, "seconds"));
	c->model_s += json_number_value(json_object_get(line, "model_s"));
	c->attempts += (int)json_integer_value(json_object_get(line, "attempts"));
	const char *v = jstr(line, "verdict");
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
static int load_conv(struct conv *c)
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
		add_turn(c, 0, jstr(l, "feedback"));
		json_decref(rec);
		account(c, l);
	}
	json_decref(lines);
	return 0;
}

/* ---- one step --------------------------------------------------------------- */

/* ask for step `step`'s reply (or read it back when a killed run got it);
 * its record, or NULL with f->code set (or 0: the time budget ran out) */
static json_t *get_reply(const struct agent *a, struct conv *c, int step, double until,
			 int *fresh, struct failure *f)
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
	f->code = 0;
	if (rc < 0 || status != 200) {
		if (until > 0 && now_s() >= until - 0.5 && (rc < 0 || llm_http_retryable(status))) {
			f->code = 0;   /* the time budget, not a failure */
		} else if (rc == 0 && !llm_http_retryable(status)) {
			error("%03d step %d: HTTP %ld from the %s API: %.300s", c->p->id, step, status,
			      a->prov->name, resp.s ? resp.s : "");
			llm_hint_status(status, &a->keyinfo);
			f->code = PKB_EXIT_PROVIDER;
		} else {
			error("%03d step %d: no reply after %d attempts: %s", c->p->id, step, attempts,
			      err);
			hint("run the same command again to go on from step %d", step);
			f->code = PKB_EXIT_INCOMPLETE;
		}
		free(resp.s);
		free(rp);
		json_decref(tries);
		return NULL;
	}
	struct llm_reply r;
	json_t *doc = NULL;
	if (llm_parse(a->prov->api, resp.s ? resp.s : "", resp.len, &r, &doc) < 0) {
		error("%03d step %d: a malformed reply after %d attempts (%s)", c->p->id, step,
		      attempts, r.err);
		hint("run the same command again to ask again");
		json_decref(doc);
		json_decref(tries);
		free(resp.s);
		free(rp);
		f->code = PKB_EXIT_INCOMPLETE;
		return NULL;
	}
	char date[32], sha[65];
	rundir_utc_now(date, sizeof date);
	sha256_hex(r.text, strlen(r.text), sha);
	rec = json_pack("{s:i,s:s,s:i,s:s,s:s,s:s,s:i,s:f,s:i,s:s,s:b,s:I,s:I,s:s,s:s}", "problem",
			c->p->id, "name", c->p->name, "step", step, "model", a->model, "provider",
			a->prov->name, "date", date, "http_status", (int)status, "latency_s",
			latency, "attempts", attempts, "finish_reason", r.finish, "truncated",
			r.truncated, "tokens_in", (json_int_t)r.tokens_in, "tokens_out",
			(json_int_t)r.tokens_out, "reply_sha256", sha, "text", r.text);
	json_object_set_new(rec, "reply", doc ? json_incref(doc)
					      : json_stringn_nocheck(resp.s, resp.len));
	json_object_set_new(rec, "retried", tries);
	json_decref(doc);
	llm_reply_free(&r);
	free(resp.s);
	if (rundir_write_json(rp, rec) < 0) {
		json_decref(rec);
		free(rp);
		f->code = PKB_EXIT_INPUT;
		return NULL;
	}
	free(rp);
	*fresh = 1;
	return rec;
}

static void progress(const struct agent *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void progress(const struct agent *a, const char *fmt, ...)
{
	if (a->quiet)
		return;
	va_list ap;
	va_start(ap, fmt);
	fputs("agent: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* One step: the reply, its file, the evaluation, the feedback, the line.
 * 0 (done), 1 (the time budget ran out first), or -1 with f->code. */
static int do_step(const struct agent *a, struct conv *c, struct failure *f)
{
	int step = c->step + 1;
	double t0 = now_s();
	double until = a->budget_s > 0 ? t0 + (a->budget_s - c->seconds) : 0;
	int fresh = 0;
	json_t *rec = get_reply(a, c, step, until, &fresh, f);
	if (!rec)
		return f->code ? -1 : 1;
	const char *text = jstr(rec, "text");
	long long tin = json_integer_value(json_object_get(rec, "tokens_in"));
	long long tout = json_integer_value(json_object_get(rec, "tokens_out"));
	double model_s = json_number_value(json_object_get(rec, "latency_s"));
	int attempts = (int)json_integer_value(json_object_get(rec, "attempts"));
	int blocks = 0;
	char *code = json_is_true(json_object_get(rec, "truncated")) ? NULL
		   : llm_extract(text, a->block, &blocks);
	const char *verdict = json_is_true(json_object_get(rec, "truncated")) ? "truncated"
			    : code ? NULL : "no_code";
	char *cu = step_path(c, step, "cu");
	json_t *ev = NULL;
	double eval_s = 0;
	if (code) {
		if (rundir_write(cu, code, strlen(code)) < 0) {
			error("cannot write '%s': %s", cu, strerror(errno));
			f->code = PKB_EXIT_INPUT;
			goto fail;
		}
		char why[1024];
		ev = evaluate(a, c, step, &eval_s, why, sizeof why);
		if (!ev) {
			error("%03d step %d: %s", c->p->id, step, why);
			hint("the step's output is in %s/step_%d.log; run again to evaluate it again",
			     c->dir, step);
			f->code = PKB_EXIT_ENV;
			goto fail;
		}
		verdict = jstr(ev, "outcome");
		/* no GPU there: no step can be evaluated, stop (the step is
		 * evaluated again by the next run) */
		if (!strcmp(verdict, "env_error")) {
			error("%03d step %d: the evaluation cannot run: %s", c->p->id, step,
			      jstr(ev, "message"));
			f->code = PKB_EXIT_ENV;
			goto fail;
		}
		/* a harness error is said, and the step is recorded: stopping
		 * would meet it again at the same step on every run */
		if (!strcmp(verdict, "internal_error"))
			warning("%03d step %d: pkb's evaluation failed: %s", c->p->id, step,
				jstr(ev, "message"));
	}
	json_t *sp = ev ? json_object_get(ev, "speedup") : NULL;
	double speedup = json_is_number(sp) && !strcmp(verdict, "pass") ? json_number_value(sp) : NAN;
	/* a reply read back from a killed run counts its latency, not the
	 * time since this run started */
	double seconds = fresh ? now_s() - t0 : model_s + eval_s;
	/* the line first as the accounting sees it, then the feedback, which
	 * names the best so far including this step */
	json_t *line = json_pack("{s:i,s:I,s:I,s:I,s:s,s:s,s:f,s:f,s:f,s:i}", "step", step,
				 "tokens_in", (json_int_t)tin, "tokens_out", (json_int_t)tout,
				 "tokens_total", (json_int_t)(c->tokens + (tin > 0 ? tin : 0) +
							     (tout > 0 ? tout : 0)),
				 "reply_sha256", jstr(rec, "reply_sha256"), "verdict", verdict,
				 "seconds", seconds, "model_s", model_s, "eval_s", eval_s,
				 "attempts", attempts);
	json_object_set_new(line, "speedup", isnan(speedup) ? json_null() : json_real(speedup));
	json_object_set_new(line, "message", json_string(ev ? jstr(ev, "message") : ""));
	json_object_set_new(line, "candidate", code ? json_string(cu + strlen(a->run_dir) + 1)
						    : json_null());
	account(c, line);
	char *fb = feedback(a, c, step, verdict, ev, cu, (int)tout);
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
		add_turn(c, 1, *text ? text : "(no text)");
		add_turn(c, 0, fb);
		char sps[32] = "";
		if (!isnan(speedup))
			snprintf(sps, sizeof sps, " %.3fx,", speedup);
		progress(a, "%03d step %d/%d: %s,%s %lld tokens, %.1f s%s%s", c->p->id, step,
			 a->steps, verdict, sps, c->tokens, seconds,
			 ev && *jstr(ev, "message") && strcmp(verdict, "pass") ? ": " : "",
			 ev && strcmp(verdict, "pass") ? jstr(ev, "message") : "");
	} else {
		f->code = PKB_EXIT_INPUT;
	}
	free(fb);
	json_decref(line);
	json_decref(ev);
	json_decref(rec);
	free(code);
	free(cu);
	return rc == 0 ? 0 : -1;
fail:
	json_decref(ev);
	json_decref(rec);
	free(code);
	free(cu);
	return -1;
}

static void conv_free(struct conv *c)
{
	for (int i = 0; i < c->n_turns; i++)
		free(c->texts[i]);
	free(c->texts);
	free(c->turns);
	free(c->dir);
	free(c->prompt_file);
	prompt_free(&c->pr);
}

/* ---- run.json --------------------------------------------------------------- */

static json_t *run_args(const struct agent *a, const char *spec, const struct pkb_problem **ps,
			const struct prompt *prompts, int np, const char *block)
{
	json_t *ids = json_array(), *hashes = json_object();
	for (int i = 0; i < np; i++) {
		char id[8];
		snprintf(id, sizeof id, "%03d", ps[i]->id);
		json_array_append_new(ids, json_integer(ps[i]->id));
		json_object_set_new(hashes, id, json_string(prompts[i].sha256));
	}
	const char *tpl = prompts[0].template_path;
	size_t rl = strlen(pkb_root());
	if (!strncmp(tpl, pkb_root(), rl) && tpl[rl] == '/')
		tpl += rl + 1;
	json_t *args = json_pack(
		"{s:s,s:s,s:s,s:s,s:o,s:i,s:i,s:s,s:s,s:i,s:I,s:I,s:s,s:s,s:s,s:s,s:o,s:i,s:i,s:i}",
		"mode", "agent", "model", a->model, "provider", a->prov->name, "problems_spec", spec, "problems", ids, "k", 1, "max_tokens",
		a->max_tokens, "block", block, "backend", a->po.backend, "world", a->po.world, "m",
		(json_int_t)a->po.m, "n", (json_int_t)a->po.n, "dtype", a->po.dtype, "hw", a->po.hw,
		"template", tpl, "template_sha256", prompts[0].template_sha256, "prompt_sha256",
		hashes, "trials", a->trials, "iters", a->iters, "warmup", a->warmup);
	/* a timing mode is the run's as the counts are; said only when given,
	 * so that the args of runs before it stay equal */
	if (a->eval.timing)
		json_object_set_new(args, "timing", json_string(a->eval.timing));
	json_object_set_new(args, "temperature",
			    a->temperature >= 0 ? json_real(a->temperature) : json_null());
	json_object_set_new(args, "eval_cmd", a->eval_cmd ? json_string(a->eval_cmd) : json_null());
	json_object_set_new(args, "eval_hw", a->hw_eval ? json_string(a->hw_eval) : json_null());
	return args;
}

/* ---- the command ------------------------------------------------------------ */

int cmd_agent(int argc, char **argv)
{
	struct llm_cli l = LLM_CLI_DEFAULTS;
	struct agent a = { .steps = 8, .eval_timeout_s = 1800, .trials = 3,
			   .po = PROMPT_OPTS_DEFAULTS };
	job_opts_init(&a.eval);
	a.eval.trials = a.trials;
	int force = 0, o;
	long long n;
	struct opts_parser P;
	opts_init(&P, tables);
	while ((o = opts_next(&P, argc, argv)) != -1) {
		if (o == PROMPT_OPT_HW)
			a.hw_eval = optarg;   /* passed on to eval only when given */
		int r = llm_cli_opt(&l, o, optarg);
		r = r ? r : prompt_opt(&a.po, o, optarg);
		/* the instance is eval's too: checked as eval checks it */
		static const int as_eval[][2] = { { 'g', 'g' }, { 'd', 'd' }, { PROMPT_OPT_M, OPT_M },
						  { PROMPT_OPT_N, OPT_N }, { PROMPT_OPT_BACKEND, 'b' } };
		for (size_t i = 0; r > 0 && i < ARRAY_SIZE(as_eval); i++)
			if (o == as_eval[i][0] && job_opt(&a.eval, as_eval[i][1], optarg) < 0)
				return PKB_EXIT_USAGE;
		if (r < 0)
			return PKB_EXIT_USAGE;
		if (r)
			continue;
		if (o == 't' || o == OPT_ITERS || o == OPT_WARMUP || o == OPT_TIMING ||
		    o == OPT_DEADLINE || o == OPT_DEVICE_TIMEOUT || o == OPT_ARCH ||
		    o == OPT_NO_SANDBOX) {
			if (job_opt(&a.eval, o, optarg) < 0)
				return PKB_EXIT_USAGE;
			if (o == OPT_ITERS)
				a.iters = a.eval.iters;
			else if (o == OPT_WARMUP)
				a.warmup = a.eval.warmup;
			else if (o != 't')
				a.eval_only = 1;
			continue;
		}
		switch (o) {
		case O_RUN: a.run_dir = optarg; break;
		case O_EVALCMD: a.eval_cmd = optarg; break;
		case O_FORCE: force = 1; break;
		case 'q': a.quiet = 1; break;
		case O_BUDGET_S:
			if (opt_num("budget-s", optarg, 0.001, 1e12, &a.budget_s) < 0)
				return PKB_EXIT_USAGE;
			break;
		case O_TARGET:
			if (opt_num("target-speedup", optarg, 0.001, 1e12, &a.target) < 0)
				return PKB_EXIT_USAGE;
			break;
		case O_EVALTO:
			if (opt_num("eval-timeout", optarg, 1, 1e12, &a.eval_timeout_s) < 0)
				return PKB_EXIT_USAGE;
			break;
		case O_BUDGET_T:
			if (opt_int("budget-tokens", optarg, 1, 1000000000000LL, &n) < 0)
				return PKB_EXIT_USAGE;
			a.budget_tokens = n;
			break;
		case O_STEPS:
			if (opt_int("steps", optarg, 1, INT_MAX, &n) < 0)
				return PKB_EXIT_USAGE;
			a.steps = (int)n;
			break;
		case 'h':
			opts_usage(stdout, head, tables, tail);
			return 0;
		default:
			opts_usage(stderr, head, tables, tail);
			return PKB_EXIT_USAGE;
		}
	}
	a.trials = a.eval.trials;
	a.eval.world = a.po.world;
	a.eval.m = a.po.m;
	a.eval.n = a.po.n;
	a.model = l.model;
	a.base_url = l.base_url;
	a.temperature = l.temperature;
	a.timeout_s = l.timeout_s;
	a.backoff_s = l.backoff_s;
	a.max_tokens = l.max_tokens;
	a.retries = l.retries;
	const char *provider = l.provider, *block = l.block;
	if (argc - optind != 1) {
		error(argc - optind ? "agent takes one problem SPEC" : "agent needs a problem");
		opts_usage(stderr, head, tables, tail);
		return PKB_EXIT_USAGE;
	}
	const char *spec = argv[optind];
	if (!a.model || !provider) {
		error("agent needs --model and --provider");
		opts_usage(stderr, head, tables, tail);
		return PKB_EXIT_USAGE;
	}
	a.prov = llm_provider_find(provider);
	if (!a.prov) {
		error("unknown provider '%s'", provider);
		hint("one of: %s", llm_provider_names());
		return PKB_EXIT_USAGE;
	}
	if (strcmp(a.po.backend, "cuda") && strcmp(a.po.backend, "nccl-device")) {
		error("unknown backend '%s'", a.po.backend);
		hint("a candidate's backend is cuda or nccl-device");
		return PKB_EXIT_USAGE;
	}
	if (!a.base_url)
		a.base_url = a.prov->base_url;
	if (!a.base_url) {
		error("the provider '%s' needs --base-url", provider);
		return PKB_EXIT_USAGE;
	}
	if (!strcmp(block, "last")) {
		a.block = 0;
	} else if (!strcmp(block, "first")) {
		a.block = -1;
	} else if (parse_int_in(block, 1, 999, &n) == 0) {
		a.block = (int)n;
	} else {
		error("--block takes first, last or a block number from 1");
		return PKB_EXIT_USAGE;
	}
	if (a.eval_cmd && split_template(&a, a.eval_cmd) < 0)
		return PKB_EXIT_USAGE;
	if (a.eval_cmd && a.eval_only)
		warning("--timing, --deadline, --device-timeout, --arch and --no-sandbox go to the "
			"local pkb eval only: --eval-cmd's template says what its eval gets");
	char *base = xstrdup(a.base_url);
	while (strlen(base) > 1 && base[strlen(base) - 1] == '/')
		base[strlen(base) - 1] = 0;
	a.base_url = base;
	/* the key: from the environment, sent in a header and nowhere else,
	 * and only to its provider's endpoint unless --api-key-env names it */
	char *key = NULL;
	int key_rc = llm_cli_key(a.prov, a.base_url, l.api_key_env, &a.keyinfo, a.quiet);
	if (key_rc == 0 && a.keyinfo.key)
		key = xstrdup(a.keyinfo.key);
	/* ... and out of the environment, which every evaluation inherits
	 * (nvcc, an --eval-cmd's ssh or srun): it needs no key */
	for (int i = 0; i < 2 && a.prov->key_env[i]; i++)
		unsetenv(a.prov->key_env[i]);
	if (l.api_key_env)
		unsetenv(l.api_key_env);
	a.key = a.keyinfo.key = key;
	int rc = PKB_EXIT_INPUT;
	struct conv *cv = NULL;
	const struct pkb_problem **ps = NULL;
	int np = 0, built = 0, lock = -1;
	char *run_default = NULL;
	if (key_rc < 0)
		goto out;
	char err[512];
	ps = spec_parse(spec, &np, err, sizeof err);
	if (!ps) {
		error("'%s': %s", spec, err);
		hint("'pkb list' shows the problems and categories");
		rc = PKB_EXIT_USAGE;
		goto out;
	}
	if (!a.run_dir) {
		run_default = xstrfmt("runs/agent-%s-%s", a.prov->name, a.model);
		for (char *p = run_default + 5; *p; p++)
			if (*p == '/' || *p == ':' || *p == ' ')
				*p = '_';
		a.run_dir = run_default;
	}
	/* the machine the prompt describes, and the evaluation's roofline
	 * with it: --hw, else the run's own, else this machine's (issue 38) */
	char *rj = xstrfmt("%s/run.json", a.run_dir);
	json_t *old = access(rj, F_OK) == 0 ? json_load_file(rj, 0, NULL) : NULL;
	free(rj);
	const char *old_src = json_string_value(json_object_get(old, "hw_source"));
	prompt_hw_resolve(&a.po, json_string_value(json_object_get(json_object_get(old, "args"),
								   "hw")));
	char hw_source[32], eval_hw[32];
	snprintf(hw_source, sizeof hw_source, "%s",
		 !strcmp(a.po.hw_source, "run.json") && old_src ? old_src : a.po.hw_source);
	/* a run started with --hw goes on without it */
	const char *old_eval_hw = json_string_value(json_object_get(json_object_get(old, "args"),
								    "eval_hw"));
	if (!a.hw_eval && old_eval_hw && !strcmp(a.po.hw_source, "run.json")) {
		snprintf(eval_hw, sizeof eval_hw, "%s", old_eval_hw);
		a.hw_eval = eval_hw;
	}
	json_decref(old);
	if (!a.eval_cmd)
		local_template(&a);
	cv = xcalloc((size_t)np, sizeof *cv);
	struct prompt *prompts = xcalloc((size_t)np, sizeof *prompts);
	for (; built < np; built++) {
		a.po.p = ps[built];
		if (prompt_build(&a.po, &cv[built].pr, err, sizeof err) < 0) {
			error("%s", err);
			free(prompts);
			goto out;
		}
		prompts[built] = cv[built].pr;
		cv[built].p = ps[built];
	}
	json_t *args = run_args(&a, spec, ps, prompts, np, block);
	free(prompts);
	if (mkdir_p(a.run_dir) < 0) {
		error("cannot create '%s': %s", a.run_dir, strerror(errno));
		json_decref(args);
		goto out;
	}
	a.abs_run = abs_path(a.run_dir);
	lock = rundir_lock(a.run_dir);
	if (lock < 0) {
		error("another pkb generate or agent is using the run '%s'", a.run_dir);
		json_decref(args);
		goto out;
	}
	rundir_remove_stale(a.run_dir);
	/* the budgets may change between runs (raise --steps to go on), and
	 * so may the server's address (a local server restarted on another
	 * port serves the same model) */
	json_t *budgets = json_pack("{s:s,s:s,s:s,s:{s:i,s:o,s:o,s:o}}", "base_url", a.base_url,
				    "hw", a.po.hw, "hw_source", hw_source,
				    "budgets", "steps", a.steps,
				    "budget_s", a.budget_s > 0 ? json_real(a.budget_s) : json_null(),
				    "budget_tokens", a.budget_tokens > 0
				    ? json_integer(a.budget_tokens) : json_null(),
				    "target_speedup", a.target > 0 ? json_real(a.target) : json_null());
	int orc = rundir_open(a.run_dir, args, budgets, force);
	json_decref(args);
	json_decref(budgets);
	if (orc < 0)
		goto out;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	int all_pass = 1;
	struct failure f = { 0 };
	for (int i = 0; i < np && !f.code; i++) {
		struct conv *c = &cv[i];
		c->best_speedup = NAN;
		c->dir = xstrfmt("%s/agent/%03d", a.run_dir, c->p->id);
		char *d1 = xstrfmt("%s/candidates/%03d", a.run_dir, c->p->id);
		char *d2 = xstrfmt("%s/replies/%03d", a.run_dir, c->p->id);
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
			f.code = PKB_EXIT_INPUT;
			break;
		}
		/* the whole first prompt, kept before the first request (issue 38),
		 * as generate keeps its samples' */
		c->prompt_file = rundir_store_prompt(a.run_dir, c->pr.sha256, c->pr.template_sha256,
						     c->pr.system, c->pr.user);
		if (!c->prompt_file) {
			f.code = PKB_EXIT_INPUT;
			break;
		}
		if (load_conv(c) < 0) {
			f.code = PKB_EXIT_INPUT;
			break;
		}
		if (c->step)
			progress(&a, "%03d: going on after step %d (%lld tokens, %.1f s)", c->p->id,
				 c->step, c->tokens, c->seconds);
		enum stop s;
		int r = 0;
		while ((s = stop_reason(&a, c)) == STOP_NONE) {
			r = do_step(&a, c, &f);
			if (r)
				break;
		}
		if (r < 0)
			break;
		if (r > 0)
			s = STOP_SECONDS;
		if (write_answer(&a, c, stop_names[s]) < 0) {
			f.code = PKB_EXIT_INPUT;
			break;
		}
		char sps[32] = "-", best[32] = "none";
		if (c->best_step && !isnan(c->best_speedup))
			snprintf(sps, sizeof sps, "%.3fx", c->best_speedup);
		if (c->best_step)
			snprintf(best, sizeof best, "step %d", c->best_step);
		progress(&a, "%03d: stopped (%s) after %d steps; best: %s, %s", c->p->id,
			 stop_names[s], c->step, best, sps);
		/* stdout: one line per problem */
		printf("%03d_%s\tsteps %d\tbest %s\t%s\tspeedup %s\tstop %s\n", c->p->id,
		       c->p->name, c->step, best, c->best_step ? "pass" : c->last_verdict, sps,
		       stop_names[s]);
		all_pass &= c->best_step > 0;
	}
	curl_global_cleanup();
	rc = f.code ? f.code : all_pass ? 0 : PKB_EXIT_NO_PASS;
out:
	if (lock >= 0)
		close(lock);
	for (int i = 0; cv && i < built; i++)
		conv_free(&cv[i]);
	free(cv);
	free(ps);
	free(run_default);
	free(base);
	free(a.abs_run);
	if (key) {
		memset(key, 0, strlen(key));
		free(key);
	}
	for (int i = 0; i < a.n_words; i++)
		free(a.words[i]);
	free(a.words);
	return rc;
}
