/*
 * cmd_generate.c -- `pkb generate`: ask a model for K candidates of every
 * problem of a SPEC and keep them in a run directory (docs/GENERATE.md):
 *
 *   run.json                       model, provider, template and prompt
 *                                  hashes, parameters, pkb version, dates
 *   candidates/NNN/sample_K.cu     the extracted candidate (outcome ok)
 *   replies/NNN/sample_K.json      the raw reply, tokens, latency, finish
 *                                  reason, extraction outcome
 *
 * A reply record is written last, so it marks a finished sample: a re-run
 * with the same arguments requests only the samples without one. J
 * requests run at once on libcurl's multi interface (one thread: the time
 * goes to waiting on the model, ~10-300 s a reply, not to us).
 */
#define _GNU_SOURCE   /* strcasestr */
#include "cmds.h"
#include "exitcode.h"
#include "llm.h"
#include "llm_http.h"
#include "problem.h"
#include "dtype.h"      /* defines: dtype_name */
#include "prompt.h"
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
#include <sys/stat.h>
#include <unistd.h>

static const char head[] =
"usage: pkb generate --model M --provider P --problems SPEC [-k K] [-j J]\n"
"                    [--run DIR] [options]\n"
"\n"
"Ask model M for K candidates of every problem in SPEC and write them to DIR\n"
"(docs/GENERATE.md). Re-run with the same arguments to fetch what is missing.\n"
"\n";

enum { O_PROBLEMS = 1000, O_RUN, O_FORCE };
static const struct opt gen_opts[] = {
	{ O_PROBLEMS, "problems", "SPEC", "all | ids and ranges (1-8,13) | names | a category" },
	{ 'k', "k", "K", "samples per problem (default 1)" },
	{ 'j', "j", "J", "requests in flight (default 4)" },
	{ O_RUN, "run", "DIR", "the run directory (default runs/gen-<provider>-<model>)" },
	{ O_FORCE, "force", NULL, "go on in a run whose run.json has other arguments" },
	{ 'q', "quiet", NULL, "no progress on stderr" },
	OPTS_END,
};
/* the request's options, the prompt's instance (as `pkb prompt` takes it),
 * then generate's own */
static const struct opt *const tables[] = { llm_opts_table, prompt_opts_table, gen_opts, NULL };

/* ---- the run ---------------------------------------------------------------- */


enum { S_WAIT, S_RUN, S_DONE, S_FAILED };

struct sample {
	int prob;                /* index into gen.probs */
	int k;
	int state, attempts;
	double not_before, t_start;
	CURL *h;
	struct curl_slist *hdr;
	char *body;
	struct llm_http_buf resp;
	char curl_err[CURL_ERROR_SIZE];
	json_t *tries;           /* the attempts that failed, for the record */
};

struct gen {
	const struct llm_provider *prov;
	const char *model, *base_url, *run_dir, *key;
	struct llm_key keyinfo;
	/* the command line's: the problems, the prompt's instance, --block as
	 * given, --force */
	const char *spec, *block_arg;
	struct prompt_opts po;
	int force;
	char *base, *run_default;   /* owned: base_url, run_dir */
	const struct pkb_problem **probs;
	struct prompt *prompts;
	char **prompt_files;     /* per problem: its prompt's file in the run (prompts/SHA.json) */
	int n_probs, k, max_tokens, j, retries, block, quiet, tty;
	double temperature, timeout_s, backoff_s;
	unsigned rng;
	/* progress */
	int done, failed, outcomes[4];
	long long tok_in, tok_out;
	double t0;
	int stop;                /* 401/403/404 ...: no new request */
	int stop_status;
};

enum { O_OK, O_NO_CODE, O_TRUNCATED, O_BAD_REPLY };
static const char *const outcome_names[] = { "ok", "no_code", "truncated", "bad_reply" };

static char *sample_path(const struct gen *g, const char *kind, int prob, int k, const char *ext)
{
	return xstrfmt("%s/%s/%03d/sample_%d.%s", g->run_dir, kind, g->probs[prob]->id, k, ext);
}

