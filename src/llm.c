/*
 * llm.c -- the three request/response shapes of llm.h (docs/GENERATE.md
 * cites the public API reference each follows) and the code-block
 * extraction. No I/O here: llm_http.c sends and receives, and the unit
 * test drives these functions directly.
 */
#include "llm.h"
#include "util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The five names users pick from. OpenAI deprecated max_tokens for
 * max_completion_tokens in its own API; the compatible servers (Together,
 * vLLM, SGLang, llama.cpp, OpenRouter) all read max_tokens. */
static const struct llm_provider providers[] = {
	{ .name = "openai", .api = LLM_OPENAI, .base_url = "https://api.openai.com/v1",
	  .key_env = { "OPENAI_API_KEY" }, .max_tokens_field = "max_completion_tokens" },
	{ .name = "together", .api = LLM_OPENAI, .base_url = "https://api.together.xyz/v1",
	  .key_env = { "TOGETHER_API_KEY" }, .max_tokens_field = "max_tokens" },
	{ .name = "openai-compatible", .api = LLM_OPENAI, .base_url = NULL,
	  .key_env = { "OPENAI_API_KEY" }, .key_optional = 1, .max_tokens_field = "max_tokens" },
	{ .name = "anthropic", .api = LLM_ANTHROPIC, .base_url = "https://api.anthropic.com/v1",
	  .key_env = { "ANTHROPIC_API_KEY" }, .max_tokens_field = "max_tokens" },
	{ .name = "gemini", .api = LLM_GEMINI,
	  .base_url = "https://generativelanguage.googleapis.com/v1beta",
	  .key_env = { "GEMINI_API_KEY", "GOOGLE_API_KEY" }, .max_tokens_field = "maxOutputTokens" },
};

const struct llm_provider *llm_provider_find(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(providers); i++)
		if (!strcmp(providers[i].name, name))
			return &providers[i];
	return NULL;
}

const char *llm_provider_names(void)
{
	return "openai, together, openai-compatible, anthropic, gemini";
}

int llm_env_name_valid(const char *name)
{
	if (!name || !(*name == '_' || isalpha((unsigned char)*name)))
		return 0;
	for (const char *c = name; *c; c++)
		if (!(*c == '_' || isalnum((unsigned char)*c)))
			return 0;
	return 1;
}

int llm_key_find(const struct llm_provider *p, const char *base_url, const char *named,
		 struct llm_key *k, char *err, size_t n)
{
	memset(k, 0, sizeof *k);
	/* issue 38: OPENAI_API_KEY went to whatever --base-url said. A key
	 * belongs to one provider; another endpoint gets one only when the
	 * user names the variable that holds it. */
	int own = p->base_url && base_url && !strcmp(base_url, p->base_url);
	if (named) {
		const char *v = getenv(named);
		if (!v || !*v) {
			snprintf(err, n, "--api-key-env names %s, which is %s", named,
				 v ? "empty" : "not set");
			return -1;
		}
		k->key = v;
		k->var = named;
		return 0;
	}
	for (int i = 0; i < 2 && p->key_env[i]; i++) {
		const char *v = getenv(p->key_env[i]);
		if (!v || !*v)
			continue;
		if (own) {
			k->key = v;
			k->var = p->key_env[i];
			return 0;
		}
		if (!k->withheld)
			k->withheld = p->key_env[i];
	}
	if (own && !p->key_optional) {
		snprintf(err, n, "no API key for '%s': set %s%s%s", p->name, p->key_env[0],
			 p->key_env[1] ? " or " : "", p->key_env[1] ? p->key_env[1] : "");
		return -1;
	}
	return 0;
}

/* ---- requests --------------------------------------------------------------- */

char *llm_url(const struct llm_request *r)
{
	switch (r->prov->api) {
	case LLM_OPENAI: return xstrfmt("%s/chat/completions", r->base_url);
	case LLM_ANTHROPIC: return xstrfmt("%s/messages", r->base_url);
	case LLM_GEMINI: break;
	}
	/* the model may be given as "models/NAME" (what the models list returns) */
	const char *m = strncmp(r->model, "models/", 7) ? r->model : r->model + 7;
	return xstrfmt("%s/models/%s:generateContent", r->base_url, m);
}

/* the conversation in the API's shape: the first user message, then the
 * turns; Gemini calls the model's role "model", the others "assistant" */
static json_t *messages(const struct llm_request *r)
{
	int gem = r->prov->api == LLM_GEMINI;
	json_t *m = json_array();
	for (int i = -1; i < r->n_turns; i++) {
		int asst = i >= 0 && r->turns[i].assistant;
		const char *text = i < 0 ? r->user : r->turns[i].text;
		const char *role = asst ? (gem ? "model" : "assistant") : "user";
		json_array_append_new(m, gem ? json_pack("{s:s,s:[{s:s}]}", "role", role, "parts",
							 "text", text)
					     : json_pack("{s:s,s:s}", "role", role, "content", text));
	}
	return m;
}

