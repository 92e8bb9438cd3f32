/*
 * test_llm.c -- the provider layer (src/llm.c) without a network: the URL,
 * headers and body of each API, the reading of each reply shape (and of
 * malformed ones), and the code-block extraction.
 */
#define _POSIX_C_SOURCE 200809L   /* setenv */
#include "llm.h"
#include "t.h"

#include <stdlib.h>
#include <string.h>

static int has_header(char **h, const char *line)
{
	for (; *h; h++)
		if (!strcmp(*h, line))
			return 1;
	return 0;
}

static int n_headers(char **h)
{
	int n = 0;
	while (h[n])
		n++;
	return n;
}

static void test_requests(void)
{
	const struct llm_provider *oa = llm_provider_find("openai"),
				  *tg = llm_provider_find("together"),
				  *oc = llm_provider_find("openai-compatible"),
				  *an = llm_provider_find("anthropic"),
				  *ge = llm_provider_find("gemini");
	CHECK(oa && tg && oc && an && ge && !llm_provider_find("OpenAI") && !llm_provider_find(""));
	CHECK(!oc->base_url && oc->key_optional && !oa->key_optional);
	CHECK(!strcmp(ge->key_env[0], "GEMINI_API_KEY") && !strcmp(ge->key_env[1], "GOOGLE_API_KEY"));

	struct llm_request r = { .prov = oa, .base_url = "https://api.openai.com/v1", .model = "gpt-x",
				 .key = "KEY1", .system = "sys", .user = "usr", .temperature = -1,
				 .max_tokens = 123 };
	char *url = llm_url(&r);
	CHECK(!strcmp(url, "https://api.openai.com/v1/chat/completions"));
	free(url);
	char **h = llm_headers(&r);
	CHECK(has_header(h, "Authorization: Bearer KEY1") && has_header(h, "Content-Type: application/json"));
	CHECK(n_headers(h) == 2);
	llm_headers_free(h);
	json_t *b = llm_body(&r);
	CHECK(json_integer_value(json_object_get(b, "max_completion_tokens")) == 123);
	CHECK(!json_object_get(b, "temperature") && !json_object_get(b, "max_tokens"));
	json_t *msgs = json_object_get(b, "messages");
	CHECK(json_array_size(msgs) == 2);
	CHECK(!strcmp(json_string_value(json_object_get(json_array_get(msgs, 0), "role")), "system"));
	CHECK(!strcmp(json_string_value(json_object_get(json_array_get(msgs, 1), "content")), "usr"));
	json_decref(b);

	r.prov = tg;
	r.temperature = 0.25;
	b = llm_body(&r);
	CHECK(json_integer_value(json_object_get(b, "max_tokens")) == 123);
	CHECK(json_real_value(json_object_get(b, "temperature")) == 0.25);
	json_decref(b);

	r.prov = oc;
	r.key = NULL;
	h = llm_headers(&r);
	CHECK(n_headers(h) == 1);   /* no key, no Authorization */
	llm_headers_free(h);

	r.prov = an;
	r.key = "KEY2";
	r.base_url = "https://api.anthropic.com/v1";
	url = llm_url(&r);
	CHECK(!strcmp(url, "https://api.anthropic.com/v1/messages"));
	free(url);
	h = llm_headers(&r);
	CHECK(has_header(h, "x-api-key: KEY2") && has_header(h, "anthropic-version: 2023-06-01"));
	CHECK(n_headers(h) == 3);
	llm_headers_free(h);
	b = llm_body(&r);
	CHECK(!strcmp(json_string_value(json_object_get(b, "system")), "sys"));
	CHECK(json_integer_value(json_object_get(b, "max_tokens")) == 123);
	CHECK(json_array_size(json_object_get(b, "messages")) == 1);
	json_decref(b);

	r.prov = ge;
	r.key = "KEY3";
	r.model = "models/gemini-x";
	r.base_url = "https://generativelanguage.googleapis.com/v1beta";
	url = llm_url(&r);
	CHECK(!strcmp(url, "https://generativelanguage.googleapis.com/v1beta/models/gemini-x:generateContent"));
	CHECK(!strstr(url, "KEY3"));
	free(url);
	h = llm_headers(&r);
	CHECK(has_header(h, "x-goog-api-key: KEY3") && n_headers(h) == 2);
	llm_headers_free(h);
	b = llm_body(&r);
	json_t *gc = json_object_get(b, "generationConfig");
	CHECK(json_integer_value(json_object_get(gc, "maxOutputTokens")) == 123);
	CHECK(json_real_value(json_object_get(gc, "temperature")) == 0.25);
	CHECK(!strcmp(json_string_value(json_object_get(json_array_get(json_object_get(
		  json_object_get(b, "systemInstruction"), "parts"), 0), "text")), "sys"));
	json_decref(b);
}

