/*
 * llm_http.c -- see llm_http.h.
 */
#define _GNU_SOURCE   /* rand_r, usleep */
#include "llm_http.h"
#include "rundir.h"   /* defines: rundir_redact */
#include "util.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
	struct llm_http_buf *b = arg;
	size_t add = size * n;
	/* a reply is tens of KB; 64 MB is no reply */
	if (b->len + add > (64u << 20))
		return 0;
	b->s = xrealloc(b->s, b->len + add + 1);
	memcpy(b->s + b->len, p, add);
	b->len += add;
	b->s[b->len] = 0;
	return add;
}

CURL *llm_http_easy(const struct llm_request *rq, const char *body, double timeout_s,
		    struct curl_slist **hdr, struct llm_http_buf *out, char *errbuf)
{
	char *url = llm_url(rq);
	char **hl = llm_headers(rq);
	for (char **p = hl; *p; p++)
		*hdr = curl_slist_append(*hdr, *p);
	llm_headers_free(hl);
	CURL *h = curl_easy_init();
	if (!h || !*hdr)
		BUG("curl_easy_init");
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, *hdr);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(timeout_s * 1000));
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 30000L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "pkb/" PKB_VERSION);
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
	errbuf[0] = 0;
	free(url);
	return h;
}

void llm_http_free_headers(struct curl_slist *hdr)
{
	/* the list holds the key */
	for (struct curl_slist *l = hdr; l; l = l->next)
		memset(l->data, 0, strlen(l->data));
	curl_slist_free_all(hdr);
}

int llm_http_retryable(long status)
{
	return status == 408 || status == 409 || status == 429 || status >= 500;
}

double llm_http_retry_after(CURL *h)
{
	struct curl_header *hd = NULL;
	if (curl_easy_header(h, "Retry-After", 0, CURLH_HEADER, -1, &hd) != CURLHE_OK || !hd)
		return -1;
	char *end;
	double v = strtod(hd->value, &end);
	if (end != hd->value && v >= 0)
		return v;
	time_t t = curl_getdate(hd->value, NULL);
	return t < 0 ? -1 : fmax(0, difftime(t, time(NULL)));
}

double llm_http_backoff(double backoff_s, int attempt, double after, unsigned *rng)
{
	/* exponential backoff with jitter in [d/2, d), capped at 5 minutes;
	 * the server's Retry-After is the least wait */
	double d = fmin(300, backoff_s * pow(2, attempt - 1));
	d = d / 2 + d / 2 * (rand_r(rng) / (RAND_MAX + 1.0));
	if (after > d)
		d = fmin(after, 3600);
	return d;
}

json_t *llm_http_attempt(int attempt, long status, const char *why, const char *body,
			 size_t len, const char *key)
{
	json_t *a = json_pack("{s:i,s:o,s:s}", "attempt", attempt, "http_status",
			      status > 0 ? json_integer(status) : json_null(), "error", why);
	if (body && len) {
		size_t hl = len < 200 ? len : 200;
		char *head = xmalloc(hl + 1);
		memcpy(head, body, hl);
		head[hl] = 0;
		rundir_redact(head, &hl, key);
		json_object_set_new(a, "body_head", json_stringn_nocheck(head, hl));
		free(head);
	}
	return a;
}

/* a 200 whose body llm_parse refuses: why, in err */
static int bad_reply(const struct llm_request *rq, const struct llm_http_buf *out, char *err,
		     size_t n)
{
	struct llm_reply r;
	json_t *doc = NULL;
	int bad = llm_parse(rq->prov->api, out->s ? out->s : "", out->len, &r, &doc) < 0;
	if (bad)
		snprintf(err, n, "a bad reply (%s)", r.err);
	json_decref(doc);
	llm_reply_free(&r);
	return bad;
}

int llm_http_post(const struct llm_request *rq, const char *body, double timeout_s, int retries,
		  double backoff_s, double until_s, long *status, struct llm_http_buf *out,
		  int *attempts, json_t *tries, char *err, size_t n)
{
	unsigned rng = (unsigned)(now_ns() ^ (unsigned)getpid());
	*attempts = 0;
	for (;;) {
		double t = timeout_s;
		if (until_s > 0) {
			double left = until_s - now_ns() / 1e9;
			if (left <= 0) {
				snprintf(err, n, "the time budget ran out");
				return -1;
			}
			t = fmin(t, left);
		}
		struct curl_slist *hdr = NULL;
		char cerr[CURL_ERROR_SIZE];
		free(out->s);
		out->s = NULL;
		out->len = 0;
		CURL *h = llm_http_easy(rq, body, t, &hdr, out, cerr);
		CURLcode res = curl_easy_perform(h);
		(*attempts)++;
		*status = 0;
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
		double after = res == CURLE_OK ? llm_http_retry_after(h) : -1;
		if (res != CURLE_OK)
			snprintf(err, n, "%s", cerr[0] ? cerr : curl_easy_strerror(res));
		else
			snprintf(err, n, "HTTP %ld", *status);
		curl_easy_cleanup(h);
		llm_http_free_headers(hdr);
		/* issue 38: a proxy's HTML page in a 200 is as passing as a 502 */
		int bad = res == CURLE_OK && *status == 200 && bad_reply(rq, out, err, n);
		if (res == CURLE_OK && !llm_http_retryable(*status) && !bad)
			return 0;
		if (tries)
			json_array_append_new(tries, llm_http_attempt(*attempts, res == CURLE_OK ? *status : 0,
								      err, out->s, out->len, rq->key));
		if (*attempts > retries)
			return res == CURLE_OK ? 0 : -1;
		double d = llm_http_backoff(backoff_s, *attempts, after, &rng);
		if (until_s > 0 && now_ns() / 1e9 + d >= until_s) {
			snprintf(err + strlen(err), n - strlen(err), "; no time left in the budget to retry");
			return res == CURLE_OK ? 0 : -1;
		}
		warning("%s; retry %d in %.1f s", err, *attempts, d);
		usleep((useconds_t)(d * 1e6));
	}
}

