# command-line bugs of issue 30's "Also found" list: `--json -` is stdout,
# compare's tolerances are parsed strictly, and a failed eval that launched
# nothing names no log folder ("rank logs kept in (null)"), and a directory
# given as the candidate is an input error; roofline and show refuse shapes
# too large for int64 byte counts; a hw without net_bw (calibrated on one GPU)
. "$(dirname "$0")/lib.sh"
cd "$TMP" || exit 1
expect_exit 0 "$PKB" list --json -
[ ! -e "$TMP/-" ] && ok || not_ok "list --json - wrote a file named '-'"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert isinstance(d, list) and d' "$TMP/out" \
	&& ok || not_ok "list --json - did not write a JSON array to stdout"
expect_exit 2 "$PKB" compare --atol abc "$TMP" "$TMP"
expect_grep "atol.*abc" "$TMP/err"
expect_exit 2 "$PKB" compare --rtol 1e-3x "$TMP" "$TMP"
expect_grep "rtol" "$TMP/err"
expect_exit 2 "$PKB" compare --atol -1 "$TMP" "$TMP"
P=$ROOT/problems/001_allreduce/solutions
expect_exit 4 "$PKB" eval 1 "$P/bad_no_compile.cu" -q --json -
expect_grep '"outcome": "compile_error"' "$TMP/out"
! grep -q "(null)" "$TMP/err" "$TMP/out" && ok || not_ok "eval printed (null)"
# a directory as the candidate: an input error saying so, not an I/O error
# followed by compile_error
mkdir -p "$TMP/dir.cu"
expect_exit 1 "$PKB" eval 1 "$TMP/dir.cu"
expect_grep "is not a source file \(a directory\)" "$TMP/err"
expect_exit 1 "$PKB" run 1 --solution "$TMP/dir.cu"
expect_grep "is not a source file \(a directory\)" "$TMP/err"
expect_exit 1 "$PKB" build "$TMP/dir.cu"
expect_grep "is not a source file \(a directory\)" "$TMP/err"
# shapes whose byte counts would not fit in int64 are refused
expect_exit 1 "$PKB" roofline 1 --m 1099511627776 --n 1099511627776
expect_grep "too large" "$TMP/err"
expect_exit 1 "$PKB" show 1 --m 4294967296 --n 1
expect_grep "too large" "$TMP/err"
expect_exit 0 "$PKB" roofline 1 --m 1048576 --n 1048576
expect_grep "interconnect" "$TMP/out"
# hw 'local' calibrated on one GPU has no net_bw: roofline refuses a problem
# that crosses the interconnect instead of dividing by 0 or 1 B/s
mkdir -p "$TMP/cache/hw"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); del d["net_bw"]; d["name"]="local"; json.dump(d, open(sys.argv[2], "w"))' \
	"$ROOT/hw/h100_8.json" "$TMP/cache/hw/local.json" && ok || not_ok "writing hw local"
PKB_CACHE=$TMP/cache expect_exit 1 "$PKB" roofline 1 --hw local
expect_grep "no interconnect bandwidth" "$TMP/err"
# a stored 0 is still refused as a figure: absent is the way to say 'not measured'
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["net_bw"]=0.0; json.dump(d, open(sys.argv[1], "w"))' "$TMP/cache/hw/local.json"
PKB_CACHE=$TMP/cache expect_exit 1 "$PKB" roofline 1 --hw local
expect_grep "'net_bw' is missing or not a positive number" "$TMP/err"
# issue 39: --trial went through atoi, so '3x' was trial 3 and 'x' trial 0
expect_exit 2 "$PKB" run 1 --trial 3x
expect_grep "^error: --trial takes a non-negative integer, not '3x'" "$TMP/err"
expect_exit 2 "$PKB" run 1 --trial -1
done_testing
