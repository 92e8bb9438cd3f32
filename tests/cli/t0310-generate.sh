#!/bin/bash
# t0310-generate.sh -- pkb generate against a loopback stand-in of the three
# APIs (llm_server.py): the requests it receives, the files written, each
# extraction outcome, retries (429 with Retry-After, 500, a reply slower
# than the timeout), the stop on 401/404, resume (also after kill -9), and
# that the key reaches nothing but the request header.
. "$(dirname "$0")/lib.sh"
PKB=${PKB_BIN:-$PKB}   # PKB_BIN: another build of pkb (a sanitizer build)

KEY=sk-test-5f1e2d3c4b5a69788796a5b4c3d2e1f0
. "$(dirname "$0")/llm_lib.sh"
nreq() { wc -l <"$TMP/log"; }
# q EXPR: a Python expression over the request log (reqs: the list) and
# the run directory R; passes when true
q() {
	python3 - "$TMP/log" "$RUN" "$1" <<'PY'
import glob, hashlib, json, os, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
R = sys.argv[2]
def rec(p, k): return json.load(open(f"{R}/replies/{p:03d}/sample_{k}.json"))
def prompt_of(p, k): return json.load(open(R + "/" + rec(p, k)["prompt"]))
def sha(d): return hashlib.sha256(d["system"].encode() + b"\0" + d["user"].encode()).hexdigest()
def sent(r): return [m["content"] for m in r["body"]["messages"]]
def n_replies(): return len(glob.glob(f"{R}/replies/*/sample_*.json"))
def n_cands(): return len(glob.glob(f"{R}/candidates/*/sample_*.cu"))
sys.exit(0 if eval(sys.argv[3]) else 1)
PY
}
check() { if q "$1"; then ok; else not_ok "$1"; fi; }
no_key() {   # no_key FILE|DIR...: the key is nowhere in them
	if grep -rqF -- "$KEY" "$@" 2>/dev/null; then not_ok "the key is in $*"; else ok; fi
}
gen() { "$PKB" generate --backoff 0.05 "$@"; }

# ---- OpenAI: every outcome; a bad reply, 429 and 500 retried, then success --
start_server ok two nocode trunc badjson 429 500
RUN=$TMP/run1
export OPENAI_API_KEY=$KEY
expect_exit 0 gen --model gpt-test --provider openai --api-key-env OPENAI_API_KEY --base-url "http://127.0.0.1:$PORT/v1" \
	--problems 1-3 -k 2 -j 1 --temperature 0.5 --max-tokens 1000 --run "$RUN"
