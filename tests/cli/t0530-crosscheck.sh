# tools/crosscheck's parts that need no GPU and no PyTorch: the safetensors
# files tools/crosscheck.py writes are read by pkb compare (and judged with
# the problem's tolerances from their metadata), the pairing of the
# original's arguments and results with pkb's inputs and outputs, and the
# refusals of bad usage. The run itself (the original on GPUs) is measured
# on a multi-GPU machine: bench/results/*_crosscheck.jsonl.
. "$(dirname "$0")/lib.sh"
export PYTHONPATH=$ROOT/tools

# files written by crosscheck.py: pkb reads them; equal outputs agree, one
# element off by far more than 001's tolerance is a mismatch at its index
expect_exit 0 python3 - "$TMP" <<'EOF'
import os, struct, sys
from crosscheck import read_st, write_st
d = sys.argv[1]
def bf16(vals):
    return b"".join(struct.pack("<f", v)[2:] for v in vals)
for sub, bad in (("a", None), ("b", None), ("c", 5)):
    os.makedirs(os.path.join(d, sub), exist_ok=True)
    for r in range(2):
        vals = [0.25 * i for i in range(6)]
        if bad is not None and r == 1:
            vals[bad] = 100.0
        meta = {"pkb_problem": "1", "world": "2", "rank": str(r), "m": "2", "n": "3",
                "dtype": "bf16", "trial": "0", "order": "out"}
        write_st(os.path.join(d, sub, f"rank_{r}_outputs.safetensors"),
                 [("out", "BF16", [2, 3], bf16(vals))], meta)
meta, t = read_st(os.path.join(d, "a", "rank_1_outputs.safetensors"))
assert meta["rank"] == "1" and t[0][:3] == ("out", "BF16", [2, 3]), (meta, t)
assert t[0][3] == bf16([0.25 * i for i in range(6)])
# the metadata's order wins over the offsets' (JSON objects have none)
write_st(os.path.join(d, "o.safetensors"),
         [("b", "F32", [1], b"\0" * 4), ("a", "I64", [], b"\0" * 8)], {"order": "a,b"})
assert [x[0] for x in read_st(os.path.join(d, "o.safetensors"))[1]] == ["a", "b"]
EOF
expect_exit 0 "$PKB" compare "$TMP/a" "$TMP/b"
expect_exit 3 "$PKB" compare "$TMP/a" "$TMP/c"
expect_grep "^rank 1 out +MISMATCH: 1 of 6 wrong; worst at 5: 1.25 vs 100" "$TMP/out"
expect_exit 0 "$PKB" compare --inspect "$TMP/b"
expect_grep "out +bf16 +\(2, 3\)" "$TMP/out"

# pairing: tensors in order (nested too), a Python number takes pkb's 0-dim
# input, strings and groups stay the original's; every mismatch is named
expect_exit 0 python3 - <<'EOF'
from crosscheck import substitute, flatten, Layout
class T:   # a stand-in for torch.Tensor
    def __init__(self, shape, tag=""): self.shape, self.tag = tuple(shape), tag
is_t = lambda v: isinstance(v, T)
ours = [("x", "BF16", [4, 8], b""), ("steps", "I64", [], b""), ("w", "F32", [8], b""),
        ("v", "F32", [2], b"")]
take = lambda i, leaf: ("pkb", ours[i][0], leaf if not is_t(leaf) else leaf.shape)
args = (T([4, 8]), 7, "pinhole", [T([8]), {"k": T([2])}], 0.3, None, True)
new, notes = substitute(args, ours, is_t, lambda v: v.shape, take)
assert new[0] == ("pkb", "x", (4, 8)), new
assert new[1] == ("pkb", "steps", 7), new
assert new[2] == "pinhole" and new[5] is None and new[6] is True, new
assert isinstance(new[3], list) and new[3][0][1] == "w" and new[3][1]["k"][1] == "v", new
assert new[4] == 0.3 and notes == ["the original's scalar 0.3 kept"], (new, notes)
def refused(a, o, want):
    try:
        substitute(a, o, is_t, lambda v: v.shape, take)
    except Layout as e:
        assert want in str(e), (str(e), want)
        return
    raise AssertionError(f"no Layout for {want}")