static int parse(enum llm_api api, const char *body, struct llm_reply *r)
{
	json_t *doc = NULL;
	int rc = llm_parse(api, body, strlen(body), r, &doc);
	json_decref(doc);
	return rc;
}

static void test_replies(void)
{
	struct llm_reply r;
	CHECK(parse(LLM_OPENAI, "{\"choices\":[{\"message\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}],"
			       "\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3}}", &r) == 0);
	CHECK(!strcmp(r.text, "hi") && !r.truncated && r.tokens_in == 7 && r.tokens_out == 3);
	CHECK(!strcmp(r.finish, "stop"));
	llm_reply_free(&r);
	CHECK(parse(LLM_OPENAI, "{\"choices\":[{\"message\":{\"content\":\"x\"},\"finish_reason\":\"length\"}]}", &r) == 0);
	CHECK(r.truncated && r.tokens_in == -1);
	llm_reply_free(&r);
	/* all the limit spent on reasoning: no content, cut at the limit */
	CHECK(parse(LLM_OPENAI, "{\"choices\":[{\"message\":{\"content\":null},\"finish_reason\":\"length\"}]}", &r) == 0);
	CHECK(r.truncated && !strcmp(r.text, ""));
	llm_reply_free(&r);
	/* what the provider never wrote (a proxy's page, a router's error
	 * object) is foreign: retried, and never a sample's outcome */
	CHECK(parse(LLM_OPENAI, "{\"error\":{\"message\":\"upstream\"}}", &r) < 0);
	CHECK(r.foreign && strstr(r.err, "upstream"));
	CHECK(parse(LLM_OPENAI, "<!DOCTYPE html><html>502</html>", &r) < 0 && r.foreign);
	CHECK(parse(LLM_OPENAI, "{\"choices\":[],\"error\":null}", &r) < 0 && !r.foreign);
	CHECK(parse(LLM_OPENAI, "{\"choices\":[]}", &r) < 0 && strstr(r.err, "choices[0]"));
	CHECK(parse(LLM_OPENAI, "{\"choices\":[{\"message\":{\"content\":null}}]}", &r) < 0);
	CHECK(parse(LLM_OPENAI, "not json", &r) < 0 && !strcmp(r.err, "the reply is not JSON"));
	CHECK(parse(LLM_OPENAI, "[1,2]", &r) < 0 && strstr(r.err, "not a JSON object"));
	CHECK(parse(LLM_OPENAI, "", &r) < 0);

	/* Anthropic: the text blocks joined, a thinking block left out */
	CHECK(parse(LLM_ANTHROPIC, "{\"content\":[{\"type\":\"thinking\",\"thinking\":\"hm\",\"text\":\"NO\"},"
				  "{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}],"
				  "\"stop_reason\":\"end_turn\",\"usage\":{\"input_tokens\":5,\"output_tokens\":2}}", &r) == 0);
	CHECK(!strcmp(r.text, "ab") && !r.truncated && r.tokens_in == 5 && r.tokens_out == 2);
	llm_reply_free(&r);
	CHECK(parse(LLM_ANTHROPIC, "{\"content\":[],\"stop_reason\":\"max_tokens\"}", &r) == 0);
	CHECK(r.truncated && !strcmp(r.text, ""));
	llm_reply_free(&r);
	CHECK(parse(LLM_ANTHROPIC, "{\"type\":\"error\"}", &r) < 0);

	CHECK(parse(LLM_GEMINI, "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"x\"},{\"text\":\"y\"}]},"
			       "\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":9,"
			       "\"candidatesTokenCount\":4}}", &r) == 0);
	CHECK(!strcmp(r.text, "xy") && r.tokens_in == 9 && r.tokens_out == 4 && !r.truncated);
	llm_reply_free(&r);
	/* cut at the limit before any text: no parts, still truncated */
	CHECK(parse(LLM_GEMINI, "{\"candidates\":[{\"content\":{},\"finishReason\":\"MAX_TOKENS\"}]}", &r) == 0);
	CHECK(r.truncated);
	llm_reply_free(&r);
	CHECK(parse(LLM_GEMINI, "{\"candidates\":[{\"finishReason\":\"SAFETY\"}]}", &r) < 0);
	CHECK(!r.foreign);   /* the provider's own answer: an outcome */
	CHECK(parse(LLM_ANTHROPIC, "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
				  "\"message\":\"Overloaded\"}}", &r) < 0 && r.foreign);
	CHECK(parse(LLM_GEMINI, "{\"promptFeedback\":{}}", &r) < 0);
}