json_t *llm_body(const struct llm_request *r)
{
	json_t *b, *m = messages(r);
	switch (r->prov->api) {
	case LLM_OPENAI:
		json_array_insert_new(m, 0, json_pack("{s:s,s:s}", "role", "system", "content",
						      r->system));
		b = json_pack("{s:s,s:o,s:i}", "model", r->model, "messages", m,
			      r->prov->max_tokens_field, r->max_tokens);
		break;
	case LLM_ANTHROPIC:
		b = json_pack("{s:s,s:i,s:s,s:o}", "model", r->model, "max_tokens", r->max_tokens,
			      "system", r->system, "messages", m);
		break;
	default: {
		json_t *gen = json_pack("{s:i}", "maxOutputTokens", r->max_tokens);
		if (r->temperature >= 0)
			json_object_set_new(gen, "temperature", json_real(r->temperature));
		return json_pack("{s:{s:[{s:s}]},s:o,s:o}", "systemInstruction", "parts", "text",
				 r->system, "contents", m, "generationConfig", gen);
	}
	}
	if (!b)
		BUG("llm_body: json_pack");
	if (r->temperature >= 0)
		json_object_set_new(b, "temperature", json_real(r->temperature));
	return b;
}

char **llm_headers(const struct llm_request *r)
{
	char **h = xcalloc(5, sizeof *h);
	int n = 0;
	h[n++] = xstrdup("Content-Type: application/json");
	switch (r->prov->api) {
	case LLM_OPENAI:
		if (r->key)
			h[n++] = xstrfmt("Authorization: Bearer %s", r->key);
		break;
	case LLM_ANTHROPIC:
		if (r->key)
			h[n++] = xstrfmt("x-api-key: %s", r->key);
		/* the version whose shapes docs/GENERATE.md describes */
		h[n++] = xstrdup("anthropic-version: 2023-06-01");
		break;
	case LLM_GEMINI:
		if (r->key)
			h[n++] = xstrfmt("x-goog-api-key: %s", r->key);
		break;
	}
	return h;
}

void llm_headers_free(char **h)
{
	if (!h)
		return;
	for (char **p = h; *p; p++) {
		/* the key was in here: leave no copy in freed memory */
		memset(*p, 0, strlen(*p));
		free(*p);
	}
	free(h);
}

/* ---- replies ---------------------------------------------------------------- */

