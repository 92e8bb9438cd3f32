# tools/bench-aa and tools/aa-table on fake ranks (whose candidate is always
# twice as fast as their reference: every A/A row must read "no"): -n repeats
# each launch, every launch is one JSON line and one table row, and the
# summary counts them
. "$(dirname "$0")/lib.sh"
export PKB_RANK_CMD=$ROOT/build/tests/fake_rank PKB_FAKE_MODE=ok PKB_TEST_GPUS=4
cd "$ROOT"
expect_exit 0 tools/bench-aa -p 001 -n 2 -o "$TMP/aa"
n=$(wc -l < "$TMP/aa.jsonl")
[ "$n" = 4 ] && ok || not_ok "expected 4 launches (2 sizes x 2 trials), got $n"
expect_grep '^\| 001 \| allreduce \| 4 \| 32 x 1024 \| .* \| 2\.000x \| \*\*no\*\* \|' "$TMP/aa.md"
# only -p's reference compiled first
expect_grep '^bench-aa: 1 files compiled or found in the compile cache in ' "$TMP/out"
expect_grep '^0 of 4 launches in 0\.98x-1\.02x \(range 2\.000x-2\.000x\)\.$' "$TMP/aa.md"
done_testing
