#!/bin/bash
# t0300-prompt.sh -- pkb prompt: the pieces a prompt must hold, its hashes,
# determinism, the example's choice, and the template's slot errors.
. "$(dirname "$0")/lib.sh"
PKB=${PKB_BIN:-$PKB}   # PKB_BIN: another build of pkb (a sanitizer build)

expect_exit 0 "$PKB" prompt 3
cp "$TMP/out" "$TMP/p3"; cp "$TMP/err" "$TMP/p3err"
expect_grep '^=== system ===$' "$TMP/p3"
expect_grep '^=== user ===$' "$TMP/p3"
expect_grep 'problem 003_broadcast, backend cuda' "$TMP/p3"
expect_grep "$(head -1 problems/003_*/README.md | sed 's/[][\\.*^$]/./g')" "$TMP/p3"
expect_grep "$(grep -m1 'pkb_run' problems/003_*/reference.cu | sed 's/[][\\.*^$()|+?{}]/./g')" "$TMP/p3"
expect_grep 'PKB_ABI_VERSION' "$TMP/p3"                 # include/pkb.h
# a reference's problems/lib headers are shown in place of their #include
# (049's reference is one include of moe_ep_reference.cuh; 041's includes
# mlp_kernels.cuh), each once
expect_exit 0 "$PKB" prompt 49
expect_grep '^/\* ---- moe_ep_reference.cuh \(problems/lib\), included here ---- \*/$' "$TMP/out"
expect_grep "$(grep -m1 'ncclGroupStart' problems/lib/moe_ep_reference.cuh | sed 's/[][\\.*^$()|+?{}]/./g')" "$TMP/out"
expect_exit 1 grep -q '^#include "moe_ep_reference.cuh"' "$TMP/out"
expect_exit 0 "$PKB" prompt 41
expect_grep 'mlp_fwd_bwd' "$TMP/out"
[ "$(grep -c '^/\* ---- mlp_kernels.cuh (problems/lib), included here' "$TMP/out")" = 1 ] && ok ||
	not_ok "041's prompt does not show mlp_kernels.cuh once"
expect_grep "$(grep -m1 -o '__device__[^(]*' include/pkb_device.cuh | sed 's/[][\\.*^$()|+?{}]/./g')" "$TMP/p3"
expect_grep '^- input tensor: bf16 \(1024, 1024\)' "$TMP/p3"
expect_grep '^- out: bit-exact' "$TMP/p3"
expect_grep '8x H100' "$TMP/p3"
expect_grep 'uses 4 of its 8 GPUs' "$TMP/p3"
expect_grep 'No correct solution can take less than [0-9.]+ us' "$TMP/p3"
expect_grep 'exactly one fenced code block' "$TMP/p3"
expect_grep 'known-good solution of another problem: problems/001_allreduce/solutions/ok_' "$TMP/p3"
# nothing left unfilled
if grep -q '{{' "$TMP/p3"; then not_ok "a slot is left in the prompt"; else ok; fi

# deterministic
"$PKB" prompt 3 >"$TMP/p3b" 2>/dev/null
if cmp -s "$TMP/p3" "$TMP/p3b"; then ok; else not_ok "two prompts of 003 differ"; fi

# the machine (issue 38): --hw, else this machine's GPUs, else h100_8 with
# a warning saying why
if [ "$(ls /proc/driver/nvidia/gpus 2>/dev/null | wc -l)" = 0 ]; then
	expect_grep '^warning: no GPU on this machine: the prompt describes h100_8, the default' "$TMP/p3err"
	expect_grep '\(hw/h100_8.json\)' "$TMP/p3"
else ok; ok; fi
expect_exit 0 "$PKB" prompt 3 --hw h200_4 --json
python3 - "$TMP/out" <<'PY' && ok || not_ok "prompt --hw h200_4"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["hw"] == "h200_4" and d["hw_source"] == "--hw", d["hw"]
assert "(hw/h200_4.json); this run uses 4 of its 4 GPUs" in d["user"] + d["system"]
PY
if [ -s "$TMP/err" ]; then not_ok "stderr with --hw: $(cat "$TMP/err")"; else ok; fi
expect_exit 1 "$PKB" prompt 3 --hw nosuch
expect_grep "no hardware 'nosuch'" "$TMP/err"

