# tools/test-gpu itself, on fake ranks (PKB_RANK_CMD) and pretend GPUs: every
# case runs exactly once, in lanes on disjoint GPU sets, and is counted and
# recorded. Fake ranks pass everything, so the bad_ candidates whose verdict
# comes from the GPU fail here, while compile_error and load_refused ones
# (decided before any launch) pass.
. "$(dirname "$0")/lib.sh"
export PKB_RANK_CMD=$ROOT/build/tests/fake_rank PKB_FAKE_MODE=ok PKB_TEST_GPUS=4
cd "$ROOT"
expect_exit 1 tools/test-gpu -p 005 -w "2 4" -s 3x1001 -o "$TMP/r.jsonl"
# 005: reference + 2 ok_ at two shapes, 3 bad_ at the default: 9 cases per W
n=$(wc -l < "$TMP/r.jsonl")
[ "$n" = 18 ] && ok || not_ok "expected 18 recorded cases, got $n"
expect_grep '^12 passed, 6 failed$' "$TMP/out"
# W = 2 ran on both pairs; W = 4 on all four
expect_grep '"world":2,.*"gpus":"0,1"' "$TMP/r.jsonl"
expect_grep '"world":2,.*"gpus":"2,3"' "$TMP/r.jsonl"
expect_grep '"world":4,.*"gpus":"0,1,2,3"' "$TMP/r.jsonl"
# every case once: no duplicate (world, shape, solution)
d=$(python3 -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; k=[(x["world"],x["shape"],x["solution"]) for x in r]; print(len(k)-len(set(k)))' "$TMP/r.jsonl")
[ "$d" = 0 ] && ok || not_ok "$d cases ran twice"
expect_grep '^FAIL 005_scatter W=2 default bad_zeros.cu +expected mismatch \(3\), got exit 0' "$TMP/out"
done_testing
