#!/bin/bash
# t0320-agent.sh -- pkb agent against a scripted loopback model
# (llm_server.py, file:PATH actions) and pretend-GPU ranks (fake_rank: each
# candidate names its own behaviour with pkb-fake-* strings): the feedback
# of each verdict (nvcc's error, the mismatch's worst element and look, the
# speedup, per-rank times and roofline, the symbol scan's refusal and rule,
# each rank's phase), the best candidate kept, every budget, resume after
# kill -9, --eval-cmd (stdout and {json}, no re-splitting), and the layout
# pkb sweep reads.
. "$(dirname "$0")/lib.sh"
export PKB_RANK_CMD=$ROOT/build/tests/fake_rank
unset PKB_FAKE_MODE PKB_FAKE_RANK_ONLY

. "$(dirname "$0")/llm_lib.sh"
# q EXPR: Python over the request log (reqs), the run R, its trajectory T
# (problem 1) and answer record A; passes when true
q() {
	python3 - "$TMP/log" "$RUN" "$1" <<'PY'
import glob, json, os, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
R = sys.argv[2]
tp = f"{R}/agent/001/trajectory.jsonl"
T = [json.loads(l) for l in open(tp)] if os.path.exists(tp) else []
ap = f"{R}/replies/001/sample_0.json"
A = json.load(open(ap)) if os.path.exists(ap) else {}
def last_user(i): return reqs[i]["body"]["messages"][-1]["content"]
def read(p): return open(p).read()
ok = eval(sys.argv[3])
if not ok:
    print("T:", [(t["step"], t["verdict"], t["speedup"]) for t in T], file=sys.stderr)
sys.exit(0 if ok else 1)
PY
}
check() { if q "$1"; then ok; else not_ok "$1"; fi; }

# ---- the candidates: one per verdict ----------------------------------------
C=$TMP/cands
mkdir -p "$C"
head_() { printf '#include "pkb.h"\nPKB_SOLUTION;\n'; }
tail_() { printf 'extern "C" int pkb_init(pkb_ctx *c) { (void)c; return 0; }\nextern "C" int pkb_run(pkb_ctx *c) { (void)c; return 0; }\nextern "C" int pkb_fini(pkb_ctx *c) { (void)c; return 0; }\n'; }
# a reply holding shell syntax: it only ever becomes file content
{ head_; echo '// $(touch '"$TMP"'/pwned) `touch '"$TMP"'/pwned2`'; echo 'extern "C" int pkb_init(pkb_ctx *c) { return undefined_thing + c->rank; }'; } >"$C/s1_nocompile.cu"
{ head_; echo 'extern "C" const char m[] = "pkb-fake-mode:mismatch pkb-fake-look:local_only";'; tail_; } >"$C/s2_mismatch.cu"
{ head_; echo 'extern "C" const char m[] = "pkb-fake-mode:ok pkb-fake-us:4";'; tail_; } >"$C/s3_fast.cu"
{ head_; echo 'extern "C" const char m[] = "pkb-fake-mode:ok pkb-fake-us:8";'; tail_; } >"$C/s4_slower.cu"
{ head_; echo 'extern "C" int ncclAllReduce(const void *, void *, unsigned long, int, int, void *, void *);'
  echo 'extern "C" int pkb_init(pkb_ctx *c) { (void)c; return 0; }'
  echo 'extern "C" int pkb_run(pkb_ctx *c) { return ncclAllReduce(0, 0, 0, 0, 0, 0, c->stream); }'
  echo 'extern "C" int pkb_fini(pkb_ctx *c) { (void)c; return 0; }'; } >"$C/s5_nccl.cu"
{ head_; echo 'extern "C" const char m[] = "pkb-fake-mode:crash";'; tail_; } >"$C/s6_crash.cu"
{ head_; echo 'extern "C" const char m[] = "pkb-fake-mode:hang";'; tail_; } >"$C/s7_hang.cu"
{ head_; echo 'extern "C" const char m[] = "pkb-fake-mode:ok pkb-fake-us:1";'; tail_; } >"$C/s8_too_fast.cu"

