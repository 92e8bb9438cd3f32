# tools/test-gpu itself, on fake ranks (PKB_RANK_CMD) and pretend GPUs: every
# case runs exactly once, in lanes on disjoint GPU sets, and is counted and
# recorded. Fake ranks pass everything, so the bad_ candidates whose verdict
# comes from the GPU fail here, while compile_error and load_refused ones
# (decided before any launch) pass.
. "$(dirname "$0")/lib.sh"
export PKB_RANK_CMD=$ROOT/build/tests/fake_rank PKB_FAKE_MODE=ok PKB_TEST_GPUS=4
cd "$ROOT"
expect_exit 1 tools/test-gpu -p 005 -w "2 4" -s 3x1001 -o "$TMP/r.jsonl"
# 005's candidates: the ok_ ones, the bad_ ones, and of those the ones whose
# verdict needs a GPU (they pass on fake ranks, so their cases fail)
S=problems/005_scatter/solutions
n_ok=$(ls $S/ok_*.cu | wc -l) n_bad=$(ls $S/bad_*.cu | wc -l)
n_gpu_bad=$(grep -L 'pkb-expect: \(compile_error\|load_refused\)' $S/bad_*.cu | wc -l)
# at W = 2: the reference (default shape), every ok_ at two shapes, every bad_
# (default shape, smallest W only); at W = 4 the reference and the ok_
want=$((2 * (1 + 2 * n_ok) + n_bad))
n=$(wc -l < "$TMP/r.jsonl")
[ "$n" = $want ] && ok || not_ok "expected $want recorded cases, got $n"
expect_grep "^$((want - n_gpu_bad)) passed, $n_gpu_bad failed, 0 skipped\$" "$TMP/out"
# every file compiled once, first (the reference, every candidate): each
# candidate that compiles is in the cache, with the key eval uses
expect_grep "^test-gpu: $((1 + n_ok + n_bad)) files compiled or found in the compile cache in " "$TMP/out"
for f in $S/ok_*.cu; do
	b=$(. tools/lib.sh; header "$f" pkb-backend)
	"$PKB" build "$f" --backend "${b:-cuda}" > "$TMP/b.out" 2>&1
	grep -q "(cached " "$TMP/b.out" && ok || not_ok "$f: not in the compile cache after test-gpu: $(cat "$TMP/b.out")"