static int extract_ext_is(const char *text, const char *ext, int which, const char *want,
			  int want_n)
{
	int n = -1;
	char *s = llm_extract(text, ext, which, &n);
	int ok = n == want_n && (want ? s && !strcmp(s, want) : !s);
	if (!ok)
		fprintf(stderr, "extract(%d): got '%s' of %d, want '%s' of %d\n", which,
			s ? s : "(null)", n, want ? want : "(null)", want_n);
	free(s);
	return ok;
}

static int extract_is(const char *text, int which, const char *want, int want_n)
{
	return extract_ext_is(text, "cu", which, want, want_n);
}

static void test_extract(void)
{
	const char *two = "intro\n```cpp\nA\n```\nmid\n```cuda\nB\nB2\n```\nend\n";
	CHECK(extract_is(two, 0, "B\nB2\n", 2));
	CHECK(extract_is(two, -1, "A\n", 2));
	CHECK(extract_is(two, 1, "A\n", 2));
	CHECK(extract_is(two, 2, "B\nB2\n", 2));
	CHECK(extract_is(two, 3, NULL, 2));
	/* other languages do not count; untagged only when nothing is tagged */
	CHECK(extract_is("```python\nP\n```\n```cu\nC\n```\n```\nU\n```\n", 0, "C\n", 1));
	CHECK(extract_is("```bash\nnvcc x\n```\n", 0, NULL, 0));
	CHECK(extract_is("```\nU\n```\n", 0, "U\n", 1));
	CHECK(extract_is("no code here", 0, NULL, 0));
	CHECK(extract_is("", 0, NULL, 0));
	/* tags in any case, with attributes; C++, c, cuda */
	CHECK(extract_is("```CUDA title=\"k.cu\"\nK\n```\n", 0, "K\n", 1));
	CHECK(extract_is("```c++\nX\n```", 0, "X\n", 1));
	/* a longer fence holds a shorter one */
	CHECK(extract_is("````cuda\na\n```\nb\n````\n", 0, "a\n```\nb\n", 1));
	/* indented fences, CRLF line ends */
	CHECK(extract_is("  ```cuda\r\nI\r\n  ```\r\n", 0, "I\r\n", 1));
	/* an unclosed block runs to the end */
	CHECK(extract_is("```cuda\nopen\nstill", 0, "open\nstill", 1));
	/* a fence line with text after the backticks does not close */
	CHECK(extract_is("```cuda\nx\n```not a close\ny\n```\n", 0, "x\n```not a close\ny\n", 1));
	/* a triton candidate is Python: its tags count, C's do not */
	CHECK(extract_ext_is("```python\nP\n```\n```cu\nC\n```\n", "py", 0, "P\n", 1));
	CHECK(extract_ext_is("```cuda\nC\n```\n```Python3\nQ\n```\n```py\nR\n```\n", "py", -1,
			     "Q\n", 2));
	CHECK(extract_ext_is("```\nU\n```\n", "py", 0, "U\n", 1));
}

static const char *role_text(json_t *m, int gemini, const char **role)
{
	*role = json_string_value(json_object_get(m, "role"));
	json_t *t = gemini ? json_object_get(json_array_get(json_object_get(m, "parts"), 0), "text")
			   : json_object_get(m, "content");
	return json_string_value(t);
}

/* pkb agent's conversations: the later turns follow the first user message
 * in each API's shape, ending on the user's turn */
