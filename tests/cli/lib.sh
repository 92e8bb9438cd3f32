# tests/cli/lib.sh -- helpers for the CLI tests (git style). Each test script
# sources this, runs the real binary, and ends with `done_testing`, which
# prints "<script>: N passed, N failed".
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PKB=$ROOT/build/pkb
export PKB_ROOT=$ROOT PKB_CACHE=${PKB_CACHE:-$ROOT/build/cache}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
_pass=0 _fail=0
ok() { _pass=$((_pass + 1)); }
not_ok() { _fail=$((_fail + 1)); echo "FAIL $(basename "$0"): $*" >&2; }
# expect_exit CODE CMD... : run, keep stdout/stderr in $TMP/out, $TMP/err
expect_exit() {
	local want=$1; shift
	"$@" >"$TMP/out" 2>"$TMP/err"; local got=$?
	if [ "$got" = "$want" ]; then ok; else not_ok "'$*' exited $got, expected $want: $(head -c 300 "$TMP/err")"; fi
}
expect_grep() {   # expect_grep PATTERN FILE
	if grep -qE -- "$1" "$2"; then ok; else not_ok "no '$1' in $2: $(head -c 300 "$2")"; fi
}
done_testing() { echo "$(basename "$0"): $_pass passed, $_fail failed"; [ "$_fail" = 0 ]; }
