# host-side logic of the candidates' headers, compiled with nvcc and run
# without a GPU: pkb_ce_cuts (include/pkb_ce.cuh), the cut of a copy-engine
# step into parts, and the "empty" value of include/pkb_lamport.cuh; each
# test breaks its rule once to show it can fail
. "$(dirname "$0")/lib.sh"
NVCC=${NVCC:-${CUDA_HOME:-/usr/local/cuda}/bin/nvcc}
[ -x "$NVCC" ] || NVCC=nvcc

# host_test NAME HEADER SED MUTANT_FAIL: tests/unit/hosttest_NAME.cu passes
# against include/HEADER, and fails, printing MUTANT_FAIL, against a copy of
# HEADER edited by SED
host_test() {
	local name=$1 header=$2 edit=$3 want=$4 src=$ROOT/tests/unit/hosttest_$1.cu
	expect_exit 0 "$NVCC" -std=c++17 -I"$ROOT/include" -o "$TMP/$name" "$src"
	expect_exit 0 "$TMP/$name"
	expect_grep '^ok [0-9]+ cases, 0 failed$' "$TMP/out"
	mkdir -p "$TMP/mutant_$name"
	sed "$edit" "$ROOT/include/$header" > "$TMP/mutant_$name/$header"
	cp "$src" "$TMP/mutant_$name/t.cu"
	expect_exit 0 "$NVCC" -std=c++17 -I"$TMP/mutant_$name" -I"$ROOT/include" \
		-o "$TMP/mutant_$name/t" "$TMP/mutant_$name/t.cu"
	expect_exit 1 "$TMP/mutant_$name/t"
	expect_grep "$want" "$TMP/out"
}

# a mutant: halves that never stop short of the tail (the last part too long)
host_test ce_cuts pkb_ce.cuh 's/bytes - at > ce->tail/bytes - at > 4 * ce->tail/' \
	'^FAIL .*last part over the tail'
# a mutant: an "empty" high half of a 16-bit pair goes out as is
host_test lamport pkb_lamport.cuh 's/if ((x >> 16) == 0xffffu)/if (0)/' \
	'^FAIL high half: empty kept'
done_testing
