# compare and --inspect on saved outputs (safetensors written by the test helper)
. "$(dirname "$0")/lib.sh"
W=$ROOT/build/tests/test_safetensors
"$W" write "$TMP/a" same && "$W" write "$TMP/b" same && "$W" write "$TMP/c" differ && ok || not_ok "writing fixtures"
expect_exit 0 "$PKB" compare "$TMP/a" "$TMP/b"
expect_grep "rank 1 out +match" "$TMP/out"
expect_exit 3 "$PKB" compare "$TMP/a" "$TMP/c"
expect_grep "rank 1 out +MISMATCH: 1 of 64 wrong; worst at 5" "$TMP/out"
# metadata that names a problem of pkb's but no instance of it is an error,
# never the default (zero) tolerance in silence
"$W" write "$TMP/m" badmeta && ok || not_ok "writing badmeta"
expect_exit 1 "$PKB" compare "$TMP/m" "$TMP/b"
expect_grep "^error: .*/rank_0_outputs.safetensors: metadata 'world' is '2x', not a number from 1 to 4096" "$TMP/err"
expect_exit 0 "$PKB" compare --inspect "$TMP/a"
expect_grep "pkb_problem=1" "$TMP/out"
expect_grep "out +bf16 +\(8, 8\)" "$TMP/out"
mkdir -p "$TMP/empty"
expect_exit 1 "$PKB" compare "$TMP/a" "$TMP/empty"
expect_exit 1 "$PKB" compare --inspect "$TMP/empty"
printf 'garbage' > "$TMP/empty/rank_0_outputs.safetensors"
expect_exit 1 "$PKB" compare --inspect "$TMP/empty"
expect_exit 2 "$PKB" compare "$TMP/a"
# complex64: both halves of every element are compared (a change in the last
# imaginary part only is a mismatch, with --exact too)
"$W" write "$TMP/za" c64same && "$W" write "$TMP/zb" c64same && "$W" write "$TMP/zc" c64differ && ok || not_ok "writing complex fixtures"
expect_exit 0 "$PKB" compare --exact "$TMP/za" "$TMP/zb"
expect_exit 3 "$PKB" compare "$TMP/za" "$TMP/zc"
expect_grep "rank 0 out +MISMATCH: 1 of 8 wrong; worst at 7" "$TMP/out"
expect_exit 3 "$PKB" compare --exact "$TMP/za" "$TMP/zc"
expect_exit 0 "$PKB" compare --inspect "$TMP/zc"
expect_grep "out +complex64 +\(4\) +mean\|x\| 7 +max\|x\| 40 " "$TMP/out"
done_testing