static void progress(struct gen *g, int total, const char *line)
{
	if (g->quiet)
		return;
	double el = now_s() - g->t0;
	if (g->tty) {
		int width = 24, fill = total ? (g->done + g->failed) * width / total : width;
		fprintf(stderr,
			"\r[%.*s%.*s] %d/%d written (no_code %d, truncated %d, bad_reply %d), "
			"%d failed | tokens %lld in, %lld out | %.0f s\033[K",
			fill, "########################", width - fill, "........................",
			g->done, total, g->outcomes[O_NO_CODE], g->outcomes[O_TRUNCATED],
			g->outcomes[O_BAD_REPLY], g->failed, g->tok_in, g->tok_out, el);
	} else if (line) {
		fprintf(stderr, "generate: [%d/%d] %s (%.0f s)\n", g->done + g->failed, total, line,
			el);
	}
}

static int retry_later(struct gen *g, struct sample *s, double after, const char *why,
		       char *line, size_t n);

/* a finished 200: extract, write the candidate, then the reply record */
static void finish_ok(struct gen *g, struct sample *s, long status, double latency, char *line,
		      size_t n)
{
	const struct prompt *pr = &g->prompts[s->prob];
	rundir_redact(s->resp.s, &s->resp.len, g->key);
	struct llm_reply r;
	json_t *doc = NULL;
	int outcome, blocks = 0;
	char *code = NULL;
	if (llm_parse(g->prov->api, s->resp.s ? s->resp.s : "", s->resp.len, &r, &doc) < 0) {
		/* issue 38: a bad reply is asked again like a 5xx, within the
		 * same retries; when they are spent, one the provider never
		 * wrote (not JSON, an error object) fails the sample as a 5xx
		 * would (the next run asks again), and the provider's own JSON
		 * without its content (a SAFETY block) is the outcome bad_reply */
		char why[256];
		snprintf(why, sizeof why, "a bad reply (%s)", r.err);
		if (s->attempts <= g->retries || r.foreign) {
			json_array_append_new(s->tries, llm_http_attempt(s->attempts, status, why,
									 s->resp.s, s->resp.len,
									 g->key));
			retry_later(g, s, -1, why, line, n);
			json_decref(doc);
			llm_reply_free(&r);
			return;
		}
		outcome = O_BAD_REPLY;
	} else if (r.truncated) {
		outcome = O_TRUNCATED;
		code = llm_extract(r.text, prompt_backend_ext(g->po.backend), g->block, &blocks);
		free(code);
		code = NULL;
	} else {
		code = llm_extract(r.text, prompt_backend_ext(g->po.backend), g->block, &blocks);
		outcome = code ? O_OK : O_NO_CODE;
	}
	char *cu = sample_path(g, "candidates", s->prob, s->k, prompt_backend_ext(g->po.backend));
	char *rep = sample_path(g, "replies", s->prob, s->k, "json");
	char date[32];
	rundir_utc_now(date, sizeof date);
	const char *block = g->block == 0 ? "last" : g->block < 0 ? "first" : NULL;
	json_t *rec = json_pack("{s:i,s:s,s:i,s:s,s:s,s:s,s:s,s:s,s:s?,s:i,s:f,s:i}", "problem",
				g->probs[s->prob]->id, "name", g->probs[s->prob]->name, "sample",
				s->k, "model", g->model, "provider", g->prov->name, "date", date,
				"prompt_sha256", pr->sha256, "template_sha256", pr->template_sha256,
				"outcome", outcome_names[outcome], "http_status", (int)status,
				"latency_s", latency, "attempts", s->attempts);
	json_object_set_new(rec, "prompt", json_string(g->prompt_files[s->prob]));
	json_object_set_new(rec, "finish_reason",
			    outcome == O_BAD_REPLY || !r.finish[0] ? json_null() : json_string(r.finish));
	json_object_set_new(rec, "tokens_in", outcome == O_BAD_REPLY || r.tokens_in < 0
					      ? json_null() : json_integer(r.tokens_in));
	json_object_set_new(rec, "tokens_out", outcome == O_BAD_REPLY || r.tokens_out < 0
					       ? json_null() : json_integer(r.tokens_out));
	json_object_set_new(rec, "block", block ? json_string(block) : json_integer(g->block));
	json_object_set_new(rec, "blocks_found", json_integer(blocks));
	if (outcome == O_BAD_REPLY)
		json_object_set_new(rec, "error", json_string(r.err));
	json_object_set_new(rec, "candidate",
			    code ? json_string(cu + strlen(g->run_dir) + 1) : json_null());
	json_object_set_new(rec, "retried", json_incref(s->tries));
	/* the raw reply: as JSON where it parses, else as the text it was */
	json_object_set_new(rec, "reply", doc ? json_incref(doc)
					      : json_stringn_nocheck(s->resp.s ? s->resp.s : "",
								     s->resp.len));
	int wrote = 0;
	if ((!code || rundir_write(cu, code, strlen(code)) == 0) &&
	    rundir_write_json(rep, rec) == 0)
		wrote = 1;
	else if (code)
		error("cannot write '%s': %s", cu, strerror(errno));
	if (wrote) {
		s->state = S_DONE;
		g->done++;
		g->outcomes[outcome]++;
		if (outcome != O_BAD_REPLY) {
			g->tok_in += r.tokens_in > 0 ? r.tokens_in : 0;
			g->tok_out += r.tokens_out > 0 ? r.tokens_out : 0;
		}
	} else {
		s->state = S_FAILED;
		g->failed++;
	}
	snprintf(line, n, "%03d sample %d: %s, %.1f s%s", g->probs[s->prob]->id, s->k,
		 wrote ? outcome_names[outcome] : "not written", latency,
		 outcome == O_BAD_REPLY ? " (malformed reply)" : "");
	json_decref(rec);
	json_decref(doc);
	llm_reply_free(&r);
	free(code);
	free(cu);
	free(rep);
}

