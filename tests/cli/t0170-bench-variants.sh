# tools/bench-variants on fake ranks: every variant at every size is one
# eval and one JSON line naming its macros; the macros reach the compiler
# (a variant that breaks the file reads compile_error); a reference.cu runs
# under the reference backend; bad arguments exit 2
. "$(dirname "$0")/lib.sh"
export PKB_RANK_CMD=$ROOT/build/tests/fake_rank PKB_FAKE_MODE=ok PKB_TEST_GPUS=4
cd "$ROOT"
f=problems/002_allgather/solutions/ok_oneshot_push.cu
expect_exit 0 tools/bench-variants -p 2 -f $f -s "8K 64K" -o "$TMP/v" "" "THREADS=256 MAX_BLOCKS=528" \
	"THREADS=("
n=$(wc -l < "$TMP/v.jsonl")
[ "$n" = 6 ] && ok || not_ok "expected 6 evals (3 variants x 2 sizes), got $n"
expect_grep '^\| \(as is\) \| 8K \| pass \| 10\.00 \| 5\.00 \| 2\.000x \|$' "$TMP/v.md"
expect_grep '^Variants of problems/002_allgather/solutions/ok_oneshot_push\.cu, W = 4$' "$TMP/v.md"
expect_grep '^\| THREADS=256 MAX_BLOCKS=528 \| 64K \| pass \|' "$TMP/v.md"
expect_grep '^\| THREADS=\( \| 8K \| compile_error' "$TMP/v.md"
expect_grep '"bench_candidate": "ok_oneshot_push.cu", "bench_variant": "THREADS=256 MAX_BLOCKS=528", "bench_size": "8K"' "$TMP/v.jsonl"
# tools/collectives-table reads these lines too, a variant named after its file
expect_exit 0 tools/collectives-table "$TMP/v.jsonl"
expect_grep '^\| 002_allgather \| 8K \| ok_oneshot_push.cu \| 10\.00 \| 5\.00 \| 2\.00x \|' "$TMP/out"
# a reference.cu (no pkb-backend header) runs under the reference backend
expect_exit 0 tools/bench-variants -p 2 -f problems/002_allgather/reference.cu -s 8K -o "$TMP/r" ""
expect_grep '"backend": "reference"' "$TMP/r.jsonl"
expect_grep '^\| \(as is\) \| 8K \| pass \|' "$TMP/r.md"
grep '"bench_variant": "THREADS=256' "$TMP/v.jsonl" > "$TMP/only.jsonl"
expect_exit 0 tools/collectives-table "$TMP/only.jsonl" "$TMP/r.jsonl"
expect_grep '^\| 002_allgather \| 64K \| ok_oneshot_push.cu \(THREADS=256 MAX_BLOCKS=528\) \|' "$TMP/out"
expect_grep '^\| 002_allgather \| 8K \| (ok_oneshot_push.cu \(THREADS=256 MAX_BLOCKS=528\)|reference.cu) \|' "$TMP/out"
# an eval that writes no result: a row that says so, with the eval's own words
expect_exit 0 tools/bench-variants -p 999 -f $f -s 8K -o "$TMP/n" ""
expect_grep '"outcome": "no result", "message": "error: no problem .999.' "$TMP/n.jsonl"
expect_grep '"bench_exit": 1' "$TMP/n.jsonl"
expect_grep '^\| \(as is\) \| 8K \| no result: error: no problem .999. hint: ' "$TMP/n.md"
expect_exit 2 tools/bench-variants -p 2 -f $f -o "$TMP/x"
expect_exit 2 tools/bench-variants -p 2 -f $f -o "$TMP/x" "THREADS"
done_testing