A_OPTS=(--model test-model --provider openai-compatible --gpus 4 --m 32 --trials 1 --iters 20 --backoff 0.05)
agent() { "$PKB" agent 1 --base-url "http://127.0.0.1:$PORT/v1" "${A_OPTS[@]}" "$@"; }
# in the background, $! the pkb process itself (for kill -9)
agent_bg() { exec "$PKB" agent 1 --base-url "http://127.0.0.1:$PORT/v1" "${A_OPTS[@]}" "$@"; }

# ---- the scripted conversation: no compile, mismatch, pass, slower ----------
start_server "file:$C/s1_nocompile.cu" "file:$C/s2_mismatch.cu" "file:$C/s3_fast.cu" "file:$C/s4_slower.cu"
RUN=$TMP/run1
expect_exit 0 agent --steps 4 --run "$RUN"
cp "$TMP/out" "$TMP/out1"
expect_grep '^001_allreduce	steps 4	best step 3	pass	speedup 2.500x	stop steps$' "$TMP/out1"
expect_grep '^agent: 001 step 2/4: mismatch' "$TMP/err"
check 'len(reqs) == 4 and len(T) == 4'
check '[t["verdict"] for t in T] == ["compile_error", "mismatch", "pass", "pass"]'
check '[t["speedup"] for t in T] == [None, None, 2.5, 1.25]'
check '[t["step"] for t in T] == [1, 2, 3, 4] and all(len(t["reply_sha256"]) == 64 for t in T)'
check '[t["tokens_total"] for t in T] == [1050, 2100, 3150, 4200] and all(t["seconds"] > 0 for t in T)'
check '[t["best_step"] for t in T] == [None, None, 3, 3]'
# each request carries the whole conversation: system, prompt, then reply and feedback per step
check '[len(r["body"]["messages"]) for r in reqs] == [2, 4, 6, 8]'
check '[m["role"] for m in reqs[3]["body"]["messages"]] == ["system", "user", "assistant", "user", "assistant", "user", "assistant", "user"]'
check 'reqs[1]["body"]["messages"][2]["content"] == "Here is the next version.\n\n```cuda\n" + read("'"$C"'/s1_nocompile.cu") + "```\n"'
# the compile error: nvcc's own message with file:line, as candidate.cu
check '"Step 1: compile_error." in last_user(1) and "nvcc" in last_user(1)'
check '"candidate.cu(4): error: identifier \"undefined_thing\" is undefined" in last_user(1)'
check '"/agent/" not in last_user(1)'
# the mismatch: output, rank, worst element, count, look
check '"trial 0, rank 0, output '"'"'out'"'"': 7 of 100 elements wrong; worst at flat index 3 [0,3]: expected 1.5, got 0" in last_user(2)'
check '"local-only" in last_user(2) and "1 of 4 ranks wrong in trial 0" in last_user(2)'
check 'last_user(2).count("7 of 100") == 1'
# the pass: speedup, per-rank times, roofline with its bound
check '"Speedup 2.500x against the reference: median 4.00 us against 10.00 us" in last_user(3)'
check '"Per rank (median): rank 0 4.00 us, rank 1 4.00 us, rank 2 4.00 us, rank 3 4.00 us" in last_user(3)'
# the roofline is on the machine the prompt described (issue 38: the prompt
# said h100_8, eval picked the pretend GPUs' h200_4); with no GPU here and
# no --hw, that is the default, said on stderr, and recorded in run.json
check '"Roofline: the lower bound is 0.22 us on h100_8, interconnect-bound" in last_user(3)'
check '"(hw/h100_8.json)" in reqs[0]["body"]["messages"][1]["content"] + reqs[0]["body"]["messages"][0]["content"]'
check 'json.load(open(R + "/run.json"))["hw"] == "h100_8" and json.load(open(R + "/run.json"))["args"]["hw"] == "h100_8"'
if [ "$(ls /proc/driver/nvidia/gpus 2>/dev/null | wc -l)" = 0 ]; then
	check 'json.load(open(R + "/run.json"))["hw_source"] == "default"'
	expect_grep '^warning: no GPU on this machine: the prompt describes h100_8, the default' "$TMP/err"
