/*
 * llm.h -- the model providers of `pkb generate`, as pure functions: the
 * URL, headers and JSON body of one request, the reading of one reply, and
 * the extraction of the candidate from its text (docs/GENERATE.md). The
 * HTTP itself (libcurl's multi interface) is llm_http.c's, for generate and
 * agent alike.
 */
#ifndef PKB_LLM_H
#define PKB_LLM_H

#include <jansson.h>
#include <stddef.h>

enum llm_api {
	LLM_OPENAI,      /* POST {base}/chat/completions, Authorization: Bearer */
	LLM_ANTHROPIC,   /* POST {base}/messages, x-api-key, anthropic-version */
	LLM_GEMINI,      /* POST {base}/models/{model}:generateContent, x-goog-api-key */
};

struct llm_provider {
	const char *name;         /* openai, together, openai-compatible, anthropic, gemini */
	enum llm_api api;
	const char *base_url;     /* NULL: --base-url is required */
	const char *key_env[2];   /* tried in order */
	int key_optional;         /* a local server may need none */
	const char *max_tokens_field;   /* OpenAI: max_completion_tokens; others max_tokens */
};

/* NULL if unknown */
const struct llm_provider *llm_provider_find(const char *name);
/* "openai, together, ..." for messages */
const char *llm_provider_names(void);

/* Which key a request carries (docs/GENERATE.md, "Keys"). A provider's own
 * variable (OPENAI_API_KEY ...) goes only to that provider's own endpoint:
 * base_url equal to its default. Any other endpoint (a local server, a
 * proxy, a router) gets the value of the variable `named` (--api-key-env),
 * or no key at all. */
struct llm_key {
	const char *key;          /* the value (getenv's), or NULL: none is sent */
	const char *var;          /* the variable it came from, or NULL */
	const char *withheld;     /* a provider variable that is set but not sent
				   * (another endpoint), for a note; or NULL */
};
/* 0, or -1 with a one-line reason in err: `named` is not set or empty, or
 * the provider's own endpoint needs a key and none of its variables is set */
int llm_key_find(const struct llm_provider *p, const char *base_url, const char *named,
		 struct llm_key *k, char *err, size_t n);
/* a name the environment can hold: [A-Za-z_][A-Za-z0-9_]* */
int llm_env_name_valid(const char *name);

/* One later turn of a conversation (pkb agent): the model's own reply, or
 * the user's next message. */
struct llm_turn {
	int assistant;            /* 1: the model said it; 0: the user */
	const char *text;
};

struct llm_request {
	const struct llm_provider *prov;
	const char *base_url;     /* no trailing slash */
	const char *model;
	const char *key;          /* may be NULL where optional */
	const char *system, *user;
	/* the turns after the first user message, alternating assistant, user,
	 * ... (n_turns even: the request ends on a user turn); none for one-shot */
	const struct llm_turn *turns;
	int n_turns;
	double temperature;       /* < 0: not sent (the provider's default) */
	int max_tokens;
};

/* the URL to POST to (malloc'd) */
char *llm_url(const struct llm_request *r);
/* the request body (new reference) */
json_t *llm_body(const struct llm_request *r);
/* the header lines, "Name: value", NULL-terminated, malloc'd (free each
 * with llm_headers_free): they hold the key, so they go nowhere but libcurl */
char **llm_headers(const struct llm_request *r);
void llm_headers_free(char **h);

/* What one reply says. */
struct llm_reply {
	char *text;               /* the model's text (malloc'd), or NULL */
	char finish[48];          /* the provider's own finish reason */
	int truncated;            /* it stopped at the token limit */
	long long tokens_in, tokens_out;   /* -1: not reported */
	char err[160];            /* why it is a bad reply */
	int foreign;              /* a bad reply that is not JSON at all (a proxy's
				   * HTML error page): the provider never answered */
};

/* 0, or -1 (a bad reply: not JSON, or without the fields the API promises)
 * with r->err set; `json` gets the parsed document (or NULL) */
int llm_parse(enum llm_api api, const char *body, size_t len, struct llm_reply *r,
	      json_t **json);
void llm_reply_free(struct llm_reply *r);

/* The candidate in a reply's text: the fenced blocks tagged cuda, cu, cpp,
 * c++, cxx, cc, c or h where `ext` is "cu", python or py where it is "py"
 * (a triton candidate's file), or untagged, when no block is tagged;
 * `which` is 0 for the last, -1 for the first, N >= 1 for the Nth. The
 * block's text (malloc'd) or NULL; *n_blocks gets how many there were. */
char *llm_extract(const char *text, const char *ext, int which, int *n_blocks);

#endif
