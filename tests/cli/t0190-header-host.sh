# host-side logic of the candidates' headers, compiled with nvcc and run
# without a GPU: pkb_ce_cuts (include/pkb_ce.cuh), the cut of a copy-engine
# step into parts; the copy-engine candidates' calls replayed at W = 2-8
# (hosttest_ce_sim.cu: hangs, races, results); and the "empty" value of
# include/pkb_lamport.cuh; each test breaks its rule once to show it can fail
. "$(dirname "$0")/lib.sh"
NVCC=${NVCC:-${CUDA_HOME:-/usr/local/cuda}/bin/nvcc}
[ -x "$NVCC" ] || NVCC=nvcc

# host_test NAME: tests/unit/hosttest_NAME.cu passes against include/
host_test() {
	expect_exit 0 "$NVCC" -std=c++17 -O2 -I"$ROOT/include" -I"$ROOT" -o "$TMP/$1" \
		"$ROOT/tests/unit/hosttest_$1.cu"
	expect_exit 0 "$TMP/$1"
	expect_grep '^ok [0-9]+ cases, 0 failed$' "$TMP/out"
}

# mutant NAME HEADER SED FAIL: it fails, printing FAIL, against a copy of
# include/HEADER edited by SED
mutant() {
	local dir=$TMP/mutant_$1_$((++_mutants))
	mkdir -p "$dir"
	sed "$3" "$ROOT/include/$2" > "$dir/$2"
	cmp -s "$dir/$2" "$ROOT/include/$2" && not_ok "the edit '$3' changes nothing in $2"
	cp "$ROOT/tests/unit/hosttest_$1.cu" "$dir/t.cu"
	expect_exit 0 "$NVCC" -std=c++17 -O2 -I"$dir" -I"$ROOT/include" -I"$ROOT" -o "$dir/t" \
		"$dir/t.cu"
	expect_exit 1 "$dir/t"
	expect_grep "$4" "$TMP/out"
}
_mutants=0

host_test ce_cuts
# halves that never stop short of the tail (the last part too long)
mutant ce_cuts pkb_ce.cuh 's/bytes - at > ce->tail/bytes - at > 4 * ce->tail/' \
	'^FAIL .*last part over the tail'
host_test ce_sim
# no barrier at the start of a call: its transfers can overwrite staging that a
# peer still reads in its last call
mutant ce_sim pkb_ce.cuh 's/^\tpkb_ce_meet(ctx->dev, st);$/\t;/' \
	'^FAIL .*: a race on rank [0-9]+.s symmetric buffer'
# the pulls of an all-reduce no longer wait for the peers' sums
mutant ce_sim pkb_ce.cuh \
	's/if (pull \&\& last \&\& c \&\& cudaStreamWaitEvent(st, ce->summed\[c - 1\], 0))/if (0)/' \
	'^FAIL 001 ok_ce_twoshot .*: a race on rank [0-9]+.s symmetric buffer'
host_test lamport
# an "empty" high half of a 16-bit pair goes out as is
mutant lamport pkb_lamport.cuh 's/if ((x >> 16) == 0xffffu)/if (0)/' \
	'^FAIL high half: empty kept'
done_testing
