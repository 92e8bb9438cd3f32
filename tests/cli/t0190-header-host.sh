# host-side logic of the candidates' headers, compiled with nvcc and run
# without a GPU: pkb_ce_cuts (include/pkb_ce.cuh), the cut of a copy-engine
# step into parts; the test breaks the rule once to show it can fail
. "$(dirname "$0")/lib.sh"
NVCC=${NVCC:-${CUDA_HOME:-/usr/local/cuda}/bin/nvcc}
[ -x "$NVCC" ] || NVCC=nvcc
src=$ROOT/tests/unit/hosttest_ce_cuts.cu
expect_exit 0 "$NVCC" -std=c++17 -I"$ROOT/include" -o "$TMP/cuts" "$src"
expect_exit 0 "$TMP/cuts"
expect_grep '^ok [0-9]+ cases, 0 failed$' "$TMP/out"
# a mutant: halves that never stop short of the tail (the last part too long)
sed 's/bytes - at > ce->tail/bytes - at > 4 * ce->tail/' "$ROOT/include/pkb_ce.cuh" > "$TMP/pkb_ce.cuh"
cp "$src" "$TMP/t.cu"
expect_exit 0 "$NVCC" -std=c++17 -I"$TMP" -I"$ROOT/include" -o "$TMP/mutant" "$TMP/t.cu"
expect_exit 1 "$TMP/mutant"
expect_grep '^FAIL .*last part over the tail' "$TMP/out"
done_testing