else ok; ok; fi
check '"Best so far: step 3, 2.500x. Steps left: 1." in last_user(3)'
check 'T[3]["feedback"].startswith("Step 4: pass.") and "Best so far: step 3, 2.500x" in T[3]["feedback"]'
# the best candidate is kept, not the last
check 'read(R + "/candidates/001/sample_0.cu") == read("'"$C"'/s3_fast.cu")'
check 'A["agent"]["best_step"] == 3 and A["agent"]["stop"] == "steps" and A["outcome"] == "ok" and A["candidate"] == "candidates/001/sample_0.cu"'
check 'A["tokens"] == 4200 and A["model"] == "test-model"'
# the whole first prompt is kept in the run, as generate keeps its samples'
# (issue 38): the record points at it, and it is what the first request sent
check 'A["prompt"] == "prompts/" + A["prompt_sha256"] + ".json"'
check 'json.load(open(R + "/" + A["prompt"]))["user"] == last_user(0)'
check 'read(R + "/agent/001/step_2.cu") == read("'"$C"'/s2_mismatch.cu")'
check 'json.load(open(R + "/agent/001/step_3.eval.json"))["outcome"] == "pass"'
# every step draws its own inputs: one seed across the steps would let the
# answers' expected values teach the model the outputs (docs/AGENT.md)
check 'len({json.load(open(R + "/agent/001/step_%d.eval.json" % s))["seed"] for s in (1, 3, 4)}) == 3'
check 'not os.path.exists(R + "/.pkb-seed") and not os.path.exists(R + "/.pkb-refcache")'
check 'json.load(open(R + "/run.json"))["args"]["mode"] == "agent" and json.load(open(R + "/run.json"))["budgets"]["steps"] == 4'
if [ -e "$TMP/pwned" ] || [ -e "$TMP/pwned2" ]; then not_ok "the model's text ran as a command"; else ok; fi

# pkb sweep reads the agent's run as a generate run: one candidate, its answer
expect_exit 0 "$PKB" sweep "$RUN" -g 2 --ngpus 2 --trials 1
check '[json.loads(l)["key"].split("|")[1] for l in open(R + "/results.jsonl")] == ["sample_0"]'
expect_exit 0 "$PKB" score "$RUN" --json "$TMP/score.json"
check 'json.load(open("'"$TMP"'/score.json"))["runs"][0]["candidates"] == 1'

# already finished: nothing asked, same answer
start_server
expect_exit 0 agent --steps 4 --run "$RUN"
check 'len(reqs) == 0 and len(T) == 4'
# a raised --steps goes on from step 5 with the whole conversation
start_server "file:$C/s3_fast.cu"
expect_exit 0 agent --steps 5 --run "$RUN"
check 'len(reqs) == 1 and len(reqs[0]["body"]["messages"]) == 10 and len(T) == 5'
# another model is another run
expect_exit 1 agent --steps 5 --run "$RUN" --dtype fp16
expect_grep "started with other arguments" "$TMP/err"