/* schedule another attempt, or give the sample up; 1 if it will retry */
static int retry_later(struct gen *g, struct sample *s, double after, const char *why,
		       char *line, size_t n)
{
	if (s->attempts > g->retries) {
		s->state = S_FAILED;
		g->failed++;
		snprintf(line, n, "%03d sample %d: failed after %d attempts: %s",
			 g->probs[s->prob]->id, s->k, s->attempts, why);
		return 0;
	}
	double d = llm_http_backoff(g->backoff_s, s->attempts, after, &g->rng);
	s->not_before = now_s() + d;
	s->state = S_WAIT;
	snprintf(line, n, "%03d sample %d: %s; retry %d in %.1f s", g->probs[s->prob]->id, s->k,
		 why, s->attempts, d);
	return 1;
}

static void release(CURLM *multi, struct sample *s)
{
	if (s->h) {
		curl_multi_remove_handle(multi, s->h);
		curl_easy_cleanup(s->h);
		s->h = NULL;
	}
	if (s->hdr) {
		llm_http_free_headers(s->hdr);
		s->hdr = NULL;
	}
	free(s->resp.s);
	s->resp.s = NULL;
	s->resp.len = 0;
}

static int start(struct gen *g, CURLM *multi, struct sample *s)
{
	const struct prompt *pr = &g->prompts[s->prob];
	struct llm_request rq = { .prov = g->prov, .base_url = g->base_url, .model = g->model,
				  .key = g->key, .system = pr->system, .user = pr->user,
				  .temperature = g->temperature, .max_tokens = g->max_tokens };
	if (!s->body) {
		json_t *b = llm_body(&rq);
		s->body = json_dumps(b, JSON_COMPACT | JSON_REAL_PRECISION(10));
		json_decref(b);
	}
	s->h = llm_http_easy(&rq, s->body, g->timeout_s, &s->hdr, &s->resp, s->curl_err);
	curl_easy_setopt(s->h, CURLOPT_PRIVATE, s);
	s->attempts++;
	if (!s->tries)
		s->tries = json_array();
	s->t_start = now_s();
	s->state = S_RUN;
	return curl_multi_add_handle(multi, s->h) == CURLM_OK ? 0 : -1;
}

