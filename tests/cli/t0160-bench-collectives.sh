# tools/bench-collectives and tools/collectives-table on fake ranks (whose
# candidate always takes 5 us against the reference's 10 us): one JSON line
# per candidate and size, the table keeps each size's fastest passing
# candidate and judges issue 3's targets; a flagged candidate is listed as
# not passing and gets no row; several files read as one
. "$(dirname "$0")/lib.sh"
export PKB_RANK_CMD=$ROOT/build/tests/fake_rank PKB_FAKE_MODE=ok PKB_TEST_GPUS=4
cd "$ROOT"
expect_exit 0 tools/bench-collectives -p 001 -s "8K 256M" -o "$TMP/c"
[ -n "${THUNDERKITTENS_ROOT:-}" ] || expect_grep '^001_allreduce 8K ok_tk_pgl\.cu skipped: THUNDERKITTENS_ROOT' "$TMP/out"
n=$(wc -l < "$TMP/c.jsonl")
# a candidate of a backend this machine lacks (ThunderKittens, Triton) is
# skipped, saying so
runs() { for f in "$@"; do [ -z "$(backend_missing "$(backend_of "$f")")" ] && echo "$f"; done; }
c=$(. tools/lib.sh; runs problems/001_allreduce/solutions/ok_*.cu | wc -l)
[ "$n" = $((2 * c)) ] && ok || not_ok "expected $((2 * c)) evals (2 sizes x $c candidates), got $n"
expect_grep '^\| 001_allreduce \| 8K \| ok_.*\.cu \| 10\.00 \| 5\.00 \| 2\.00x \| .* \| <= 10 us and >= 2x \| yes \|$' "$TMP/c.md"
# 5 us is below 256 MiB's bound: flagged, listed, no row
expect_grep "^$n evals, $c not passing; 0 targets missed\.$" "$TMP/c.md"
expect_grep '^- allreduce 256M ok_twoshot\.cu: flagged: .* below the hardware.s lower bound' "$TMP/c.md"
if grep -q '^| 001_allreduce | 256M' "$TMP/c.md"; then not_ok "a flagged size has a row"; else ok; fi
PKB_FAKE_MODE=escape expect_exit 0 tools/bench-collectives -p 002 -s 8K -o "$TMP/e"
c2=$(. tools/lib.sh; runs problems/002_allgather/solutions/ok_*.cu | wc -l)
expect_grep "^$c2 evals, $c2 not passing; 0 targets missed\.$" "$TMP/e.md"
k=$(grep -c '^- allgather 8K ok_.*\.cu: flagged: work escaped' "$TMP/e.md")
[ "$k" = "$c2" ] && ok || not_ok "expected $c2 candidates flagged for escaped work, got $k"
if grep -q '^| 002_allgather' "$TMP/e.md"; then not_ok "a flagged candidate has a row"; else ok; fi
expect_exit 0 tools/collectives-table "$TMP/c.jsonl" "$TMP/e.jsonl"
expect_grep "^$((n + c2)) evals, $((c + c2)) not passing; 0 targets missed\.$" "$TMP/out"
expect_grep '^\| 001_allreduce \| 8K ' "$TMP/out"
# at W = 8 (the original's setting), on eight pretend GPUs
PKB_TEST_GPUS=8 expect_exit 0 tools/bench-collectives -p 008 -s 8K -w 8 -o "$TMP/w8"
c8=$(. tools/lib.sh; runs problems/008_alltoall/solutions/ok_*.cu | wc -l)
k=$(grep -c '"world": *8' "$TMP/w8.jsonl")
[ "$k" = "$c8" ] && ok || not_ok "expected $c8 evals at W = 8, got $k"
expect_grep '^\| 008_alltoall \| 8K \| ok_.*\.cu \| 10\.00 \| 5\.00 \| 2\.00x ' "$TMP/w8.md"
expect_grep "^W = 8 \\(issue 3's targets are set for W = 4\\)$" "$TMP/w8.md"
# runs at two world sizes read together: a table each, never one row for both
expect_exit 0 tools/collectives-table "$TMP/c.jsonl" "$TMP/w8.jsonl"
expect_grep '^W = 4$' "$TMP/out"
expect_grep '^W = 8 ' "$TMP/out"
k=$(grep -c '^| 0' "$TMP/out")
[ "$k" = 2 ] && ok || not_ok "expected a row for 001 at W = 4 and one for 008 at W = 8, got $k rows"
# -c: only the candidates named by a pattern, and every one of them
expect_exit 0 tools/bench-collectives -p 001,003 -s 8K -c 'ok_*lamport*,ok_chain_push.cu' -o "$TMP/c"
want=$(ls problems/001_allreduce/solutions/ok_*lamport*.cu problems/003_broadcast/solutions/ok_*lamport*.cu \
	problems/003_broadcast/solutions/ok_chain_push.cu | xargs -n1 basename | sort)
got=$(python3 -c 'import json,sys; [print(json.loads(l)["bench_candidate"]) for l in open(sys.argv[1])]' "$TMP/c.jsonl" | sort)
[ -n "$got" ] && [ "$got" = "$want" ] && ok || not_ok "-c ran [$got], expected [$want]"
# compiled first: the two references and the candidates -c picks
expect_grep "^bench-collectives: $((2 + $(echo "$want" | wc -l))) files compiled or found in the compile cache in " "$TMP/out"
# a pattern is matched against candidates' names only, never globbed here
expect_exit 0 tools/bench-collectives -p 001 -s 8K -c '*' -o "$TMP/g"
n=$(wc -l < "$TMP/g.jsonl")
[ "$n" = "$c" ] && ok || not_ok "-c '*' ran $n evals, expected $c (every candidate of 001)"
PKB_TEST_GPUS=4 expect_exit 9 tools/bench-collectives -p 008 -s 8K -w 8 -o "$TMP/w8b"
expect_grep 'needs 8 NVIDIA GPUs, found 4' "$TMP/out"
done_testing