# ---- budgets ------------------------------------------------------------------
# tokens: 1050 a step, 2000 allowed: two steps; no correct candidate: exit 12
start_server "file:$C/s1_nocompile.cu" "file:$C/s2_mismatch.cu" "file:$C/s3_fast.cu"
RUN=$TMP/run_tok
expect_exit 12 agent --steps 10 --budget-tokens 2000 --run "$RUN"
check 'len(T) == 2 and A["agent"]["stop"] == "budget_tokens" and A["agent"]["best_step"] is None'
check 'A["candidate"] == "candidates/001/sample_0.cu" and A["agent"]["answer_step"] == 2'
expect_grep 'stop budget_tokens$' "$TMP/out"
# target speedup: stops at the first candidate 2x faster
start_server "file:$C/s1_nocompile.cu" "file:$C/s3_fast.cu" "file:$C/s4_slower.cu"
RUN=$TMP/run_target
expect_exit 0 agent --steps 10 --target-speedup 2 --run "$RUN"
check 'len(T) == 2 and len(reqs) == 2 and A["agent"]["stop"] == "target_speedup"'
# seconds: replies take 1.5 s, 2.5 s allowed: the second request is cut at the budget
start_server "slow:1.5" "slow:1.5" "slow:1.5" "slow:1.5"
RUN=$TMP/run_time
t0=$(date +%s.%N)
expect_exit 12 agent --steps 10 --budget-s 2.5 --run "$RUN"
t1=$(date +%s.%N)
check 'len(T) == 1 and A["agent"]["stop"] == "budget_s" and T[0]["verdict"] == "compile_error"'
if python3 -c "import sys; sys.exit(0 if $t1 - $t0 < 6 else 1)"; then ok; else not_ok "the time budget did not stop the loop in time"; fi
# steps: a budget of 1
start_server "file:$C/s2_mismatch.cu"
RUN=$TMP/run_steps
expect_exit 12 agent --steps 1 --run "$RUN"
check 'len(T) == 1 and A["agent"]["stop"] == "steps" and A["agent"]["last_verdict"] == "mismatch"'

# no code, a reply cut at the limit, a time below the roofline: said, not kept
start_server nocode trunc "file:$C/s8_too_fast.cu"
RUN=$TMP/run_nocode
expect_exit 12 agent --steps 3 --m 1024 --run "$RUN"
check '[t["verdict"] for t in T] == ["no_code", "truncated", "flagged"] and T[0]["candidate"] is None'
check '"no fenced code block" in last_user(1) and "stopped at the token limit (50 tokens)" in last_user(2)'
check '"the time is not trusted" in T[2]["feedback"] and "below the hardware" in T[2]["feedback"]'
check 'A["agent"]["best_step"] is None and A["agent"]["answer_step"] == 3'

# ---- kill -9 mid-run, then resume from the last finished step ---------------
start_server "file:$C/s1_nocompile.cu" "file:$C/s2_mismatch.cu" stall
RUN=$TMP/run_kill
(agent_bg --steps 4 --run "$RUN" >"$TMP/kout" 2>"$TMP/kerr") &
APID=$!
for _ in $(seq 300); do [ "$(wc -l <"$TMP/log")" -ge 3 ] && break; sleep 0.1; done
kill -9 $APID; wait $APID 2>/dev/null
check 'len(T) == 2 and not os.path.exists(R + "/agent/001/step_3.reply.json")'
start_server "file:$C/s3_fast.cu" "file:$C/s4_slower.cu"
expect_exit 0 agent --steps 4 --run "$RUN"
check 'len(reqs) == 2 and [t["step"] for t in T] == [1, 2, 3, 4]'
check 'len(reqs[0]["body"]["messages"]) == 6 and "7 of 100 elements wrong" in last_user(0)'
check '[t["verdict"] for t in T] == ["compile_error", "mismatch", "pass", "pass"] and A["agent"]["best_step"] == 3'
# killed after the reply came, before its line (torn in write()): the
# reply is evaluated, not asked again, and the line starts on its own
head -n 3 "$RUN/agent/001/trajectory.jsonl" >"$TMP/t3" && cp "$TMP/t3" "$RUN/agent/001/trajectory.jsonl"
printf '{"step": 4, "tok' >>"$RUN/agent/001/trajectory.jsonl"
start_server
expect_exit 0 agent --steps 4 --run "$RUN"
check 'len(reqs) == 0 and len(T) == 4 and T[3]["verdict"] == "pass" and T[3]["speedup"] == 1.25'
expect_grep "torn last line" "$TMP/err"
check 'A["agent"]["steps"] == 4 and A["agent"]["best_step"] == 3'
# a second agent on the same run is refused while one holds it
start_server stall
(agent_bg --steps 6 --run "$RUN" >/dev/null 2>&1) &
APID=$!
for _ in $(seq 100); do [ -s "$TMP/log" ] && break; sleep 0.1; done
expect_exit 1 agent --steps 6 --run "$RUN"
expect_grep "is using the run" "$TMP/err"
kill -9 $APID; wait $APID 2>/dev/null