static void done_transfer(struct gen *g, CURLM *multi, CURL *h, CURLcode res, int total)
{
	struct sample *s = NULL;
	curl_easy_getinfo(h, CURLINFO_PRIVATE, (char **)&s);
	long status = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	double latency = now_s() - s->t_start;
	char line[512] = "", why[256];
	if (res != CURLE_OK) {
		snprintf(why, sizeof why, "%s", s->curl_err[0] ? s->curl_err : curl_easy_strerror(res));
		json_array_append_new(s->tries, llm_http_attempt(s->attempts, 0, why, NULL, 0, NULL));
		retry_later(g, s, -1, why, line, sizeof line);
	} else if (status == 200) {
		finish_ok(g, s, status, latency, line, sizeof line);
	} else if (llm_http_retryable(status)) {
		snprintf(why, sizeof why, "HTTP %ld", status);
		rundir_redact(s->resp.s, &s->resp.len, g->key);
		json_array_append_new(s->tries, llm_http_attempt(s->attempts, status, why, s->resp.s,
								 s->resp.len, g->key));
		retry_later(g, s, llm_http_retry_after(h), why, line, sizeof line);
	} else {
		/* 401/403 (the key), 404 (the model or URL), 400 (a parameter):
		 * every other request would get the same answer */
		rundir_redact(s->resp.s, &s->resp.len, g->key);
		s->state = S_FAILED;
		g->failed++;
		if (!g->stop) {
			g->stop = 1;
			g->stop_status = (int)status;
			if (g->tty && !g->quiet)
				fputc('\n', stderr);
			error("%03d sample %d: HTTP %ld from the %s API: %.300s", g->probs[s->prob]->id,
			      s->k, status, g->prov->name, s->resp.s ? s->resp.s : "");
			llm_hint_status(status, &g->keyinfo);
		}
	}
	release(multi, s);
	progress(g, total, line[0] ? line : NULL);
}

static int run_samples(struct gen *g, struct sample *todo, int n)
{
	CURLM *multi = curl_multi_init();
	int next = 0, active = 0;
	g->t0 = now_s();
	progress(g, n, NULL);
	for (;;) {
		/* fill the free slots in order: with -j 1 requests go out in
		 * problem, sample order (and a retry waits in its slot) */
		while (!g->stop && active < g->j && next < n) {
			todo[next].state = S_WAIT;
			todo[next].not_before = 0;
			next++;
			active++;
		}
		double now = now_s(), wake = now + 1;
		for (int i = 0; i < next; i++) {
			struct sample *s = &todo[i];
			if (s->state != S_WAIT)
				continue;
			if (g->stop) {
				s->state = S_FAILED;
				active--;
				continue;
			}
			if (s->not_before <= now) {
				if (start(g, multi, s) < 0)
					BUG("curl_multi_add_handle");
			} else if (s->not_before < wake) {
				wake = s->not_before;
			}
		}
		int running = 0;
		curl_multi_perform(multi, &running);
		CURLMsg *m;
		int left, finished = 0;
		while ((m = curl_multi_info_read(multi, &left))) {
			if (m->msg != CURLMSG_DONE)
				continue;
			done_transfer(g, multi, m->easy_handle, m->data.result, n);
			finished++;
		}
		active = 0;
		for (int i = 0; i < next; i++)
			active += todo[i].state == S_WAIT || todo[i].state == S_RUN;
		if (g->stop) {
			/* abandon what is in flight: it is not written, so a
			 * re-run asks again */
			for (int i = 0; i < next; i++)
				if (todo[i].state == S_RUN) {
					release(multi, &todo[i]);
					todo[i].state = S_FAILED;
				}
			break;
		}
		if (!active && next == n)
			break;
		if (finished)   /* a slot is free or a retry is due: no wait */
			continue;
		int ms = (int)fmax(1, fmin(1000, (wake - now_s()) * 1000));
		curl_multi_poll(multi, NULL, 0, ms, NULL);
		if (g->tty)   /* the bar's clock moves while replies take minutes */
			progress(g, n, NULL);
	}
	curl_multi_cleanup(multi);
	if (g->tty && !g->quiet)
		fputc('\n', stderr);
	return 0;
}