static long long tokens(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

static int is_type(json_t *el, const char *type_key, const char *type)
{
	const char *t = type_key ? json_string_value(json_object_get(el, type_key)) : NULL;
	return !type_key || (t && !strcmp(t, type));
}

/* the text of an array of parts/blocks: every element's "text" joined */
static char *join_text(json_t *arr, const char *type_key, const char *type)
{
	size_t i, total = 0;
	json_t *el;
	json_array_foreach(arr, i, el) {
		json_t *t = json_object_get(el, "text");
		if (json_is_string(t) && is_type(el, type_key, type))
			total += json_string_length(t);
	}
	char *s = xmalloc(total + 1), *p = s;
	json_array_foreach(arr, i, el) {
		json_t *t = json_object_get(el, "text");
		if (json_is_string(t) && is_type(el, type_key, type)) {
			memcpy(p, json_string_value(t), json_string_length(t));
			p += json_string_length(t);
		}
	}
	*p = 0;
	return s;
}

static int bad(struct llm_reply *r, const char *why)
{
	snprintf(r->err, sizeof r->err, "%s", why);
	free(r->text);
	r->text = NULL;
	return -1;
}

int llm_parse(enum llm_api api, const char *body, size_t len, struct llm_reply *r,
	      json_t **json)
{
	memset(r, 0, sizeof *r);
	r->tokens_in = r->tokens_out = -1;
	json_error_t je;
	json_t *doc = json_loadb(body, len, 0, &je);
	*json = doc;
	if (!json_is_object(doc)) {
		r->foreign = 1;
		return bad(r, doc ? "the reply is not a JSON object" : "the reply is not JSON");
	}
	/* a 200 that carries an error object (routers send them for an
	 * upstream failure): the model never answered either */
	json_t *e = json_object_get(doc, "error");
	if (e && !json_is_null(e)) {
		r->foreign = 1;
		const char *m = json_string_value(json_object_get(e, "message"));
		snprintf(r->err, sizeof r->err, "an error object in a 200: %.100s",
			 m ? m : json_is_string(e) ? json_string_value(e) : "(no message)");
		return -1;
	}
	const char *finish = NULL;
	switch (api) {
	case LLM_OPENAI: {
		json_t *c0 = json_array_get(json_object_get(doc, "choices"), 0);
		json_t *content = json_object_get(json_object_get(c0, "message"), "content");
		finish = json_string_value(json_object_get(c0, "finish_reason"));
		r->truncated = finish && !strcmp(finish, "length");
		/* a reasoning model can spend the whole limit thinking: content
		 * null, finish_reason length -- truncated, not malformed */
		if (!json_is_string(content) && !(r->truncated && json_is_null(content)))
			return bad(r, "no choices[0].message.content");
		r->text = xstrdup(json_is_string(content) ? json_string_value(content) : "");
		json_t *u = json_object_get(doc, "usage");
		r->tokens_in = tokens(u, "prompt_tokens");
		r->tokens_out = tokens(u, "completion_tokens");
		break;
	}
	case LLM_ANTHROPIC: {
		json_t *content = json_object_get(doc, "content");
		if (!json_is_array(content))
			return bad(r, "no content array");
		r->text = join_text(content, "type", "text");
		finish = json_string_value(json_object_get(doc, "stop_reason"));
		r->truncated = finish && !strcmp(finish, "max_tokens");
		json_t *u = json_object_get(doc, "usage");
		r->tokens_in = tokens(u, "input_tokens");
		r->tokens_out = tokens(u, "output_tokens");
		break;
	}
	case LLM_GEMINI: {
		json_t *c0 = json_array_get(json_object_get(doc, "candidates"), 0);
		finish = json_string_value(json_object_get(c0, "finishReason"));
		json_t *parts = json_object_get(json_object_get(c0, "content"), "parts");
		r->truncated = finish && !strcmp(finish, "MAX_TOKENS");
		/* a candidate cut at the limit before any text has no parts */
		if (!json_is_array(parts) && !r->truncated)
			return bad(r, "no candidates[0].content.parts");
		r->text = json_is_array(parts) ? join_text(parts, NULL, NULL) : xstrdup("");
		json_t *u = json_object_get(doc, "usageMetadata");
		r->tokens_in = tokens(u, "promptTokenCount");
		r->tokens_out = tokens(u, "candidatesTokenCount");
		break;
	}
	}
	snprintf(r->finish, sizeof r->finish, "%s", finish ? finish : "");
	return 0;
}

void llm_reply_free(struct llm_reply *r)
{
	free(r->text);
	r->text = NULL;
}

/* ---- extraction ------------------------------------------------------------- */

static int code_lang(const char *s, size_t n, const char *ext)
{
	static const char *const c_langs[] = { "cuda", "cu", "cpp", "c++", "cxx", "cc", "c", "h",
					       NULL };
	static const char *const py_langs[] = { "python", "py", "python3", NULL };
	const char *const *langs = !strcmp(ext, "py") ? py_langs : c_langs;
	for (size_t i = 0; langs[i]; i++)
		if (strlen(langs[i]) == n && !strncasecmp(s, langs[i], n))
			return 1;
	return 0;
}

struct block {
	const char *s, *e;
	int tagged;
};

/* The fenced blocks of text (CommonMark: a fence is three or more backticks
 * at the start of a line, up to three spaces in; it closes on a line of at
 * least as many backticks). An unclosed block runs to the end. */
static int find_blocks(const char *text, const char *ext, struct block *b, int max)
{
	int n = 0;
	const char *l = text;
	while (*l) {
		const char *next = strchr(l, '\n');
		next = next ? next + 1 : l + strlen(l);
		const char *p = l;
		int ind = 0;
		while (*p == ' ' && ind < 3)
			p++, ind++;
		size_t ticks = strspn(p, "`");
		if (ticks < 3) {
			l = next;
			continue;
		}
		const char *info = p + ticks;
		while (*info == ' ')
			info++;
		size_t ilen = strcspn(info, " \t\r\n{");
		struct block cur = { .s = next, .e = NULL, .tagged = code_lang(info, ilen, ext) };
		int untagged = ilen == 0;
		for (l = next; *l; ) {
			const char *nx = strchr(l, '\n');
			nx = nx ? nx + 1 : l + strlen(l);
			const char *q = l;
			while (*q == ' ')
				q++;
			size_t t = strspn(q, "`");
			if (t >= ticks && strspn(q + t, " \t\r") == strcspn(q + t, "\n")) {
				cur.e = l;
				l = nx;
				break;
			}
			l = nx;
		}
		if (!cur.e)
			cur.e = l;
		if ((cur.tagged || untagged) && n < max)
			b[n++] = cur;
	}
	return n;
}

char *llm_extract(const char *text, const char *ext, int which, int *n_blocks)
{
	struct block all[256], pick[256];
	int n_all = find_blocks(text, ext, all, 256), n = 0;
	for (int i = 0; i < n_all; i++)
		if (all[i].tagged)
			pick[n++] = all[i];
	if (!n)   /* untagged blocks count only when no block is tagged */
		for (int i = 0; i < n_all; i++)
			pick[n++] = all[i];
	*n_blocks = n;
	int k = which == 0 ? n - 1 : which < 0 ? 0 : which - 1;
	if (!n || k >= n)
		return NULL;
	size_t len = pick[k].e - pick[k].s;
	char *s = xmalloc(len + 1);
	memcpy(s, pick[k].s, len);
	s[len] = 0;
	return s;
}
