# compare and --inspect on saved outputs (safetensors written by the test helper)
. "$(dirname "$0")/lib.sh"
W=$ROOT/build/tests/test_safetensors
"$W" write "$TMP/a" same && "$W" write "$TMP/b" same && "$W" write "$TMP/c" differ && ok || not_ok "writing fixtures"
expect_exit 0 "$PKB" compare "$TMP/a" "$TMP/b"
expect_grep "rank 1 out +match" "$TMP/out"
expect_exit 3 "$PKB" compare "$TMP/a" "$TMP/c"
expect_grep "rank 1 out +MISMATCH: 1 of 64 wrong; worst at 5" "$TMP/out"
expect_exit 0 "$PKB" compare --inspect "$TMP/a"
expect_grep "pkb_problem=1" "$TMP/out"
expect_grep "out +bf16 +\(8, 8\)" "$TMP/out"
mkdir -p "$TMP/empty"
expect_exit 1 "$PKB" compare "$TMP/a" "$TMP/empty"
expect_exit 1 "$PKB" compare --inspect "$TMP/empty"
printf 'garbage' > "$TMP/empty/rank_0_outputs.safetensors"
expect_exit 1 "$PKB" compare --inspect "$TMP/empty"
expect_exit 2 "$PKB" compare "$TMP/a"
done_testing