/* ---- run.json --------------------------------------------------------------- */

/* the arguments that decide what a sample is: a run continues only with
 * the same ones (-j, --timeout, --retries do not change a sample) */
static json_t *run_args(const struct gen *g)
{
	const struct prompt_opts *po = &g->po;
	json_t *ids = json_array(), *prompts = json_object();
	for (int i = 0; i < g->n_probs; i++) {
		char id[8];
		snprintf(id, sizeof id, "%03d", g->probs[i]->id);
		json_array_append_new(ids, json_integer(g->probs[i]->id));
		json_object_set_new(prompts, id, json_string(g->prompts[i].sha256));
	}
	/* the template under the pkb root by its relative path: the same run
	 * continues from another checkout */
	const char *tpl = g->prompts[0].template_path;
	size_t rl = strlen(pkb_root());
	if (!strncmp(tpl, pkb_root(), rl) && tpl[rl] == '/')
		tpl += rl + 1;
	json_t *a = json_pack("{s:s,s:s,s:s,s:s,s:o,s:i,s:i,s:s,s:s,s:i,s:I,s:I,s:s,s:s,s:s,s:s,s:o}",
			      "model", g->model, "provider", g->prov->name, "base_url", g->base_url,
			      "problems_spec", g->spec, "problems", ids, "k", g->k, "max_tokens",
			      g->max_tokens, "block", g->block_arg, "backend", po->backend, "world",
			      po->world,
			      "m", (json_int_t)po->m, "n", (json_int_t)po->n, "dtype",
			      dtype_name(po->dtype),
			      "hw", po->hw, "template", tpl,
			      "template_sha256", g->prompts[0].template_sha256, "prompt_sha256",
			      prompts);
	json_object_set_new(a, "temperature",
			    g->temperature >= 0 ? json_real(g->temperature) : json_null());
	return a;
}

/* The run directory, locked and checked against run.json (`args`, and
 * `extra`, which may change between runs); the lock's descriptor, or -1
 * (said). */
static int open_run(const struct gen *g, json_t *args, json_t *extra)
{
	if (mkdir_p(g->run_dir) < 0)
		return error("cannot create '%s': %s", g->run_dir, strerror(errno));
	int lock = rundir_lock(g->run_dir);
	if (lock < 0)
		return error("another pkb generate is using the run '%s'", g->run_dir);
	rundir_remove_stale(g->run_dir);
	if (rundir_open(g->run_dir, args, extra, g->force) < 0) {
		close(lock);
		return -1;
	}
	return lock;
}

/* The machine the prompt describes: --hw, else the run's own (going on in
 * a run keeps its prompts), else this machine's (issue 38). What run.json
 * keeps of it besides the args: the machine and how it was first chosen. */
static json_t *resolve_hw(struct gen *g)
{
	char hw_source[32];
	json_t *old = prompt_hw_resume(&g->po, g->run_dir, hw_source, sizeof hw_source);
	json_t *extra = json_pack("{s:s,s:s}", "hw", g->po.hw, "hw_source", hw_source);
	json_decref(old);
	return extra;
}

/* ---- the samples -------------------------------------------------------------- */

/* Problem i's folders, its stale temporary files removed, and its whole
 * prompt kept beside its samples (issue 38: a run says what was asked, not
 * only its hash); -1 (said) when they cannot be written. */
