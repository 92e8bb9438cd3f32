# pkb sweep on fake ranks: passing, failing, hanging and crashing candidates
# come out as their outcomes; kill -9 at several moments and a torn last
# line lose nothing and run nothing twice
. "$(dirname "$0")/lib.sh"
export PKB_RANK_CMD=$ROOT/build/tests/fake_rank
SRC=$ROOT/problems/001_allreduce/solutions/ok_oneshot_pull.cu
# mkrun DIR N: a pkb generate layout with N samples of 001 and one reply without code
mkrun() {
	mkdir -p "$1/candidates/001" "$1/replies/001"
	for ((k = 0; k < $2; k++)); do
		cp "$SRC" "$1/candidates/001/sample_$k.cu"
		echo '{"outcome": "ok"}' > "$1/replies/001/sample_$k.json"
	done
	echo '{"outcome": "no_code"}' > "$1/replies/001/sample_$2.json"
}
count() { python3 -c "
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
keys = [r['key'] for r in recs]
assert len(keys) == len(set(keys)), 'a key twice'
print(len(recs), ' '.join(sorted(r['outcome'] for r in recs)))" "$1"; }

mkrun "$TMP/ok" 3
PKB_FAKE_MODE=ok expect_exit 0 "$PKB" sweep "$TMP/ok" -p 1 -g 2 --ngpus 4 -t 2
expect_grep '^4 no_code pass pass pass$' <(count "$TMP/ok/results.jsonl")
expect_grep '"sha256":"[0-9a-f]{64}"' "$TMP/ok/results.jsonl"
expect_grep '"world":2' "$TMP/ok/results.jsonl"
expect_grep 'sweep: 4/4' "$TMP/err"
# two lanes of 2 GPUs on 4: both sets used, never another
expect_grep 'on GPUs 0,1: pass' "$TMP/err"
expect_grep 'on GPUs 2,3: pass' "$TMP/err"
! grep -qE 'on GPUs [0-9,]*[4-9]' "$TMP/err" && ok || not_ok "a GPU beyond --ngpus"
# again: everything recorded, nothing run
PKB_FAKE_MODE=ok expect_exit 0 "$PKB" sweep "$TMP/ok" -p 1 -g 2 --ngpus 4 -t 2
expect_grep '4 already recorded, 0 to run' "$TMP/err"
expect_grep '^4 ' <(count "$TMP/ok/results.jsonl")
# another problem selected: nothing of 001 runs
PKB_FAKE_MODE=ok expect_exit 0 "$PKB" sweep "$TMP/ok" -p 2-5 -g 2 --ngpus 4 -o "$TMP/none.jsonl"
expect_grep '0 candidates' "$TMP/err"
expect_exit 2 "$PKB" sweep "$TMP/ok" -p 3-1

# failures: each as eval names it; a hang past --timeout as timeout
for m in mismatch crash; do
	mkrun "$TMP/$m" 1
	PKB_FAKE_MODE=$m expect_exit 0 "$PKB" sweep "$TMP/$m" -p 1 -g 2 --ngpus 2 -t 1
done
expect_grep '^2 mismatch no_code$' <(count "$TMP/mismatch/results.jsonl")
expect_grep '^2 no_code runtime_error$' <(count "$TMP/crash/results.jsonl")
# a hang: eval's own deadline ends it (exit 7) ...
mkrun "$TMP/hang" 1
PKB_FAKE_MODE=hang expect_exit 0 "$PKB" sweep "$TMP/hang" -p 1 -g 2 --ngpus 2 -t 1 --deadline trial=1
expect_grep '^2 no_code timeout$' <(count "$TMP/hang/results.jsonl")
expect_grep '"exit_code":7' "$TMP/hang/results.jsonl"
# ... or, above it, the sweep's (-2), which also kills the orphaned ranks
mkrun "$TMP/hang2" 1
PKB_FAKE_MODE=hang expect_exit 0 "$PKB" sweep "$TMP/hang2" -p 1 -g 2 --ngpus 2 -t 1 --timeout 3
expect_grep '^2 no_code timeout$' <(count "$TMP/hang2/results.jsonl")
expect_grep '"exit_code":-2' "$TMP/hang2/results.jsonl"
sleep 0.5
[ -z "$(pgrep -fx "$PKB_RANK_CMD")" ] && ok || not_ok "ranks left running: $(pgrep -fx "$PKB_RANK_CMD")"

# kill -9 at several moments, then resume until done: 13 records, 13 keys
mkrun "$TMP/k" 12
# kill when the file first holds 0 (just started), 2, 5 and 8 records
lines() { [ -e "$TMP/k/results.jsonl" ] && wc -l < "$TMP/k/results.jsonl" || echo 0; }
for at in 0 2 5 8; do
	PKB_FAKE_MODE=ok "$PKB" sweep "$TMP/k" -p 1 -g 2 --ngpus 2 -t 1 2>/dev/null &
	pid=$!
	for ((i = 0; i < 600 && $(lines) < at; i++)); do sleep 0.05; done
	kill -9 $pid
	wait $pid 2>/dev/null
done
# a torn last line, as a kill inside write() would leave
n=$(wc -l < "$TMP/k/results.jsonl")
[ "$n" -gt 0 ] && [ "$n" -lt 13 ] && ok || not_ok "the kills left $n of 13 records: not a mid-run kill"
printf '{"key":"001|sample_9|torn' >> "$TMP/k/results.jsonl"
PKB_FAKE_MODE=ok expect_exit 0 "$PKB" sweep "$TMP/k" -p 1 -g 2 --ngpus 2 -t 1
expect_grep 'torn last record cut away' "$TMP/err"
expect_grep "$n already recorded, $((13 - n)) to run" "$TMP/err"
expect_grep '^13 no_code( pass){12}$' <(count "$TMP/k/results.jsonl")
[ "$(tail -c 1 "$TMP/k/results.jsonl" | od -An -c | tr -d ' ')" = '\n' ] && ok || not_ok "file does not end in a newline"
# a bad line in the middle is no torn write: refused, the file untouched
cp "$TMP/k/results.jsonl" "$TMP/k.bak"
sed -i '2s/^/garbage/' "$TMP/k/results.jsonl"
cp "$TMP/k/results.jsonl" "$TMP/k.bad"
PKB_FAKE_MODE=ok expect_exit 1 "$PKB" sweep "$TMP/k" -p 1 -g 2 --ngpus 2 -t 1
expect_grep 'line 2 is not a sweep record' "$TMP/err"
cmp -s "$TMP/k/results.jsonl" "$TMP/k.bad" && ok || not_ok "the file was changed"
sleep 1
done_testing