/* ---- the request options ------------------------------------------------------- */

const struct opt llm_opts_table[] = {
	{ LLM_OPT_MODEL, "model", "M", "the provider's model name" },
	{ LLM_OPT_PROVIDER, "provider", "P", "openai | together | openai-compatible |\n"
					     "anthropic | gemini" },
	{ LLM_OPT_BASE, "base-url", "URL", "the API root (required for openai-compatible,\n"
					   "e.g. http://localhost:8000/v1 for vLLM)" },
	{ LLM_OPT_KEYENV, "api-key-env", "NAME", "send the key in variable NAME (another\n"
						 "--base-url than the provider's gets none\n"
						 "otherwise)" },
	{ LLM_OPT_TEMP, "temperature", "T", "sampling temperature (default: the provider's own)" },
	{ LLM_OPT_MAXTOK, "max-tokens", "N", "reply length limit (default 16384)" },
	{ LLM_OPT_TIMEOUT, "timeout", "S", "seconds per request (default 600)" },
	{ LLM_OPT_RETRIES, "retries", "N", "retries of a request on 429, 5xx, network errors,\n"
					   "bad replies (default 6)" },
	{ LLM_OPT_BACKOFF, "backoff", "S", "first retry delay in seconds, doubled each retry\n"
					   "(default 2)" },
	{ LLM_OPT_BLOCK, "block", "B", "which code block: last (default) | first | N" },
	OPTS_END,
};

int llm_cli_opt(struct llm_cli *l, int c, const char *arg)
{
	char *end;
	double v = 0;
	switch (c) {
	case LLM_OPT_MODEL: l->model = arg; return 1;
	case LLM_OPT_PROVIDER: l->provider = arg; return 1;
	case LLM_OPT_BASE: l->base_url = arg; return 1;
	case LLM_OPT_BLOCK: l->block = arg; return 1;
	case LLM_OPT_KEYENV:
		if (!llm_env_name_valid(arg))
			return error("--api-key-env takes the name of an environment variable, "
				     "not '%s'", arg);
		l->api_key_env = arg;
		return 1;
	case LLM_OPT_TEMP:
	case LLM_OPT_TIMEOUT:
	case LLM_OPT_BACKOFF:
	case LLM_OPT_MAXTOK:
	case LLM_OPT_RETRIES: {
		const char *name = c == LLM_OPT_TEMP ? "temperature" : c == LLM_OPT_TIMEOUT ? "timeout"
				   : c == LLM_OPT_BACKOFF ? "backoff" : c == LLM_OPT_MAXTOK ? "max-tokens"
				   : "retries";
		double lo = c == LLM_OPT_TIMEOUT ? 0.001 : c == LLM_OPT_MAXTOK ? 1 : 0;
		int whole = c == LLM_OPT_MAXTOK || c == LLM_OPT_RETRIES;
		v = strtod(arg, &end);
		if (end == arg || *end || !(v >= lo) || v > (whole ? INT_MAX : 1e9) ||
		    (whole && v != floor(v)))
			return error("--%s takes %s >= %g, not '%s'", name,
				     whole ? "a whole number" : "a number", lo, arg);
		if (c == LLM_OPT_TEMP)
			l->temperature = v;
		else if (c == LLM_OPT_TIMEOUT)
			l->timeout_s = v;
		else if (c == LLM_OPT_BACKOFF)
			l->backoff_s = v;
		else if (c == LLM_OPT_MAXTOK)
			l->max_tokens = (int)v;
		else
			l->retries = (int)v;
		return 1;
	}
	}
	return 0;
}

int llm_cli_target(const struct llm_cli *l, struct llm_target *t)
{
	long long num;
	memset(t, 0, sizeof *t);
	t->prov = llm_provider_find(l->provider);
	if (!t->prov) {
		error("unknown provider '%s'", l->provider);
		hint("one of: %s", llm_provider_names());
		return -1;
	}
	const char *url = l->base_url ? l->base_url : t->prov->base_url;
	if (!url)
		return error("the provider '%s' needs --base-url", l->provider);
	if (!strcmp(l->block, "last"))
		t->block = 0;
	else if (!strcmp(l->block, "first"))
		t->block = -1;
	else if (parse_int_in(l->block, 1, 999, &num) == 0)
		t->block = (int)num;
	else
		return error("--block takes first, last or a block number from 1");
	t->base_url = xstrdup(url);
	for (size_t n = strlen(t->base_url); n > 1 && t->base_url[n - 1] == '/'; n--)
		t->base_url[n - 1] = 0;
	return 0;
}

int llm_cli_key(const struct llm_provider *p, const char *base_url, const char *named,
		struct llm_key *k, int quiet)
{
	char err[256];
	if (llm_key_find(p, base_url, named, k, err, sizeof err) < 0) {
		error("%s", err);
		if (named)
			hint("export %s=... before running pkb", named);
		return -1;
	}
	if (k->withheld && !quiet) {
		warning("%s is not sent to %s: a provider's key goes only to its own endpoint",
			k->withheld, base_url);
		hint("--api-key-env %s sends it there", k->withheld);
	}
	return 0;
}

void llm_hint_status(long status, const struct llm_key *k)
{
	if (status == 401 || status == 403) {
		if (k->var)
			hint("check the API key (%s)", k->var);
		else
			hint("no key was sent to this endpoint: --api-key-env NAME sends the one in "
			     "variable NAME");
	} else if (status == 404) {
		hint("check --model and --base-url");
	} else {
		hint("check the request's parameters");
	}
}