# ---- the other verdicts' feedback: refusal, crash, timeout (through --eval-cmd) --
FAKE=$ROOT/build/tests/fake_rank
start_server "file:$C/s5_nccl.cu" "file:$C/s6_crash.cu" "file:$C/s7_hang.cu" "file:$C/s3_fast.cu"
RUN="$TMP/run eval cmd"
expect_exit 0 agent --steps 4 --run "$RUN" --eval-cmd "env PKB_RANK_CMD=$FAKE '$PKB' eval {id} {file} --gpus {gpus} --m {m} --trials {trials} --measure-perf --iters 20 --deadline trial=1 -q --json -"
check '[t["verdict"] for t in T] == ["load_refused", "runtime_error", "timeout", "pass"]'
check '"uses '"'"'ncclAllReduce'"'"', which the cuda backend forbids" in last_user(1) and "The cuda backend'"'"'s rule: no NCCL" in last_user(1)'
check '"killed by signal 11" in last_user(2) and "reached phase '"'"'trial 0: candidate'"'"'" in last_user(2)'
check '"passed its 1 s deadline" in last_user(3) and "- rank 1 reached phase" in last_user(3)'
check 'T[3]["speedup"] == 2.5 and json.load(open(R + "/agent/001/step_4.eval.json"))["outcome"] == "pass"'
# {json}: the result read from that file; the path with spaces stays one word
start_server "file:$C/s3_fast.cu"
RUN="$TMP/run json slot"
expect_exit 0 agent --steps 1 --run "$RUN" --eval-cmd "env PKB_RANK_CMD=$FAKE $PKB eval {id} {file} --gpus {gpus} --m {m} --trials 1 --measure-perf --iters 20 -q --json {json}"
check 'T[0]["verdict"] == "pass" and T[0]["speedup"] == 2.5'
# without {hw} the far side picks its own machine: said
expect_grep '^warning: the evaluation.s roofline is on h200_4, the prompt described h100_8: put --hw \{hw\}' "$TMP/err"
# --hw h200_4: the prompt and, through {hw}, the feedback on that machine
start_server "file:$C/s3_fast.cu"
RUN="$TMP/run_hw"
expect_exit 0 agent --steps 1 --hw h200_4 --run "$RUN" --eval-cmd "env PKB_RANK_CMD=$FAKE $PKB eval {id} {file} --gpus {gpus} --m {m} --trials 1 --measure-perf --iters 20 --hw {hw} -q --json {json}"
check '"(hw/h200_4.json)" in reqs[0]["body"]["messages"][1]["content"] + reqs[0]["body"]["messages"][0]["content"]'
check '" us on h200_4, " in T[0]["feedback"] and json.load(open(R + "/run.json"))["hw_source"] == "--hw"'
if grep -q 'warning' "$TMP/err"; then not_ok "a warning with --hw and {hw}"; else ok; fi
# going on in that run without --hw keeps its machine
start_server "file:$C/s3_fast.cu"
expect_exit 0 agent --steps 2 --run "$RUN" --eval-cmd "env PKB_RANK_CMD=$FAKE $PKB eval {id} {file} --gpus {gpus} --m {m} --trials 1 --measure-perf --iters 20 --hw {hw} -q --json {json}"
check 'len(T) == 2 and " us on h200_4, " in T[1]["feedback"]'
# a command that gives no result: said, exit 9, the step not recorded
start_server "file:$C/s3_fast.cu"
RUN=$TMP/run_noresult
expect_exit 9 agent --steps 2 --run "$RUN" --eval-cmd "sh -c 'echo no json here; exit 3'"
expect_grep "gave no result" "$TMP/err"
check 'len(T) == 0 and os.path.exists(R + "/agent/001/step_1.reply.json")'
# the key is not in the evaluation's environment (nor in the run)
start_server "file:$C/s3_fast.cu"
RUN=$TMP/run_env
# (issue 38: at a --base-url of its own, only the variable --api-key-env
# names is sent; the provider's is neither sent nor inherited)
OPENAI_API_KEY=sk-test-must-not-leak MYKEY=sk-test-mine-must-not-leak expect_exit 9 agent --steps 1 \
	--run "$RUN" --api-key-env MYKEY --eval-cmd "sh -c 'env > \"\$0\"' {run}/env.txt"