cp "$TMP/out" "$TMP/out1"; cp "$TMP/err" "$TMP/err1"
check 'len(reqs) == 9'
check 'all(r["path"] == "/v1/chat/completions" for r in reqs)'
check 'all(r["headers"]["authorization"] == "Bearer '"$KEY"'" for r in reqs)'
check 'all(r["headers"]["content-type"] == "application/json" for r in reqs)'
check 'all(r["body"]["model"] == "gpt-test" and r["body"]["max_completion_tokens"] == 1000 and r["body"]["temperature"] == 0.5 for r in reqs)'
check '[m["role"] for m in reqs[0]["body"]["messages"]] == ["system", "user"]'
check '"001_allreduce" in reqs[0]["body"]["messages"][1]["content"] and "003_broadcast" in reqs[8]["body"]["messages"][1]["content"]'
check 'n_replies() == 6 and n_cands() == 4'
check '[rec(1,0)["outcome"], rec(1,1)["outcome"], rec(2,0)["outcome"], rec(2,1)["outcome"], rec(3,0)["outcome"], rec(3,1)["outcome"]] == ["ok","ok","no_code","truncated","ok","ok"]'
check '"BLOCK-A" in open(R + "/candidates/001/sample_0.cu").read()'
check '"BLOCK-B" in open(R + "/candidates/001/sample_1.cu").read() and rec(1,1)["blocks_found"] == 2'
check 'rec(1,1)["candidate"] == "candidates/001/sample_1.cu" and rec(2,0)["candidate"] is None'
check 'rec(2,1)["finish_reason"] == "length" and not os.path.exists(R + "/candidates/002/sample_1.cu")'
# the bad reply was asked again within the retries, each attempt recorded;
# no_code and truncated are the model's answers, not asked again
check '[t["error"] for t in rec(3,0)["retried"]] == ["a bad reply (the reply is not JSON)", "HTTP 429", "HTTP 500"]'
check 'rec(3,0)["retried"][0]["http_status"] == 200 and rec(3,0)["retried"][0]["body_head"].startswith("{\"choices\": [ this")'
check '[t["attempt"] for t in rec(3,0)["retried"]] == [1, 2, 3] and rec(3,0)["retried"][1]["http_status"] == 429'
check 'rec(2,0)["attempts"] == 1 and rec(2,1)["attempts"] == 1 and rec(2,0)["retried"] == []'
check 'rec(1,0)["tokens_in"] == 1000 and rec(1,0)["tokens_out"] == 50 and rec(1,0)["latency_s"] >= 0'
check 'rec(3,0)["attempts"] == 4 and rec(3,1)["attempts"] == 1 and rec(1,0)["attempts"] == 1'
# Retry-After: 1 is waited out, though --backoff asks for 0.05 s
check 'reqs[6]["t"] - reqs[5]["t"] >= 1.0'
check 'rec(1,0)["prompt_sha256"] == json.load(open(R + "/run.json"))["args"]["prompt_sha256"]["001"]'
# the whole prompt beside the samples (issue 38): one file per distinct
# prompt, named by its hash, holding exactly what was sent
check 'sorted(os.listdir(R + "/prompts")) == sorted(rec(p,0)["prompt_sha256"] + ".json" for p in (1,2,3))'
check 'all(rec(p,k)["prompt"] == "prompts/" + rec(p,k)["prompt_sha256"] + ".json" for p in (1,2,3) for k in (0,1))'
check 'all(sha(prompt_of(p,0)) == rec(p,0)["prompt_sha256"] == prompt_of(p,0)["prompt_sha256"] for p in (1,2,3))'
check 'sent(reqs[0]) == [prompt_of(1,0)["system"], prompt_of(1,0)["user"]] and sent(reqs[8]) == [prompt_of(3,1)["system"], prompt_of(3,1)["user"]]'
check 'prompt_of(1,0)["template_sha256"] == rec(1,0)["template_sha256"]'
check 'rec(1,0)["reply"]["choices"][0]["message"]["role"] == "assistant"'
check 'json.load(open(R + "/run.json"))["args"]["model"] == "gpt-test" and json.load(open(R + "/run.json"))["args"]["temperature"] == 0.5'
check 'json.load(open(R + "/run.json"))["pkb_version"] and json.load(open(R + "/run.json"))["created"] and json.load(open(R + "/run.json"))["args"]["template"] == "prompts/cuda.txt"'
check 'not glob.glob(R + "/**/*.tmp.*", recursive=True)'
if [ -s "$TMP/out1" ]; then not_ok "generate wrote to stdout"; else ok; fi
expect_grep '6 written \(ok 4, no_code 1, truncated 1, bad_reply 0\)' "$TMP/err1"
no_key "$RUN" "$TMP/out1" "$TMP/err1"

# ---- the same arguments again: nothing requested ----------------------------
before=$(nreq)
expect_exit 0 gen --model gpt-test --provider openai --base-url "http://127.0.0.1:$PORT/v1" \
	--problems 1-3 -k 2 -j 1 --temperature 0.5 --max-tokens 1000 --run "$RUN"