# the instance's dims reach the shapes
expect_exit 0 "$PKB" prompt 3 --m 512 --n 256 --dtype fp32 --gpus 2
expect_grep '^- input tensor: fp32 \(512, 256\)' "$TMP/out"
expect_grep 'uses 2 of its 8 GPUs' "$TMP/out"
# a sum has a tolerance, not bit equality
expect_exit 0 "$PKB" prompt 1
expect_grep '^- out: \|out - ref\| <= ' "$TMP/out"
# 001's example comes from another problem
if grep -q 'another problem: problems/001_' "$TMP/out"; then not_ok "001's example is 001's own"; else ok; fi

# --json: the messages and both hashes, which match what they hash
expect_exit 0 "$PKB" prompt 5 --json
python3 - "$TMP/out" "$ROOT/prompts/cuda.txt" <<'PY' && ok || not_ok "prompt --json hashes"
import hashlib, json, sys
d = json.load(open(sys.argv[1]))
assert hashlib.sha256(open(sys.argv[2], 'rb').read()).hexdigest() == d["template_sha256"]
h = hashlib.sha256(d["system"].encode() + b"\0" + d["user"].encode()).hexdigest()
assert h == d["prompt_sha256"], (h, d["prompt_sha256"])
assert d["example"].endswith(".cu") and "/001_allreduce/" in d["example"]
assert "005" in d["user"]
PY

# nccl-device: its own template and example
expect_exit 0 "$PKB" prompt 5 --backend nccl-device
expect_grep 'backend nccl-device' "$TMP/out"
expect_grep 'another problem: problems/001_allreduce/solutions/ok_nccl_device.cu' "$TMP/out"
expect_exit 0 "$PKB" prompt 1 --backend nccl-device
expect_grep 'none: no other problem has a known-good nccl-device candidate' "$TMP/out"

# template errors
printf '=== system ===\nhi\n=== user ===\n{{task}} {{nope}}\n' >"$TMP/t1"
expect_exit 1 "$PKB" prompt 3 --template "$TMP/t1"
expect_grep "unknown slot '\{\{nope\}\}'" "$TMP/err"
sed 's/{{roofline}}//' prompts/cuda.txt >"$TMP/t2"
expect_exit 1 "$PKB" prompt 3 --template "$TMP/t2"
expect_grep "never uses the slot '\{\{roofline\}\}'" "$TMP/err"
printf 'no sections {{task}}\n' >"$TMP/t3"
expect_exit 1 "$PKB" prompt 3 --template "$TMP/t3"
expect_grep "=== system ===" "$TMP/err"
expect_exit 1 "$PKB" prompt 3 --template "$TMP/nonexistent"
# a template of our own is used as written
sed 's/You are an expert/You are a TEST expert/' prompts/cuda.txt >"$TMP/t4"
expect_exit 0 "$PKB" prompt 3 --template "$TMP/t4"
expect_grep 'TEST expert' "$TMP/out"

# usage and input errors
expect_exit 1 "$PKB" prompt 999
expect_exit 1 "$PKB" prompt 3 --backend nvshmem
expect_exit 2 "$PKB" prompt 3 --gpus x
expect_exit 2 "$PKB" prompt
expect_exit 1 "$PKB" prompt 3 --hw nosuchmachine
# issue 42: the original's other backends have prompts of their own
expect_exit 0 "$PKB" prompt 3 --backend parallelkittens
expect_grep 'problem 003_broadcast, backend parallelkittens' "$TMP/out"
expect_grep 'pgl<gl<T, 1, 1, -1, -1>, W, false>' "$TMP/out"
expect_grep 'known-good solution of another problem: problems/001_allreduce/solutions/ok_tk_pgl.cu' "$TMP/out"
expect_grep 'PKB_ABI_VERSION' "$TMP/out"
expect_exit 0 "$PKB" prompt 3 --backend triton
expect_grep 'problem 003_broadcast, backend triton' "$TMP/out"
expect_grep 'symm_mem.rendezvous\(buf, dist.group.WORLD\)' "$TMP/out"
expect_grep 'exactly one fenced code block \(```python' "$TMP/out"
expect_exit 1 grep -q 'PKB_ABI_VERSION' "$TMP/out"
if grep -q '{{' "$TMP/out"; then not_ok "a slot is left in the triton prompt"; else ok; fi
done_testing