expect_grep '^PATH=' "$RUN/env.txt"
check 'reqs[0]["headers"]["authorization"] == "Bearer sk-test-mine-must-not-leak"'
if grep -rq "must-not-leak" "$RUN"; then not_ok "the key reached the run or the evaluation"; else ok; fi
# the provider's key withheld from this endpoint is said; a named variable
# that is not set is bad input (exit 1), before any request
start_server "file:$C/s3_fast.cu"
RUN=$TMP/run_env2
OPENAI_API_KEY=sk-test-must-not-leak expect_exit 0 agent --steps 1 --run "$RUN"
expect_grep '^warning: OPENAI_API_KEY is not sent to http://127.0.0.1:[0-9]+/v1' "$TMP/err"
check '"authorization" not in reqs[0]["headers"]'
env -u MYKEY "$PKB" agent 1 --base-url "http://127.0.0.1:$PORT/v1" "${A_OPTS[@]}" --steps 1 \
	--run "$TMP/run_env3" --api-key-env MYKEY >"$TMP/out" 2>"$TMP/err"
[ $? = 1 ] && ok || not_ok "agent --api-key-env of an unset variable: not exit 1"
expect_grep '^error: --api-key-env names MYKEY, which is not set' "$TMP/err"
check 'len(reqs) == 1'
# a proxy's HTML page in a 200 is asked again, like a 5xx (issue 38); the
# step goes on with the reply that followed, the attempts recorded
start_server html "file:$C/s3_fast.cu"
RUN=$TMP/run_html
expect_exit 0 agent --steps 1 --run "$RUN"
check 'len(reqs) == 2 and T[0]["verdict"] == "pass" and T[0]["attempts"] == 2'
check 'json.load(open(R + "/agent/001/step_1.reply.json"))["retried"][0]["error"] == "a bad reply (the reply is not JSON)"'
expect_grep 'a bad reply \(the reply is not JSON\); retry 1' "$TMP/err"
# templates: an unknown slot, command substitution
expect_exit 2 agent --steps 1 --run "$TMP/r_bad" --eval-cmd "pkb eval {id} {bogus}"
expect_grep "unknown slot '\{bogus\}'" "$TMP/err"
expect_exit 2 agent --steps 1 --run "$TMP/r_bad" --eval-cmd 'pkb eval {id} $(touch x)'
expect_grep "command substitution" "$TMP/err"
# usage
expect_exit 2 "$PKB" agent 1 --provider openai
expect_exit 2 "$PKB" agent 1 --model m --provider nosuch
expect_exit 2 "$PKB" agent 1 --model m --provider openai --steps 0
expect_exit 0 "$PKB" agent -h
expect_grep "target-speedup" "$TMP/out"
# issue 39: eval's options pass through the agent as eval reads them (one
# table, job_opt; one writer, job_opts_argv): --timing reaches the ranks
# and the feedback, and is the run's (run.json), as --iters is
start_server "file:$C/s3_fast.cu"
RUN=$TMP/run_timing
expect_exit 0 agent --steps 1 --run "$RUN" --timing graph --warmup 3 --deadline trial=30 \
	--device-timeout 900 --arch sm_90a --no-sandbox