[ "$(nreq)" = "$before" ] && ok || not_ok "a complete run requested again"
expect_grep '0 to request, 6 kept' "$TMP/err"
# a run from before the prompts were kept gets them on its next run
md5_prompts=$(cat "$RUN"/prompts/*.json | md5sum)
rm -r "$RUN/prompts"
expect_exit 0 gen --model gpt-test --provider openai --base-url "http://127.0.0.1:$PORT/v1" \
	--problems 1-3 -k 2 -j 1 --temperature 0.5 --max-tokens 1000 --run "$RUN"
[ "$(nreq)" = "$before" ] && ok || not_ok "restoring the prompts requested samples"
[ "$(cat "$RUN"/prompts/*.json | md5sum)" = "$md5_prompts" ] && ok || not_ok "the prompt files differ when written again"
# other arguments: refused, unless --force (then only the new samples)
expect_exit 1 gen --model gpt-test --provider openai --base-url "http://127.0.0.1:$PORT/v1" \
	--problems 1-3 -k 2 -j 1 --temperature 0.7 --max-tokens 1000 --run "$RUN"
expect_grep 'other arguments \(temperature: 0.5 in the run, 0.7' "$TMP/err"
expect_exit 0 gen --model gpt-test --provider openai --base-url "http://127.0.0.1:$PORT/v1" \
	--problems 1-3 -k 3 -j 1 --temperature 0.5 --max-tokens 1000 --run "$RUN" --force
check 'len(reqs) == 12 and n_replies() == 9'
check 'json.load(open(R + "/run.json"))["args"]["k"] == 3'

# --block first
start_server two
RUN=$TMP/run2
expect_exit 0 gen --model m --provider openai --base-url "http://127.0.0.1:$PORT/v1" \
	--problems 1 --block first --run "$RUN"
check '"BLOCK-A" in open(R + "/candidates/001/sample_0.cu").read() and rec(1,0)["block"] == "first"'

# ---- Anthropic ---------------------------------------------------------------
start_server ok trunc
RUN=$TMP/run3
ANTHROPIC_API_KEY=$KEY expect_exit 0 gen --model claude-test --provider anthropic --api-key-env ANTHROPIC_API_KEY \
	--base-url "http://127.0.0.1:$PORT/v1/" --problems allreduce -k 2 -j 1 --max-tokens 2000 \
	--temperature 0.2 --run "$RUN"
check 'all(r["path"] == "/v1/messages" for r in reqs) and len(reqs) == 2'
check 'all(r["headers"]["x-api-key"] == "'"$KEY"'" and r["headers"]["anthropic-version"] == "2023-06-01" and "authorization" not in r["headers"] for r in reqs)'
check 'reqs[0]["body"]["max_tokens"] == 2000 and reqs[0]["body"]["temperature"] == 0.2 and reqs[0]["body"]["model"] == "claude-test"'
check 'isinstance(reqs[0]["body"]["system"], str) and [m["role"] for m in reqs[0]["body"]["messages"]] == ["user"]'
check 'rec(1,0)["outcome"] == "ok" and rec(1,1)["outcome"] == "truncated" and rec(1,1)["finish_reason"] == "max_tokens"'
check 'rec(1,0)["tokens_in"] == 1000 and rec(1,0)["tokens_out"] == 50'
no_key "$RUN" "$TMP/out" "$TMP/err"
unset OPENAI_API_KEY

# ---- Gemini (GEMINI_API_KEY, then GOOGLE_API_KEY) ---------------------------
start_server ok ok
RUN=$TMP/run4
GEMINI_API_KEY=$KEY expect_exit 0 gen --model gemini-test --provider gemini --api-key-env GEMINI_API_KEY \
	--base-url "http://127.0.0.1:$PORT/v1beta" --problems 2 --max-tokens 3000 --temperature 1 --run "$RUN"
check 'reqs[0]["path"] == "/v1beta/models/gemini-test:generateContent"'
check 'reqs[0]["headers"]["x-goog-api-key"] == "'"$KEY"'" and "key=" not in reqs[0]["path"]'
check 'reqs[0]["body"]["generationConfig"] == {"maxOutputTokens": 3000, "temperature": 1.0}'
check 'reqs[0]["body"]["contents"][0]["role"] == "user" and "002_allgather" in reqs[0]["body"]["contents"][0]["parts"][0]["text"]'
check 'len(reqs[0]["body"]["systemInstruction"]["parts"][0]["text"]) > 0'
check 'rec(2,0)["outcome"] == "ok" and rec(2,0)["finish_reason"] == "STOP" and rec(2,0)["tokens_in"] == 1000'
RUN=$TMP/run5
GOOGLE_API_KEY=$KEY expect_exit 0 gen --model gemini-test --provider gemini --api-key-env GOOGLE_API_KEY \
	--base-url "http://127.0.0.1:$PORT/v1beta" --problems 2 --run "$RUN"
check 'reqs[1]["headers"]["x-goog-api-key"] == "'"$KEY"'" and "temperature" not in reqs[1]["body"]["generationConfig"]'

# ---- Together and openai-compatible: max_tokens; a key only where one is set
start_server ok ok
RUN=$TMP/run6
TOGETHER_API_KEY=$KEY expect_exit 0 gen --model t --provider together --api-key-env TOGETHER_API_KEY \
	--base-url "http://127.0.0.1:$PORT/v1" --problems 1 --max-tokens 500 --run "$RUN"
check 'reqs[0]["headers"]["authorization"] == "Bearer '"$KEY"'" and reqs[0]["body"]["max_tokens"] == 500 and "temperature" not in reqs[0]["body"]'
RUN=$TMP/run7
expect_exit 0 gen --model local --provider openai-compatible \
	--base-url "http://127.0.0.1:$PORT/v1" --problems 1 --run "$RUN"
check 'reqs[1]["path"] == "/v1/chat/completions" and "authorization" not in reqs[1]["headers"]'
expect_exit 2 gen --model local --provider openai-compatible --problems 1 --run "$RUN"
expect_grep "needs --base-url" "$TMP/err"

# ---- a bad reply is asked again like a 5xx (issue 38) -------------------------
# a proxy's HTML page in a 200, then the reply: the sample is ok, after the backoff
start_server html ok
RUN=$TMP/run_html
expect_exit 0 gen --model m --provider openai-compatible --base-url "http://127.0.0.1:$PORT/v1" \
	--problems 1 --retries 2 --backoff 0.5 --run "$RUN"
check 'len(reqs) == 2 and rec(1,0)["outcome"] == "ok" and rec(1,0)["attempts"] == 2'
check 'rec(1,0)["retried"][0]["error"] == "a bad reply (the reply is not JSON)" and "502 Bad Gateway" in rec(1,0)["retried"][0]["body_head"]'
check 'reqs[1]["t"] - reqs[0]["t"] >= 0.25'   # backoff 0.5: a wait drawn from [0.25, 0.5)
expect_grep 'a bad reply \(the reply is not JSON\); retry 1 in' "$TMP/err"
# an error object in a 200, then HTML until the retries are spent: nothing
# written, exit 11 (as for 5xx); the next run asks again
start_server errobj html html ok
RUN=$TMP/run_html2
expect_exit 11 gen --model m --provider openai-compatible --base-url "http://127.0.0.1:$PORT/v1" \
	--problems 1 --retries 2 --run "$RUN"
check 'len(reqs) == 3 and n_replies() == 0'
expect_grep 'failed after 3 attempts: a bad reply \(the reply is not JSON\)' "$TMP/err"
expect_grep 'a bad reply \(an error object in a 200: upstream provider error\); retry 1' "$TMP/err"
expect_exit 0 gen --model m --provider openai-compatible --base-url "http://127.0.0.1:$PORT/v1" \
	--problems 1 --retries 2 --run "$RUN"
check 'len(reqs) == 4 and n_replies() == 1 and rec(1,0)["outcome"] == "ok" and rec(1,0)["attempts"] == 1'
# the provider's own JSON without the text (a refusal): asked again, then
# recorded as its own outcome, bad_reply, with every attempt
start_server noparts noparts
RUN=$TMP/run_noparts
expect_exit 0 gen --model m --provider openai-compatible --base-url "http://127.0.0.1:$PORT/v1" \
	--problems 1 --retries 1 --run "$RUN"
check 'len(reqs) == 2 and rec(1,0)["outcome"] == "bad_reply" and rec(1,0)["attempts"] == 2'
check 'rec(1,0)["error"] == "no choices[0].message.content" and len(rec(1,0)["retried"]) == 1 and rec(1,0)["candidate"] is None'

# ---- a key goes only to its provider's endpoint (issue 38) -------------------
start_server ok ok ok ok ok
RUN=$TMP/run_k1
OPENAI_API_KEY=$KEY expect_exit 0 gen --model m --provider openai --base-url "http://127.0.0.1:$PORT/v1" \
	--problems 1 --run "$RUN"
check '"authorization" not in reqs[0]["headers"] and "x-api-key" not in reqs[0]["headers"]'
expect_grep '^warning: OPENAI_API_KEY is not sent to http://127.0.0.1:[0-9]+/v1' "$TMP/err"
expect_grep '^hint: --api-key-env OPENAI_API_KEY sends it there' "$TMP/err"
no_key "$RUN" "$TMP/out" "$TMP/err"
RUN=$TMP/run_k2
ANTHROPIC_API_KEY=$KEY OPENAI_API_KEY=$KEY expect_exit 0 gen --model m --provider anthropic \
	--base-url "http://127.0.0.1:$PORT/v1" --problems 1 --run "$RUN"
check 'not any(h in reqs[1]["headers"] for h in ("x-api-key", "authorization", "x-goog-api-key"))'
# --api-key-env MYKEY: that variable's value, not the provider's
RUN=$TMP/run_k3
MYKEY=sk-mine-0123456789 OPENAI_API_KEY=$KEY expect_exit 0 gen --model m --provider openai-compatible \
	--base-url "http://127.0.0.1:$PORT/v1" --api-key-env MYKEY --problems 1 --run "$RUN"
check 'reqs[2]["headers"]["authorization"] == "Bearer sk-mine-0123456789"'
RUN=$TMP/run_k4
MYKEY=sk-mine-0123456789 ANTHROPIC_API_KEY=$KEY expect_exit 0 gen --model m --provider anthropic \
	--base-url "http://127.0.0.1:$PORT/v1" --api-key-env MYKEY --problems 1 --run "$RUN"
check 'reqs[3]["headers"]["x-api-key"] == "sk-mine-0123456789" and "authorization" not in reqs[3]["headers"]'
no_key "$TMP/run_k2" "$TMP/run_k3" "$TMP/run_k4" "$TMP/out" "$TMP/err"
if grep -rqF sk-mine-0123456789 "$TMP/run_k3" "$TMP/run_k4" "$TMP/err"; then not_ok "MYKEY's value reached a file"; else ok; fi
# a named variable that is not set, or is no variable name
RUN=$TMP/run_k5
env -u MYKEY "$PKB" generate --model m --provider openai-compatible --base-url "http://127.0.0.1:$PORT/v1" \
	--api-key-env MYKEY --problems 1 --run "$RUN" >"$TMP/out" 2>"$TMP/err"
[ $? = 1 ] && ok || not_ok "--api-key-env of an unset variable: not exit 1"
expect_grep '^error: --api-key-env names MYKEY, which is not set' "$TMP/err"
expect_exit 2 gen --model m --provider openai-compatible --base-url "http://127.0.0.1:$PORT/v1" \
	--api-key-env 'MY-KEY' --problems 1 --run "$RUN"
expect_grep "takes the name of an environment variable, not 'MY-KEY'" "$TMP/err"
check 'len(reqs) == 4'
# a 401 where no key was sent says so
start_server 401
RUN=$TMP/run_k6
OPENAI_API_KEY=$KEY expect_exit 10 gen --model m --provider openai --base-url "http://127.0.0.1:$PORT/v1" \
	--problems 1 --run "$RUN"
expect_grep 'hint: no key was sent to this endpoint: --api-key-env NAME' "$TMP/err"

# ---- the machine the prompt describes (issue 38) -----------------------------
# --hw: that machine, recorded in run.json
start_server ok ok ok
RUN=$TMP/run_hw
expect_exit 0 gen --model m --provider openai-compatible --base-url "http://127.0.0.1:$PORT/v1" \
	--problems 1 --hw h200_4 --run "$RUN"
check '"(hw/h200_4.json)" in "".join(sent(reqs[0])) and "hw/h100_8" not in "".join(sent(reqs[0]))'
check 'json.load(open(R + "/run.json"))["hw"] == "h200_4" and json.load(open(R + "/run.json"))["hw_source"] == "--hw" and json.load(open(R + "/run.json"))["args"]["hw"] == "h200_4"'
expect_grep "hardware h200_4 \(--hw\)" "$TMP/err"
if grep -q '^warning' "$TMP/err"; then not_ok "a warning with --hw"; else ok; fi
# going on without --hw (more samples): the run's machine, not this one's
expect_exit 0 gen --model m --provider openai-compatible --base-url "http://127.0.0.1:$PORT/v1" \
	--problems 1 -k 2 --force --run "$RUN"
check 'len(reqs) == 2 and "(hw/h200_4.json)" in "".join(sent(reqs[1])) and rec(1,1)["prompt_sha256"] == rec(1,0)["prompt_sha256"]'
check 'json.load(open(R + "/run.json"))["hw"] == "h200_4" and json.load(open(R + "/run.json"))["hw_source"] == "--hw"'
expect_grep "hardware h200_4 \(run.json\)" "$TMP/err"
# neither: this machine's GPUs, or on a machine without any the default, said
RUN=$TMP/run_hw2
expect_exit 0 gen --model m --provider openai-compatible --base-url "http://127.0.0.1:$PORT/v1" \
	--problems 1 --run "$RUN"
if [ "$(ls /proc/driver/nvidia/gpus 2>/dev/null | wc -l)" = 0 ]; then
	expect_grep '^warning: no GPU on this machine: the prompt describes h100_8, the default; --hw NAME' "$TMP/err"
	check 'json.load(open(R + "/run.json"))["hw"] == "h100_8" and json.load(open(R + "/run.json"))["hw_source"] == "default" and "(hw/h100_8.json)" in "".join(sent(reqs[2]))'
else
	check 'json.load(open(R + "/run.json"))["hw_source"] == "detected"'; ok
fi

# ---- a reply slower than the timeout: retried ------------------------------
start_server slow:3 ok
RUN=$TMP/run8
t0=$(date +%s)
OPENAI_API_KEY=$KEY expect_exit 0 gen --model m --provider openai --base-url "http://127.0.0.1:$PORT/v1" \
	--problems 1 --timeout 1 --run "$RUN"
[ $(( $(date +%s) - t0 )) -lt 3 ] && ok || not_ok "the timeout did not cut the slow reply"
check 'len(reqs) == 2 and rec(1,0)["attempts"] == 2 and rec(1,0)["outcome"] == "ok"'
expect_grep 'timed out|Timeout' "$TMP/err"

# ---- retries used up: exit 11, nothing written; a re-run gets it -------------
start_server 500 500 500
RUN=$TMP/run9
OPENAI_API_KEY=$KEY expect_exit 11 gen --model m --provider openai --base-url "http://127.0.0.1:$PORT/v1" \
	--problems 1 --retries 2 --run "$RUN"
check 'len(reqs) == 3 and n_replies() == 0'
expect_grep 'failed after 3 attempts: HTTP 500' "$TMP/err"
OPENAI_API_KEY=$KEY expect_exit 0 gen --model m --provider openai --base-url "http://127.0.0.1:$PORT/v1" \
	--problems 1 --retries 2 --run "$RUN"
check 'len(reqs) == 4 and n_replies() == 1'

# ---- 401 and 404 stop the run ----------------------------------------------
start_server 401
RUN=$TMP/run10
OPENAI_API_KEY=$KEY expect_exit 10 gen --model m --provider openai --api-key-env OPENAI_API_KEY --base-url "http://127.0.0.1:$PORT/v1" \
	--problems 1-4 -k 3 -j 1 --run "$RUN"
check 'len(reqs) == 1 and n_replies() == 0'
expect_grep 'HTTP 401' "$TMP/err"
expect_grep 'hint: check the API key \(OPENAI_API_KEY\)' "$TMP/err"
no_key "$RUN" "$TMP/out" "$TMP/err"
start_server 404 404
RUN=$TMP/run11
ANTHROPIC_API_KEY=$KEY expect_exit 10 gen --model nosuch --provider anthropic --base-url "http://127.0.0.1:$PORT/v1" \
	--problems 1 -k 4 -j 2 --run "$RUN"
check 'len(reqs) <= 2 and n_replies() == 0'
expect_grep 'check --model' "$TMP/err"

# ---- a server that echoes the key: it is redacted from the files ------------
start_server echo
RUN=$TMP/run12
OPENAI_API_KEY=$KEY expect_exit 0 gen --model m --provider openai --api-key-env OPENAI_API_KEY --base-url "http://127.0.0.1:$PORT/v1" \
	--problems 1 --run "$RUN"
no_key "$RUN" "$TMP/out" "$TMP/err"
expect_grep 'redacted' "$RUN/replies/001/sample_0.json"

# ---- J in flight: 8 replies of 1 s each at -j 4 take ~2 s, not 8 -------------
start_server slow:1 slow:1 slow:1 slow:1 slow:1 slow:1 slow:1 slow:1
RUN=$TMP/run13
t0=$(date +%s.%N)
OPENAI_API_KEY=$KEY expect_exit 0 gen --model m --provider openai --base-url "http://127.0.0.1:$PORT/v1" \
	--problems 1-2 -k 4 -j 4 --run "$RUN"
python3 -c "import sys; sys.exit(0 if $(date +%s.%N) - $t0 < 5 else 1)" && ok || not_ok "-j 4 did not overlap"
check 'n_replies() == 8 and sorted(r["t"] for r in reqs)[3] - min(r["t"] for r in reqs) < 0.5'

# ---- kill -9 mid-run, then resume -------------------------------------------
start_server ok ok ok stall
RUN=$TMP/run14
OPENAI_API_KEY=$KEY "$PKB" generate --model m --provider openai --api-key-env OPENAI_API_KEY --base-url "http://127.0.0.1:$PORT/v1" \
	--problems 1 -k 6 -j 1 --run "$RUN" >"$TMP/out" 2>"$TMP/err" &
GEN_PID=$!
for _ in $(seq 200); do [ "$(nreq)" -ge 4 ] && break; sleep 0.05; done
# the key is not in the process's argv
if tr '\0' ' ' </proc/$GEN_PID/cmdline | grep -qF -- "$KEY"; then not_ok "the key is in argv"; else ok; fi
# a second generate on the same run is refused while the first holds it
OPENAI_API_KEY=$KEY expect_exit 1 gen --model m --provider openai --base-url "http://127.0.0.1:$PORT/v1" \
	--problems 1 -k 6 -j 1 --run "$RUN"
expect_grep "another pkb generate is using the run" "$TMP/err"
kill -9 $GEN_PID; wait $GEN_PID 2>/dev/null
check 'len(reqs) == 4 and n_replies() == 3 and n_cands() == 3'
check 'not glob.glob(R + "/**/*.tmp.*", recursive=True)'
md5_before=$(cat "$RUN"/replies/001/*.json | md5sum)
# what a kill in the middle of a write leaves: removed by the next run
echo half >"$RUN/replies/001/sample_3.json.tmp.99999"
OPENAI_API_KEY=$KEY expect_exit 0 gen --model m --provider openai --base-url "http://127.0.0.1:$PORT/v1" \
	--problems 1 -k 6 -j 1 --run "$RUN"
# samples 3, 4, 5 requested (3 more requests), 0-2 untouched
check 'len(reqs) == 7 and n_replies() == 6 and n_cands() == 6'
[ "$(cat "$RUN"/replies/001/sample_[012].json | md5sum)" = "$md5_before" ] && ok || not_ok "a written sample changed"
expect_grep '3 to request, 3 kept' "$TMP/err"
check 'not glob.glob(R + "/**/*.tmp.*", recursive=True)'

# ---- usage errors --------------------------------------------------------------
RUN=$TMP/run15
env -u OPENAI_API_KEY "$PKB" generate --model m --provider openai --problems 1 --run "$RUN" >"$TMP/out" 2>"$TMP/err"
[ $? = 1 ] && ok || not_ok "no key: not exit 1"
expect_grep 'set OPENAI_API_KEY' "$TMP/err"
OPENAI_API_KEY=$KEY expect_exit 2 gen --model m --provider nosuch --problems 1
expect_grep 'one of: openai, together, openai-compatible, anthropic, gemini' "$TMP/err"
OPENAI_API_KEY=$KEY expect_exit 2 gen --model m --provider openai --problems 999
OPENAI_API_KEY=$KEY expect_exit 2 gen --model m --provider openai --problems 1 --block middle
OPENAI_API_KEY=$KEY expect_exit 2 gen --model m --provider openai --problems 1 -k 0
OPENAI_API_KEY=$KEY expect_exit 2 gen --provider openai --problems 1
done_testing