static int problem_files(struct gen *g, int i)
{
	const struct prompt *pr = &g->prompts[i];
	g->prompt_files[i] = rundir_store_prompt(g->run_dir, pr->sha256, pr->template_sha256,
						 pr->system, pr->user);
	if (!g->prompt_files[i])
		return -1;
	char *d1 = xstrfmt("%s/candidates/%03d", g->run_dir, g->probs[i]->id);
	char *d2 = xstrfmt("%s/replies/%03d", g->run_dir, g->probs[i]->id);
	int rc = 0;
	if (mkdir_p(d1) < 0 || mkdir_p(d2) < 0) {
		rc = error("cannot create '%s': %s", d2, strerror(errno));
	} else {
		rundir_remove_stale(d1);
		rundir_remove_stale(d2);
	}
	free(d1);
	free(d2);
	return rc;
}

/* the samples without a reply record, in problem, sample order: their
 * count (*todo malloc'd), *have the others; -1 (said) on an error */
static int plan_samples(struct gen *g, struct sample **todo, int *have)
{
	struct sample *t = xcalloc((size_t)g->n_probs * g->k, sizeof *t);
	int n = 0;
	*have = 0;
	g->prompt_files = xcalloc(g->n_probs, sizeof *g->prompt_files);
	for (int i = 0; i < g->n_probs; i++) {
		if (problem_files(g, i) < 0) {
			free(t);
			return -1;
		}
		for (int k = 0; k < g->k; k++) {
			char *rep = sample_path(g, "replies", i, k, "json");
			if (access(rep, F_OK) == 0)
				(*have)++;
			else
				t[n++] = (struct sample){ .prob = i, .k = k };
			free(rep);
		}
	}
	*todo = t;
	return n;
}

/* Request the missing samples and say what came of them: the command's
 * exit status. */
static int fetch_samples(struct gen *g)
{
	struct sample *todo;
	int have, n = plan_samples(g, &todo, &have);
	if (n < 0)
		return PKB_EXIT_INPUT;
	g->tty = isatty(2);
	g->rng = (unsigned)(now_ns() ^ (unsigned)getpid());
	if (!g->quiet)
		fprintf(stderr, "generate: %s %s, %d problems x %d samples: %d to request, %d kept, "
			"run '%s', hardware %s (%s)\n", g->prov->name, g->model, g->n_probs, g->k, n,
			have, g->run_dir, g->po.hw, g->po.hw_source);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	run_samples(g, todo, n);
	curl_global_cleanup();
	for (int i = 0; i < n; i++) {
		free(todo[i].body);
		json_decref(todo[i].tries);
	}
	free(todo);
	if (!g->quiet)
		fprintf(stderr,
			"generate: %d written (ok %d, no_code %d, truncated %d, bad_reply %d), "
			"%d not obtained, %d kept from before\n",
			g->done, g->outcomes[O_OK], g->outcomes[O_NO_CODE], g->outcomes[O_TRUNCATED],
			g->outcomes[O_BAD_REPLY], n - g->done, have);
	if (g->stop)
		return PKB_EXIT_PROVIDER;
	if (g->done < n) {
		hint("run the same command again to request the %d missing samples", n - g->done);
		return PKB_EXIT_INCOMPLETE;
	}
	return 0;
}

/* ---- the command ------------------------------------------------------------ */

