# tools/run-main (`make run`) on fake ranks (the candidate takes 5 us, the
# reference 10 us): one row per known-good candidate of the problems named,
# a count, and exit 1 when one did not pass -- 002 at its default shape is
# flagged, 5 us being below its roofline bound -- and a candidate that was
# not timed (crashed) shows no figures, only why
. "$(dirname "$0")/lib.sh"
export PKB_RANK_CMD=$ROOT/build/tests/fake_rank PKB_FAKE_MODE=ok PKB_TEST_GPUS=4
cd "$ROOT"
c=$(ls problems/003_broadcast/solutions/ok_*.cu | wc -l)
expect_exit 0 tools/run-main -p 3
expect_grep '^003_broadcast +ok_oneshot_push\.cu +pass +10\.00 +5\.00 +2\.00x$' "$TMP/out"
expect_grep "^$c of $c candidates passed$" "$TMP/out"
# compiled first: 003's reference and its candidates
expect_grep "^run: $((c + 1)) files compiled or found in the compile cache in " "$TMP/out"
n=$(grep -c '^00[0-9]_' "$TMP/out")
[ "$n" = "$c" ] && ok || not_ok "expected $c rows, got $n"
c2=$(ls problems/002_allgather/solutions/ok_*.cu | wc -l)
expect_exit 1 tools/run-main -p 002,3
expect_grep '^002_allgather +ok_oneshot_pull\.cu +flagged ' "$TMP/out"
expect_grep "^$c of $((c + c2)) candidates passed$" "$TMP/out"
PKB_FAKE_MODE=crash expect_exit 1 tools/run-main -p 3
if grep '^003' "$TMP/out" | grep -q ' pass \|10\.00'; then not_ok "a crashed candidate shows figures"; else ok; fi
expect_grep '^003_broadcast +ok_oneshot_push\.cu +runtime_error' "$TMP/out"
PKB_TEST_GPUS=1 expect_exit 9 tools/run-main
expect_grep 'needs a machine with at least 2 NVIDIA GPUs' "$TMP/out"
done_testing
