# tools/arch-check (issue 39): the real tree is clean but for what
# tools/arch-check.allow owes; on a tiny tree made here, a clean one passes
# and one violation of each kind is caught (exit 1, named), at the
# boundaries (120 and 121 body lines, 5 and 6 repeated lines); the
# allowlist excuses by name, and an entry without a reason or that matches
# nothing fails.
. "$(dirname "$0")/lib.sh"
AC=$ROOT/tools/arch-check

expect_exit 0 "$AC"
expect_grep '^arch-check: 0 violations, [0-9]+ allowed$' "$TMP/out"

# a clean tree: two modules calling one way, a function of 120 body lines,
# two problems sharing 5 lines and including problems/lib
T=$TMP/tree
mk_clean() {
	rm -rf "$T"
	mkdir -p "$T/src" "$T/include" "$T/problems/001_one" "$T/problems/002_two" "$T/problems/lib"
	printf 'build/%%.o: src/%%.c\n\t@mkdir -p build && gcc -c -Isrc $< -o $@\n' >"$T/Makefile"
	printf '#ifndef A_H\n#define A_H\nint a_f(void);\n#endif\n' >"$T/src/a.h"
	printf '#include "a.h"\n#include "b.h"\nint a_f(void)\n{\n\treturn b_f();\n}\n' >"$T/src/a.c"
	printf '#ifndef B_H\n#define B_H\nint b_f(void);\n#endif\n' >"$T/src/b.h"
	{ printf '#include "b.h"\nint b_f(void)\n{\n\tint x = 0;\n'
	  for i in $(seq 1 116); do printf '\tx += %d;\n' "$i"; done
	  printf '\treturn x;\n}\n'; } >"$T/src/b.c"
	for p in 001_one 002_two; do
		{ printf '#include "pkb_problem.h"\n#include "../lib/shared.h"\n'
		  printf 'static int f_%s(int a)\n{\n' "${p%%_*}"
		  for i in 1 2 3 4 5; do printf '\ta = a * %d + 1;\n' "$i"; done
		  printf '\treturn a - %d;\n}\n' "${p%%_*}"; } >"$T/problems/$p/problem.c"
		printf '__global__ void k_%s(void) {}\n' "${p%%_*}" >"$T/problems/$p/reference.cu"
	done
	printf '/* shared */\n' >"$T/problems/lib/shared.h"
}
# check WANT [GREP]: arch-check on the tree exits WANT, printing GREP
check() {
	expect_exit "$1" "$AC" "$T"
	[ -z "${2:-}" ] || expect_grep "$2" "$TMP/out"
}
mk_clean
check 0 '^arch-check: 0 violations, 0 allowed$'

# include cycle: b.h includes a.h, a.c includes b.h
mk_clean
sed -i 's/^#define B_H$/#define B_H\n#include "a.h"/' "$T/src/b.h"
check 1 '^include-cycle a,b: a -> b \(a.c includes b.h\); b -> a \(b.h includes a.h\)'

# call cycle without an include: b.c calls a_f through its own declaration
mk_clean
sed -i 's/^\treturn x;$/\treturn x + a_f();/; s/^#include "b.h"$/#include "b.h"\nint a_f(void);/' "$T/src/b.c"
check 1 '^call-cycle a,b: a -> b \(a.o uses b_f\); b -> a \(b.o uses a_f\)'
expect_exit 1 grep -q '^include-cycle' "$TMP/out"

# a body of 121 lines
mk_clean
sed -i 's/^\treturn x;$/\tx++;\n\treturn x;/' "$T/src/b.c"
check 1 '^long-function src/b.c:b_f: src/b.c:3: b_f is 121 lines \(at most 120\)'
# in include/ too
mk_clean
cp "$T/src/b.c" "$T/include/big.h"
sed -i 's/^\treturn x;$/\tx++;\n\treturn x;/' "$T/include/big.h"
check 1 '^long-function include/big.h:b_f'

# one problem including another's folder, by a relative path and by name
mk_clean
printf '#include "../002_two/reference.cu"\n' >>"$T/problems/001_one/reference.cu"
check 1 '^problem-include problems/001_one/reference.cu -> ../002_two/reference.cu: '
mk_clean
mkdir -p "$T/problems/002_two/solutions"
printf '#include "001_one/helper.cuh"\n' >"$T/problems/002_two/solutions/ok_x.cu"
check 1 '^problem-include problems/002_two/solutions/ok_x.cu -> 001_one/helper.cuh'

# six repeated lines (comments, blank lines and a brace between them do
# not count or break the run; whitespace does not matter)
mk_clean
sed -i 's/^\treturn a/\ta = a * 6 + 1;\n\treturn a/' "$T/problems/001_one/problem.c"
sed -i 's/^\treturn a/\n\t\/* here *\/\n   a  =  a * 6 + 1;\n\treturn a/' "$T/problems/002_two/problem.c"
check 1 '^repeated-code problems/001_one/problem.c problems/002_two/problem.c: problems/001_one/problem.c:5-10 = problems/002_two/problem.c:5-12 \(6 lines\)'

# the allowlist: a pair is excused by its two files, or by the pair
printf 'repeated-code problems/001_one/problem.c -- a test\nrepeated-code problems/002_two/problem.c -- a test\n' >"$TMP/allow"
expect_exit 0 "$AC" --allow "$TMP/allow" "$T"
expect_grep '^arch-check: 0 violations, 1 allowed$' "$TMP/out"
expect_exit 0 "$AC" -v --allow "$TMP/allow" "$T"
expect_grep '^allowed: repeated-code ' "$TMP/out"
printf 'repeated-code problems/001_one/problem.c -- a test\n' >"$TMP/allow"
expect_exit 1 "$AC" --allow "$TMP/allow" "$T"
# an entry without a reason, of no known kind, or that excuses nothing
printf 'repeated-code problems/001_one/problem.c problems/002_two/problem.c\n' >"$TMP/allow"
expect_exit 1 "$AC" --allow "$TMP/allow" "$T"
expect_grep 'not "KIND KEY -- reason"' "$TMP/out"
printf 'long-function src/b.c:b_f -- not long\n' >"$TMP/allow"
mk_clean
expect_exit 1 "$AC" --allow "$TMP/allow" "$T"
expect_grep 'long-function src/b.c:b_f matches nothing: remove it' "$TMP/out"
printf 'short-function x -- no such kind\n' >"$TMP/allow"
expect_exit 1 "$AC" --allow "$TMP/allow" "$T"
expect_exit 2 "$AC" --bogus
done_testing