static void test_turns(void)
{
	static const struct llm_turn turns[] = { { 1, "code 1" }, { 0, "feedback 1" },
						 { 1, "code 2" }, { 0, "feedback 2" } };
	const char *names[] = { "openai", "anthropic", "gemini" };
	for (int k = 0; k < 3; k++) {
		struct llm_request r = { .prov = llm_provider_find(names[k]), .base_url = "u",
					 .model = "m", .system = "sys", .user = "usr",
					 .temperature = -1, .max_tokens = 9, .turns = turns,
					 .n_turns = 4 };
		json_t *b = llm_body(&r);
		int gem = k == 2, off = k == 0;   /* OpenAI's system message comes first */
		json_t *msgs = json_object_get(b, gem ? "contents" : "messages");
		CHECKF(json_array_size(msgs) == (size_t)(5 + off), "%s", names[k]);
		const char *role, *text = role_text(json_array_get(msgs, off), gem, &role);
		CHECK(text && !strcmp(text, "usr") && !strcmp(role, "user"));
		text = role_text(json_array_get(msgs, off + 1), gem, &role);
		CHECK(text && !strcmp(text, "code 1") && !strcmp(role, gem ? "model" : "assistant"));
		text = role_text(json_array_get(msgs, off + 4), gem, &role);
		CHECK(text && !strcmp(text, "feedback 2") && !strcmp(role, "user"));
		if (k == 1)
			CHECK(!strcmp(json_string_value(json_object_get(b, "system")), "sys"));
		json_decref(b);
	}
}

/* issue 38: a provider's key goes to its own endpoint only */
static void test_keys(void)
{
	const struct llm_provider *oa = llm_provider_find("openai"),
				  *oc = llm_provider_find("openai-compatible"),
				  *gm = llm_provider_find("gemini");
	struct llm_key k;
	char err[256];
	setenv("OPENAI_API_KEY", "sk-oa", 1);
	setenv("MYKEY", "sk-my", 1);
	unsetenv("GEMINI_API_KEY");
	setenv("GOOGLE_API_KEY", "g-key", 1);
	CHECK(llm_key_find(oa, "https://api.openai.com/v1", NULL, &k, err, sizeof err) == 0);
	CHECK(k.key && !strcmp(k.key, "sk-oa") && !strcmp(k.var, "OPENAI_API_KEY") && !k.withheld);
	/* another endpoint: no key, the provider's variable named as withheld */
	CHECK(llm_key_find(oa, "http://127.0.0.1:8000/v1", NULL, &k, err, sizeof err) == 0);
	CHECK(!k.key && !k.var && k.withheld && !strcmp(k.withheld, "OPENAI_API_KEY"));
	CHECK(llm_key_find(oa, "https://api.openai.com.evil.example/v1", NULL, &k, err, sizeof err) == 0);
	CHECK(!k.key);
	CHECK(llm_key_find(oc, "http://localhost:8000/v1", NULL, &k, err, sizeof err) == 0 && !k.key);
	/* named: that variable, at any endpoint */
	CHECK(llm_key_find(oc, "http://localhost:8000/v1", "MYKEY", &k, err, sizeof err) == 0);
	CHECK(k.key && !strcmp(k.key, "sk-my") && !strcmp(k.var, "MYKEY"));
	CHECK(llm_key_find(oa, "https://api.openai.com/v1", "MYKEY", &k, err, sizeof err) == 0);
	CHECK(!strcmp(k.key, "sk-my"));
	unsetenv("MYKEY");
	CHECK(llm_key_find(oc, "http://x/v1", "MYKEY", &k, err, sizeof err) < 0);
	CHECK(strstr(err, "MYKEY, which is not set"));
	setenv("MYKEY", "", 1);
	CHECK(llm_key_find(oc, "http://x/v1", "MYKEY", &k, err, sizeof err) < 0 && strstr(err, "empty"));
	/* Gemini's second variable, at its own endpoint */
	CHECK(llm_key_find(gm, "https://generativelanguage.googleapis.com/v1beta", NULL, &k, err,
			   sizeof err) == 0 && !strcmp(k.key, "g-key") && !strcmp(k.var, "GOOGLE_API_KEY"));
	/* the own endpoint without a key: an error naming the variables */
	unsetenv("GOOGLE_API_KEY");
	CHECK(llm_key_find(gm, "https://generativelanguage.googleapis.com/v1beta", NULL, &k, err,
			   sizeof err) < 0 && strstr(err, "set GEMINI_API_KEY or GOOGLE_API_KEY"));
	unsetenv("OPENAI_API_KEY");
	CHECK(llm_env_name_valid("MY_KEY2") && llm_env_name_valid("_k"));
	CHECK(!llm_env_name_valid("2KEY") && !llm_env_name_valid("MY-KEY") && !llm_env_name_valid(""));
}

int main(void)
{
	test_keys();
	test_requests();
	test_turns();
	test_replies();
	test_extract();
	return t_done("test_llm");
}