/* argv into g and l; 0, or -1 when the command ends here with *rc (-h: 0) */
static int parse_args(struct gen *g, struct llm_cli *l, int argc, char **argv, int *rc)
{
	int c;
	long long num;
	struct opts_parser P;
	opts_init(&P, tables);
	*rc = PKB_EXIT_USAGE;
	while ((c = opts_next(&P, argc, argv)) != -1) {
		int r = llm_cli_opt(l, c, optarg);
		r = r ? r : prompt_opt(&g->po, c, optarg);
		if (r < 0)
			return -1;
		if (r)
			continue;
		switch (c) {
		case O_PROBLEMS: g->spec = optarg; break;
		case O_RUN: g->run_dir = optarg; break;
		case O_FORCE: g->force = 1; break;
		case 'q': g->quiet = 1; break;
		case 'k': case 'j':
			if (opt_int(c == 'k' ? "k" : "j", optarg, 1, INT_MAX, &num) < 0)
				return -1;
			*(c == 'k' ? &g->k : &g->j) = (int)num;
			break;
		case 'h':
			opts_usage(stdout, head, tables, NULL);
			*rc = 0;
			return -1;
		default:
			opts_usage(stderr, head, tables, NULL);
			return -1;
		}
	}
	g->model = l->model;
	g->base_url = l->base_url;
	g->temperature = l->temperature;
	g->timeout_s = l->timeout_s;
	g->backoff_s = l->backoff_s;
	g->max_tokens = l->max_tokens;
	g->retries = l->retries;
	g->block_arg = l->block;
	if (optind != argc) {
		error("generate takes no operand ('%s')", argv[optind]);
		return -1;
	}
	if (!g->model || !l->provider || !g->spec) {
		error("generate needs --model, --provider and --problems");
		opts_usage(stderr, head, tables, NULL);
		return -1;
	}
	return 0;
}

/* The run of g's problems: the prompts, the run directory, the samples.
 * The command's exit status. */
static int gen_run(struct gen *g)
{
	if (!g->run_dir) {
		g->run_default = xstrfmt("runs/gen-%s-%s", g->prov->name, g->model);
		for (char *p = g->run_default + 5; *p; p++)
			if (*p == '/' || *p == ':' || *p == ' ')
				*p = '_';
		g->run_dir = g->run_default;
	}
	json_t *extra = resolve_hw(g);
	int rc = PKB_EXIT_INPUT, n_built = 0;
	char err[512];
	g->prompts = xcalloc(g->n_probs, sizeof *g->prompts);
	for (; n_built < g->n_probs; n_built++) {
		g->po.p = g->probs[n_built];
		if (prompt_build(&g->po, &g->prompts[n_built], err, sizeof err) < 0) {
			error("%s", err);
			goto out;
		}
	}
	json_t *args = run_args(g);
	int lock = open_run(g, args, extra);
	json_decref(args);
	if (lock >= 0) {
		rc = fetch_samples(g);
		close(lock);
	}
out:
	json_decref(extra);
	for (int i = 0; g->prompt_files && i < g->n_probs; i++)
		free(g->prompt_files[i]);
	free(g->prompt_files);
	for (int i = 0; i < n_built; i++)
		prompt_free(&g->prompts[i]);
	free(g->prompts);
	return rc;
}

int cmd_generate(int argc, char **argv)
{
	struct llm_cli l = LLM_CLI_DEFAULTS;
	struct gen g = { .k = 1, .j = 4, .po = PROMPT_OPTS_DEFAULTS };
	int rc;
	if (parse_args(&g, &l, argc, argv, &rc) < 0)
		return rc;
	rc = PKB_EXIT_USAGE;
	/* the provider, its endpoint and --block (llm_http.h) */
	struct llm_target tg;
	if (llm_cli_target(&l, &tg) < 0)
		goto out;
	g.prov = tg.prov;
	g.base_url = g.base = tg.base_url;
	g.block = tg.block;
	/* the key: read from the environment, held in memory, sent in a header
	 * and nowhere else (never in argv, a URL, a file or a message), and
	 * only to its provider's endpoint unless --api-key-env names it */
	if (llm_cli_key(g.prov, g.base_url, l.api_key_env, &g.keyinfo, g.quiet) < 0) {
		rc = PKB_EXIT_INPUT;
		goto out;
	}
	g.key = g.keyinfo.key;
	char err[512];
	g.probs = spec_parse(g.spec, &g.n_probs, err, sizeof err);
	if (!g.probs) {
		error("--problems '%s': %s", g.spec, err);
		hint("'pkb list' shows the problems and categories");
		goto out;
	}
	rc = gen_run(&g);
out:
	free(g.run_default);
	free(g.probs);
	free(g.base);
	return rc;
}
