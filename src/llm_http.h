/*
 * llm_http.h -- the HTTP side of a model request, shared by `pkb generate`
 * (libcurl's multi interface, J at once) and `pkb agent` (one at a time):
 * the configured easy handle, the retry policy (which statuses, how long to
 * wait) and a blocking request with retries.
 */
#ifndef PKB_LLM_HTTP_H
#define PKB_LLM_HTTP_H

#include <curl/curl.h>
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

/* One request, retried on network errors and llm_http_retryable statuses
 * up to `retries` times, never past `until_s` (now_ns clock, seconds; 0:
 * no limit). 0 with *status 200 and the body in *out; 0 with another
 * status (not retryable, or retries spent: the body in *out); -1 when no
 * reply came (network, timeout), with err set. *attempts counts them. */
int llm_http_post(const struct llm_request *rq, const char *body, double timeout_s, int retries,
		  double backoff_s, double until_s, long *status, struct llm_http_buf *out,
		  int *attempts, char *err, size_t n);

/* The request options of generate and agent (opts.h): --model,
 * --provider, --base-url, --temperature, --max-tokens, --timeout,
 * --retries, --backoff, --block. llm_cli_opt handles one: 1, 0 when not
 * one, -1 bad (after error()). */
struct llm_cli {
	const char *model, *provider, *base_url, *block;
	double temperature;   /* < 0: the provider's own */
	double timeout_s, backoff_s;
	int max_tokens, retries;
};
#define LLM_CLI_DEFAULTS { .block = "last", .temperature = -1, .timeout_s = 600, \
			   .backoff_s = 2, .max_tokens = 16384, .retries = 6 }
enum { LLM_OPT_MODEL = 1200, LLM_OPT_PROVIDER, LLM_OPT_BASE, LLM_OPT_TEMP, LLM_OPT_MAXTOK,
       LLM_OPT_TIMEOUT, LLM_OPT_RETRIES, LLM_OPT_BACKOFF, LLM_OPT_BLOCK };
extern const struct opt llm_opts_table[];
int llm_cli_opt(struct llm_cli *l, int c, const char *arg);

#endif
