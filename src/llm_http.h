/*
 * llm_http.h -- the HTTP side of a model request, shared by `pkb generate`
 * (libcurl's multi interface, J at once) and `pkb agent` (one at a time):
 * the configured easy handle, the retry policy (which statuses, how long to
 * wait) and a blocking request with retries.
 */
#ifndef PKB_LLM_HTTP_H
#define PKB_LLM_HTTP_H

#include <curl/curl.h>
#include <jansson.h>
#include <stddef.h>
#include "llm.h"   /* defines: struct llm_request */
#include "opts.h"  /* defines: struct opt */

struct llm_http_buf {
	char *s;
	size_t len;
};

/* An easy handle that POSTs body (kept by the caller until done) to the
 * request's URL with its headers (*hdr: the list, which holds the key; free
 * it with llm_http_free_headers), writing the reply into *out. */
CURL *llm_http_easy(const struct llm_request *rq, const char *body, double timeout_s,
		    struct curl_slist **hdr, struct llm_http_buf *out, char *errbuf);
void llm_http_free_headers(struct curl_slist *hdr);
/* 408, 409, 429, 5xx: worth another attempt; other 4xx meet every request */
int llm_http_retryable(long status);
/* Retry-After: seconds, or an HTTP date (RFC 9110 10.2.3); -1 if none */
double llm_http_retry_after(CURL *h);
/* the wait before attempt+1: min(300, backoff * 2^(attempt-1)) drawn from
 * [d/2, d) (jitter), at least `after` (the server's, capped at an hour) */
double llm_http_backoff(double backoff_s, int attempt, double after, unsigned *rng);

/* One failed attempt, for a record's "retried" list: {attempt,
 * http_status (null: no reply), error, body_head (the first 200 bytes of
 * what came back, with the key redacted; absent when nothing did)} */
json_t *llm_http_attempt(int attempt, long status, const char *why, const char *body,
			 size_t len, const char *key);

/* One request, retried on network errors, llm_http_retryable statuses and
 * bad replies (a 200 that llm_parse refuses: an HTML page, an error
 * object) up to `retries` times, never past `until_s` (now_ns clock,
 * seconds; 0: no limit). 0 with *status 200 and the body in *out (still a
 * bad reply when the retries ran out on one); 0 with another status (not
 * retryable, or retries spent: the body in *out); -1 when no reply came
 * (network, timeout), with err set. *attempts counts them; `tries` (may be
 * NULL) gets one llm_http_attempt per attempt that failed. */
int llm_http_post(const struct llm_request *rq, const char *body, double timeout_s, int retries,
		  double backoff_s, double until_s, long *status, struct llm_http_buf *out,
		  int *attempts, json_t *tries, char *err, size_t n);

/* The request options of generate and agent (opts.h): --model,
 * --provider, --base-url, --api-key-env, --temperature, --max-tokens,
 * --timeout, --retries, --backoff, --block. llm_cli_opt handles one: 1, 0
 * when not one, -1 bad (after error()). */
struct llm_cli {
	const char *model, *provider, *base_url, *block;
	const char *api_key_env;   /* --api-key-env NAME, or NULL */
	double temperature;   /* < 0: the provider's own */
	double timeout_s, backoff_s;
	int max_tokens, retries;
};
#define LLM_CLI_DEFAULTS { .block = "last", .temperature = -1, .timeout_s = 600, \
			   .backoff_s = 2, .max_tokens = 16384, .retries = 6 }
enum { LLM_OPT_MODEL = 1200, LLM_OPT_PROVIDER, LLM_OPT_BASE, LLM_OPT_TEMP, LLM_OPT_MAXTOK,
       LLM_OPT_TIMEOUT, LLM_OPT_RETRIES, LLM_OPT_BACKOFF, LLM_OPT_BLOCK, LLM_OPT_KEYENV };
extern const struct opt llm_opts_table[];
int llm_cli_opt(struct llm_cli *l, int c, const char *arg);

/* What generate and agent make of --provider, --base-url and --block: the
 * provider, its endpoint (--base-url, else the provider's own) without its
 * trailing slashes (malloc'd), and the block to take (-1 first, 0 last,
 * else its number from 1). 0, or -1 (said: a usage error) when the provider
 * is unknown, has no endpoint, or --block is none of those. */
struct llm_target {
	const struct llm_provider *prov;
	char *base_url;
	int block;
};
int llm_cli_target(const struct llm_cli *l, struct llm_target *t);

/* The key of a request (llm_key_find) with what the user should know said
 * on stderr: a provider variable withheld from another endpoint (a note),
 * or why none can be had (an error). 0 or -1 (exit 1). */
int llm_cli_key(const struct llm_provider *p, const char *base_url, const char *named,
		struct llm_key *k, int quiet);
/* the hint after a 401/403: the variable whose key was sent, or that none
 * was and how to send one */
void llm_hint_status(long status, const struct llm_key *k);

#endif