check 'T[0]["verdict"] == "pass" and json.load(open(R + "/agent/001/step_1.eval.json"))["timing"]["mode"] == "graph"'
check '"graph timing" in T[0]["feedback"]'
check 'json.load(open(R + "/run.json"))["args"]["timing"] == "graph" and json.load(open(R + "/run.json"))["args"]["warmup"] == 3'
# a run without --timing records none (the args of earlier runs stay equal)
check '"timing" not in json.load(open("'"$TMP"'/run_html/run.json"))["args"]'
# what eval refuses, the agent refuses before asking anything (exit 2)
for bad in "--gpus 64" "-d int32" "--timing hot" "-t 3x" "--iters 0" "--deadline nophase=1" "--m 0"; do
	expect_exit 2 agent --steps 1 --run "$TMP/r_bad" $bad
done
check 'len(reqs) == 1'
expect_grep "^error: --gpus takes a world size from 1 to 63, not '64'$" <(agent --steps 1 --run "$TMP/r_bad" --gpus 64 2>&1)
# with --eval-cmd the template says what eval gets: said once
start_server "file:$C/s3_fast.cu"
expect_exit 0 agent --steps 1 --run "$TMP/run_tcmd" --timing cold \
	--eval-cmd "$PKB eval {id} {file} --gpus {gpus} --m {m} --trials {trials} --measure-perf --iters 20 --hw {hw} -q --json {json}"
expect_grep "^warning: --timing, --deadline, --device-timeout, --arch and --no-sandbox go to the local pkb eval only" "$TMP/err"
# issue 42: the original's other backends. parallelkittens: its prompt, and
# eval gets --backend parallelkittens (a stub ThunderKittens stands in)
mkdir -p "$TMP/tk/include"
echo '#pragma once' > "$TMP/tk/include/kittens.cuh"
{ printf '#include "kittens.cuh"
'; head_; echo 'extern "C" const char m[] = "pkb-fake-mode:ok pkb-fake-us:4";'; tail_; } >"$C/s9_tk.cu"
start_server "file:$C/s9_tk.cu"
RUN=$TMP/run_tk
THUNDERKITTENS_ROOT=$TMP/tk expect_exit 0 agent --steps 1 --run "$RUN" --backend parallelkittens
check 'T[0]["verdict"] == "pass" and json.load(open(R + "/agent/001/step_1.eval.json"))["backend"] == "parallelkittens"'
check '"ThunderKittens" in reqs[0]["body"]["messages"][0]["content"] and "pgl<gl<T" in last_user(0)'
check 'json.load(open(R + "/run.json"))["args"]["backend"] == "parallelkittens"'
# triton: a Python candidate, extracted from a python block into step_1.py
# (its evaluation is the triton backend's, docs/BACKENDS.md)
printf 'def solution(tensor):\n    return tensor\n' > "$C/s10.py"
start_server "pyfile:$C/s10.py"
RUN=$TMP/run_py
agent --steps 1 --run "$RUN" --backend triton > "$TMP/out" 2> "$TMP/err"
check 'read(R + "/agent/001/step_1.py") == "def solution(tensor):\n    return tensor\n"'
check '"def solution(" in last_user(0) and "```python" in last_user(0)'
check 'json.load(open(R + "/agent/001/step_1.eval.json"))["backend"] == "triton"'
check 'read(R + "/candidates/001/sample_0.py") == read(R + "/agent/001/step_1.py")'
expect_exit 2 agent --steps 1 --run "$TMP/r_nb" --backend nosuch
expect_grep "^hint: candidates use --backend cuda, nccl-device, parallelkittens, triton" "$TMP/err"
stop_server
done_testing
