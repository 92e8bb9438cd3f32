# every command answers -h with its usage on stdout and exit 0; the top level
# lists the commands; unknown commands and options are usage errors (2)
. "$(dirname "$0")/lib.sh"
expect_exit 0 "$PKB" --help
expect_grep "eval" "$TMP/out"
for c in list show run eval build roofline calibrate compare doctor hold agent; do
	expect_exit 0 "$PKB" "$c" -h
	expect_grep "usage: pkb $c" "$TMP/out"
done
expect_exit 2 "$PKB"
expect_exit 2 "$PKB" frobnicate
expect_grep "'frobnicate' is not a pkb command" "$TMP/err"
expect_exit 2 "$PKB" list --bogus
expect_exit 2 "$PKB" eval 1 x.cu --trials 0
expect_exit 2 "$PKB" eval 1 x.cu --dtype int3
expect_exit 2 "$PKB" eval 1 x.cu --deadline trial
expect_exit 2 "$PKB" eval 1 x.cu --deadline nope=3
expect_exit 2 "$PKB" eval 1
expect_exit 2 "$PKB" run
expect_exit 2 "$PKB" hold --for 0
expect_grep "^error: --for takes a number from 0.001 to 1e\+07, not .0.$" "$TMP/err"
expect_exit 2 "$PKB" hold extra
# every command's help fits 80 columns (the option tables align it)
for c in list show run eval build roofline calibrate compare doctor hold prompt generate \
	agent sweep score report; do
	"$PKB" "$c" -h | awk -v c="$c" 'length > 80 { print c ": " $0; bad = 1 } END { exit bad }' \
		&& ok || not_ok "$c -h has lines over 80 columns"
done
expect_exit 2 "$PKB" calibrate --timeout abc
expect_grep "^error: --timeout takes a number from 0.001 to 86400, not " "$TMP/err"
expect_exit 0 "$PKB" --help
expect_grep "^   agent +a model improves its kernel" "$TMP/out"
expect_exit 2 "$PKB" agent
expect_exit 2 "$PKB" agent 1 2 --model m --provider openai
expect_exit 0 "$PKB" --version
done_testing