done
grep -q '"world":4,.*bad_' "$TMP/r.jsonl" && not_ok "a bad_ candidate ran at W = 4 without -a" || ok
# W = 2 ran on both pairs; W = 4 on all four
expect_grep '"world":2,.*"gpus":"0,1"' "$TMP/r.jsonl"
expect_grep '"world":2,.*"gpus":"2,3"' "$TMP/r.jsonl"
expect_grep '"world":4,.*"gpus":"0,1,2,3"' "$TMP/r.jsonl"
# every case once: no duplicate (world, shape, solution)
d=$(python3 -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; k=[(x["world"],x["shape"],x["solution"]) for x in r]; print(len(k)-len(set(k)))' "$TMP/r.jsonl")
[ "$d" = 0 ] && ok || not_ok "$d cases ran twice"
# one seed for the whole run (issue 40: the reference's outputs kept between
# its cases), the same in every eval's record, drawn anew by the next run
seeds=$(python3 -c 'import json,sys; print(len({json.loads(l)["result"]["seed"] for l in open(sys.argv[1]) if "/solutions/" in json.loads(l)["solution"] and (json.loads(l).get("result") or {}).get("seed") is not None}))' "$TMP/r.jsonl")
[ "$seeds" = 1 ] && ok || not_ok "the evaluations of one run drew $seeds seeds"
# judged by the outcome pkb wrote, not by mapping exit numbers (issue 22)
expect_grep '^FAIL 005_scatter W=2 default bad_zeros.cu +expected mismatch, got pass \(exit 0\)' "$TMP/out"
# -a: bad_ candidates at every W
expect_exit 1 tools/test-gpu -p 005 -w "2 4" -a -o "$TMP/a.jsonl"
n=$(wc -l < "$TMP/a.jsonl")
s_r=$(python3 -c 'import json,sys; print(next(json.loads(l)["result"]["seed"] for l in open(sys.argv[1]) if "ok_" in l and json.loads(l).get("result")))' "$TMP/r.jsonl")
s_a=$(python3 -c 'import json,sys; print(next(json.loads(l)["result"]["seed"] for l in open(sys.argv[1]) if "ok_" in l and json.loads(l).get("result")))' "$TMP/a.jsonl")
[ -n "$s_r" ] && [ "$s_r" != "$s_a" ] && ok || not_ok "two runs used the seeds '$s_r' and '$s_a'"
want=$((2 * (1 + n_ok + n_bad)))
[ "$n" = $want ] && ok || not_ok "expected $want recorded cases with -a, got $n"
# -t: no case starts after the budget; the rest are recorded as not run
PKB_FAKE_MODE=slow expect_exit 1 tools/test-gpu -p 005 -w 2 -j 1 -t 1 -o "$TMP/t.jsonl"
n=$(wc -l < "$TMP/t.jsonl")
want=$((1 + n_ok + n_bad))
[ "$n" = $want ] && ok || not_ok "expected $want recorded cases under -t, got $n"
expect_grep '"not_run":true' "$TMP/t.jsonl"
expect_grep '^FAIL 005_scatter W=2 .* not run: the 1 s budget \(-t\) was spent' "$TMP/out"
# -r: another call goes on from there; the cases that ran are kept (counted,
# their lines copied with "kept_from"), the ones not run run now, none twice
ran=$(grep -vc '"not_run":true' "$TMP/t.jsonl")
cp "$TMP/t.jsonl" "$TMP/t0.jsonl"
expect_exit 1 tools/test-gpu -p 005 -w 2 -j 1 -r "$TMP/t.jsonl" -o "$TMP/t.jsonl"
n=$(wc -l < "$TMP/t.jsonl")
[ "$n" = $want ] && ok || not_ok "expected $want recorded cases after -r, got $n"
grep -q '"not_run":true' "$TMP/t.jsonl" && not_ok "a case was left not run after -r" || ok
k=$(grep -c '"kept_from"' "$TMP/t.jsonl")
[ "$k" = "$ran" ] && ok || not_ok "expected $ran kept cases, got $k"
[ "$(grep -c ' kept (-r)$' "$TMP/out")" = "$ran" ] && ok || not_ok "expected $ran kept log lines"
expect_grep "^$((want - n_gpu_bad)) passed, $n_gpu_bad failed, 0 skipped\$" "$TMP/out"
d=$(python3 -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; k=[(x["world"],x["shape"],x["solution"]) for x in r]; print(len(k)-len(set(k)))' "$TMP/t.jsonl")
[ "$d" = 0 ] && ok || not_ok "$d cases recorded twice after -r"
# a kept case is not run again: its line is the earlier one
same=$(python3 -c '
import json, sys
def runs(f, key):
    return {(r["solution"], r["seconds"]) for r in map(json.loads, open(f)) if key(r)}
print(runs(sys.argv[1], lambda r: not r.get("not_run")) == runs(sys.argv[2], lambda r: r.get("kept_from")))
' "$TMP/t0.jsonl" "$TMP/t.jsonl")
[ "$same" = True ] && ok || not_ok "the kept lines are not the earlier run's"
# -r twice (runs of two machines): a case both record is kept as the last
# file records it, every other case as the file that has it, none twice
python3 -c '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])][-1]
r.pop("kept_from", None)
r["seconds"] = 12345
print(json.dumps(r, separators=(",", ":")))' "$TMP/t.jsonl" > "$TMP/later.jsonl"
expect_exit 1 tools/test-gpu -p 005 -w 2 -j 1 -r "$TMP/t.jsonl" -r "$TMP/later.jsonl" -o "$TMP/o3.jsonl"
expect_exit 0 python3 -c '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
k = [(x["world"], x["shape"], x["solution"]) for x in r]
assert len(k) == len(set(k)) == int(sys.argv[4]), (len(k), len(set(k)))
later = [x for x in r if x["seconds"] == 12345]
assert len(later) == 1 and later[0]["kept_from"] == sys.argv[2], later
assert sum(x.get("kept_from") == sys.argv[3] for x in r) == len(r) - 1, r
' "$TMP/o3.jsonl" "$TMP/later.jsonl" "$TMP/t.jsonl" "$want"
# every record carries the problem's files' hash as pkb list gives it
# (issue 37), and -r keeps only records made with the files as they are now
sha=$("$PKB" list --json - | python3 -c 'import json,sys; print([p for p in json.load(sys.stdin) if p["id"] == 5][0]["files_sha256"])')
expect_exit 0 python3 -c 'import json,sys; assert all(json.loads(l)["problem_sha256"] == sys.argv[2] for l in open(sys.argv[1])), sys.argv[2]' "$TMP/t0.jsonl" "$sha"
sed 's/"problem_sha256":"[0-9a-f]*"/"problem_sha256":"0000"/' "$TMP/t0.jsonl" > "$TMP/old.jsonl"
expect_exit 1 tools/test-gpu -p 005 -w 2 -j 1 -r "$TMP/old.jsonl" -o "$TMP/o2.jsonl"
[ "$(grep -c '"kept_from"' "$TMP/o2.jsonl")" = 0 ] && ok || not_ok "a record of other files was kept"
expect_exit 2 tools/test-gpu -p 005 -w 2 -r "$TMP/none.jsonl" -o "$TMP/x.jsonl"
expect_grep '^test-gpu: -r .*none.jsonl: no such file$' "$TMP/err"
echo '{"not json' > "$TMP/bad.jsonl"
expect_exit 2 tools/test-gpu -p 005 -w 2 -r "$TMP/bad.jsonl" -o "$TMP/x.jsonl"
expect_grep 'not a test-gpu results file$' "$TMP/err"
# eight GPUs (the original's setting): W = 8 on all eight, W = 2 in four lanes
PKB_TEST_GPUS=8 expect_exit 1 tools/test-gpu -p 005 -w "2 8" -o "$TMP/g8.jsonl"
expect_grep '"world":8,.*"gpus":"0,1,2,3,4,5,6,7"' "$TMP/g8.jsonl"
for g in 0,1 2,3 4,5 6,7; do
	expect_grep "\"world\":2,.*\"gpus\":\"$g\"" "$TMP/g8.jsonl"
done
n=$(wc -l < "$TMP/g8.jsonl")
want=$((2 * (1 + n_ok) + n_bad))
[ "$n" = $want ] && ok || not_ok "expected $want recorded cases on 8 GPUs, got $n"
# the GPU holder (PKB_HOLD_CMD stands in for `pkb hold`): started, not
# waited for (test-gpu waits for its lanes only), and gone when it ends
printf '#!/bin/sh\necho $$ > %s/holder.pid\nexec sleep 613\n' "$TMP" > "$TMP/holder"
chmod +x "$TMP/holder"
PKB_TEST_GPUS=2 PKB_HOLD_CMD=$TMP/holder expect_exit 1 timeout 120 tools/test-gpu -p 005 -w 2 -o "$TMP/h.jsonl"
[ -s "$TMP/holder.pid" ] && ok || not_ok "the holder was not started"
sleep 0.2
kill -0 "$(cat "$TMP/holder.pid" 2>/dev/null || echo 999999999)" 2>/dev/null && not_ok "the holder outlived test-gpu" || ok
# a backend this machine lacks (parallelkittens without THUNDERKITTENS_ROOT,
# triton without a python3 that imports torch and triton): its files are
# skipped, each said and counted, none run or recorded
S=problems/012_allgather_gemm/solutions
n_tk=$(grep -l 'pkb-backend: parallelkittens' $S/*.cu | wc -l)
n_py=$(grep -l 'pkb-backend: triton' $S/*.py | wc -l)
[ "$n_tk" -ge 2 ] && [ "$n_py" -ge 2 ] && ok || not_ok "012 has $n_tk parallelkittens, $n_py triton files"
unset THUNDERKITTENS_ROOT
export PKB_PYTHON=$TMP/no-python
PKB_TEST_GPUS=2 expect_exit 1 tools/test-gpu -p 012 -w 2 -o "$TMP/tk.jsonl"
[ "$(grep -c '^skip 012_allgather_gemm W=2 default .*: parallelkittens: THUNDERKITTENS_ROOT is unset' "$TMP/out")" = "$n_tk" ] &&
	ok || not_ok "expected $n_tk skip lines: $(grep '^skip' "$TMP/out")"
[ "$(grep -c '^skip 012_allgather_gemm W=2 default .*\.py: triton: .*no-python cannot import torch and triton' "$TMP/out")" = "$n_py" ] &&
	ok || not_ok "expected $n_py triton skip lines: $(grep '^skip' "$TMP/out")"
expect_grep "^[0-9]+ passed, [0-9]+ failed, $((n_tk + n_py)) skipped\$" "$TMP/out"
grep -q 'tk_\|triton' "$TMP/tk.jsonl" && not_ok "a skipped file was recorded" || ok
unset PKB_PYTHON
done_testing