refused((T([4, 9]),), ours[:1], "input 0 'x': the original's shape is [4, 9], pkb's [4, 8]")
refused((T([4, 8]),), ours[:3], "pkb has inputs the original's arguments lack: steps, w")
refused((T([4, 8]), T([1])), ours[:1], "more tensor arguments than pkb's 1 inputs")
assert [x.tag for x in flatten((T([1], "a"), None, [T([2], "b"), {"c": T([3], "c")}]), is_t)] == ["a", "b", "c"]
assert flatten(2.5, is_t) == [2.5] and flatten(None, is_t) == []
EOF

# usage: the checkout is required and must be one; crosscheck.py says the same
expect_exit 2 "$ROOT/tools/crosscheck"
expect_grep "^crosscheck: -r CHECKOUT \(the original repository\) is required" "$TMP/err"
mkdir -p "$TMP/notorig"
expect_exit 2 "$ROOT/tools/crosscheck" -r "$TMP/notorig"
expect_grep "is not a checkout of the original ParallelKernelBench \(no utils/input_output_tensors.py\)" "$TMP/err"
mkdir -p "$TMP/orig/utils" "$TMP/orig/reference"
touch "$TMP/orig/utils/input_output_tensors.py" "$TMP/orig/utils/init_and_finalize_backends.py"
expect_exit 2 "$ROOT/tools/crosscheck" -r "$TMP/orig" -t 5s
expect_grep "^crosscheck: -t wants whole seconds, not '5s'" "$TMP/err"
# the driver's flow on fake ranks (pkb run passes, saves nothing) with a
# stand-in torch package that has no torch.distributed: each case is an
# original_failed line naming the error, the table is written, a second
# call keeps what the file holds and runs only what it lacks
mkdir -p "$TMP/mods/torch"
: > "$TMP/mods/torch/__init__.py"
export PKB_RANK_CMD=$ROOT/build/tests/fake_rank PKB_TEST_GPUS=2
PYTHONPATH=$TMP/mods expect_exit 1 "$ROOT/tools/crosscheck" -r "$TMP/orig" -p 1,2 -w 2 -o "$TMP/x.jsonl"
expect_grep "^original_failed +001_allreduce W=2 bf16 +rank [01]: ModuleNotFoundError: No module named 'torch.distributed'" "$TMP/out"
expect_grep "^crosscheck: 0 agree, 2 do not" "$TMP/out"
expect_exit 0 python3 - "$TMP/x.jsonl" <<'EOF'
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert [(x["problem"], x["world"], x["result"]) for x in r] == [
    ("001_allreduce", 2, "original_failed"), ("002_allgather", 2, "original_failed")], r
assert r[0]["m"] == 1024 and r[0]["dtype"] == "bf16" and "ours_ms" not in r[0], r[0]
EOF
expect_grep "^\| 001_allreduce \| 2 \| bf16 \| original_failed \|" "$TMP/x.md"
PYTHONPATH=$TMP/mods expect_exit 1 "$ROOT/tools/crosscheck" -r "$TMP/orig" -p 1,2,3 -w 2 -o "$TMP/x.jsonl" -t 1
expect_grep "^kept +001_allreduce W=2 bf16" "$TMP/out"
expect_grep "^kept +002_allgather W=2 bf16" "$TMP/out"
expect_grep "^(original_failed|not_run) +003_broadcast W=2" "$TMP/out"
expect_grep "^crosscheck: 0 agree, 3 do not" "$TMP/out"
unset PKB_RANK_CMD PKB_TEST_GPUS
expect_exit 1 python3 "$ROOT/tools/crosscheck.py" --orig "$TMP/notorig" --ours "$TMP/a" --out "$TMP/x" --world 2
expect_grep "is not a checkout of the original ParallelKernelBench" "$TMP/err"
done_testing
