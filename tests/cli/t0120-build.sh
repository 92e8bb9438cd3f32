# pkb build: compile into the cache and scan the symbols, no GPU; the exit
# code is that of the first refused file (4 compile_error, 5 load_refused);
# mutants (a good file plus replacements)
. "$(dirname "$0")/lib.sh"
export PKB_CACHE=$TMP/cache
S=$ROOT/problems/001_allreduce/solutions
expect_exit 0 "$PKB" build "$S/ok_oneshot_pull.cu"
expect_grep "^ok .*ok_oneshot_pull.cu \(compiled [0-9a-f]{12}\)" "$TMP/out"
expect_exit 0 "$PKB" build "$S/ok_oneshot_pull.cu"
expect_grep "\(cached [0-9a-f]{12}\)" "$TMP/out"
expect_exit 4 "$PKB" build "$S/bad_no_compile.cu"
expect_grep "^compile_error: .*bad_no_compile.cu" "$TMP/out"
expect_grep "launch_the_allreduce" "$TMP/out"
expect_exit 5 "$PKB" build -q "$S/bad_calls_nccl.cu" "$S/ok_oneshot_pull.cu"
expect_grep "^load_refused: .*'ncclAllReduce'" "$TMP/out"
# the reference uses NCCL: refused as a cuda candidate, accepted as a reference
expect_exit 5 "$PKB" build "$ROOT/problems/001_allreduce/reference.cu"
expect_exit 0 "$PKB" build --backend reference "$ROOT/problems/001_allreduce/reference.cu"
expect_exit 1 "$PKB" build "$TMP/none.cu"
expect_grep "cannot read" "$TMP/err"
expect_exit 2 "$PKB" build
expect_exit 2 "$PKB" build --backend nope "$S/ok_oneshot_pull.cu"
# a local header is part of the key: change it and the file compiles again
cat > "$TMP/body.cuh" <<'CU'
#include "pkb.h"
PKB_SOLUTION;
extern "C" int pkb_init(pkb_ctx *ctx) { return 0; }
extern "C" int pkb_run(pkb_ctx *ctx) { return 0; }
extern "C" int pkb_fini(pkb_ctx *ctx) { return 0; }
CU
printf '#include "body.cuh"\n' > "$TMP/inc.cu"
expect_exit 0 "$PKB" build "$TMP/inc.cu"
expect_grep "\(compiled " "$TMP/out"
expect_exit 0 "$PKB" build "$TMP/inc.cu"
expect_grep "\(cached " "$TMP/out"
printf '// changed\n' >> "$TMP/body.cuh"
expect_exit 0 "$PKB" build "$TMP/inc.cu"
expect_grep "\(compiled " "$TMP/out"
# problems/lib (code sibling problems share) is on a reference's include path
# and in its key, recursively: a change to a lib header the reference
# includes, or to one that header includes, compiles it again; a candidate
# does not see problems/lib (candidates stay standalone)
mkdir -p "$TMP/root/problems/lib"
cp -r "$ROOT/include" "$TMP/root/"
printf '#include "lib_inner.h"\n' > "$TMP/root/problems/lib/lib_outer.cuh"
printf '#define LIB_PART 1\n' > "$TMP/root/problems/lib/lib_inner.h"
cat > "$TMP/libref.cu" <<'CU'
#include "pkb.h"
#include "lib_outer.cuh"
PKB_SOLUTION;
extern "C" int pkb_init(pkb_ctx *ctx) { return LIB_PART - 1; }
extern "C" int pkb_run(pkb_ctx *ctx) { return 0; }
extern "C" int pkb_fini(pkb_ctx *ctx) { return 0; }
CU
export PKB_ROOT=$TMP/root
expect_exit 0 "$PKB" build --backend reference "$TMP/libref.cu"
expect_grep "\(compiled " "$TMP/out"
key1=$(grep -oE '(compiled|cached) [0-9a-f]{12}' "$TMP/out")
expect_exit 0 "$PKB" build --backend reference "$TMP/libref.cu"
expect_grep "\(cached " "$TMP/out"
printf '// changed\n' >> "$TMP/root/problems/lib/lib_inner.h"
expect_exit 0 "$PKB" build --backend reference "$TMP/libref.cu"
expect_grep "\(compiled " "$TMP/out"
key2=$(grep -oE '(compiled|cached) [0-9a-f]{12}' "$TMP/out")
[ "${key1#* }" != "${key2#* }" ] && ok || not_ok "a lib header's change left the key ${key1#* }"
printf '// changed\n' >> "$TMP/root/problems/lib/lib_outer.cuh"
expect_exit 0 "$PKB" build --backend reference "$TMP/libref.cu"
expect_grep "\(compiled " "$TMP/out"
expect_exit 4 "$PKB" build --backend cuda "$TMP/libref.cu"
expect_grep "lib_outer.cuh" "$TMP/out"
export PKB_ROOT=$ROOT
# cuDNN is linked for a source that includes cudnn.h through a local header
# too (a variant that includes a cuDNN candidate): the library is NEEDED
cat > "$TMP/dnn.cuh" <<'CU'
#include <cudnn.h>
#include "pkb.h"
PKB_SOLUTION;
extern "C" int pkb_init(pkb_ctx *ctx) { return cudnnGetVersion() == 0; }
extern "C" int pkb_run(pkb_ctx *ctx) { return 0; }
extern "C" int pkb_fini(pkb_ctx *ctx) { return 0; }
CU
printf '#define VARIANT 2\n#include "dnn.cuh"\n' > "$TMP/dnn_variant.cu"
expect_exit 0 "$PKB" build "$TMP/dnn_variant.cu"
so=$(ls -t "$PKB_CACHE"/*.so | head -1)
expect_exit 0 sh -c "readelf -d '$so' | grep -q 'NEEDED.*libcudnn'"
# cuFFT the same way (059, 060): without -lcufft the object has undefined
# cufft* symbols and dlopen(RTLD_NOW) refuses it; a source without the
# header does not get the library
cat > "$TMP/fft.cu" <<'CU'
#include <cufft.h>
#include "pkb.h"
PKB_SOLUTION;
extern "C" int pkb_init(pkb_ctx *ctx) { cufftHandle h; return cufftCreate(&h) != CUFFT_SUCCESS; }
extern "C" int pkb_run(pkb_ctx *ctx) { return 0; }
extern "C" int pkb_fini(pkb_ctx *ctx) { return 0; }
CU
expect_exit 0 "$PKB" build "$TMP/fft.cu"
so=$(ls -t "$PKB_CACHE"/*.so | head -1)
expect_exit 0 sh -c "readelf -d '$so' | grep -q 'NEEDED.*libcufft'"
expect_exit 1 sh -c "readelf -d '$so' | grep -q 'NEEDED.*libcudnn'"
# a mutant (pkb-mutant-of): the good file with its blocks' replacements, built
# from the mutant's folder (the good file's local headers resolve); the good
# file is part of the key; every way of writing one wrong is a compile_error
# with a one-line reason
mkdir -p "$TMP/m"
cat > "$TMP/m/side.cuh" <<'CU'
#define SIDE 1
CU
cat > "$TMP/m/ok_base.cu" <<'CU'
/*
 * a good file
 */
#include "pkb.h"
#include "side.cuh"
PKB_SOLUTION;
extern "C" int marker_good(void) { return SIDE; }
extern "C" int pkb_init(pkb_ctx *ctx) { return 0; }
extern "C" int pkb_run(pkb_ctx *ctx) { return 0; }
extern "C" int pkb_fini(pkb_ctx *ctx) { return 0; }
// twice
// twice
CU
mutant() {   # mutant NAME OF OLD NEW: a one-block mutant of OF in $TMP/m/NAME.cu
	printf '/*\n * a bad file\n * pkb-mutant-of: %s\n */\n\n/* pkb-replace */\n%s\n/* pkb-with */\n%s\n/* pkb-end */\n' \
		"$2" "$3" "$4" > "$TMP/m/$1.cu"
}
mutant bad_base ok_base.cu 'extern "C" int marker_good(void) { return SIDE; }' \
	'extern "C" int marker_bad(void) { return 0; }'
expect_exit 0 "$PKB" build "$TMP/m/bad_base.cu"
expect_grep "\(compiled " "$TMP/out"
so=$(ls -t "$PKB_CACHE"/*.so | head -1)
expect_exit 0 sh -c "nm -D '$so' | grep -q ' marker_bad\$'"
expect_exit 1 sh -c "nm -D '$so' | grep -q ' marker_good\$'"
expect_exit 0 sh -c "! ls '$PKB_CACHE'/*.mutant.cu 2>/dev/null"
expect_exit 0 "$PKB" build "$TMP/m/bad_base.cu"
expect_grep "\(cached " "$TMP/out"
printf '// the good file changed\n' >> "$TMP/m/ok_base.cu"
expect_exit 0 "$PKB" build "$TMP/m/bad_base.cu"
expect_grep "\(compiled " "$TMP/out"
mutant bad_gone ok_base.cu 'int not_there;' 'int x;'
expect_exit 4 "$PKB" build "$TMP/m/bad_gone.cu"
expect_grep "mutant: line 6: the lines to replace occur 0 times in ok_base.cu \(must be once\)" "$TMP/out"
mutant bad_twice ok_base.cu '// twice' '// once'
expect_exit 4 "$PKB" build "$TMP/m/bad_twice.cu"
expect_grep "occur 2 times in ok_base.cu" "$TMP/out"
mutant bad_midline ok_base.cu 'return SIDE; }' 'return 0; }'
expect_exit 4 "$PKB" build "$TMP/m/bad_midline.cu"
expect_grep "occur 0 times in ok_base.cu" "$TMP/out"
mutant bad_path ../ok_base.cu 'x' 'y'
expect_exit 4 "$PKB" build "$TMP/m/bad_path.cu"
expect_grep "mutant: pkb-mutant-of names '../ok_base.cu': a .cu file next to it" "$TMP/out"
mutant bad_nobase ok_none.cu 'x' 'y'
expect_exit 4 "$PKB" build "$TMP/m/bad_nobase.cu"
expect_grep "mutant: cannot read '.*ok_none.cu'" "$TMP/out"
printf '/*\n * pkb-mutant-of: ok_base.cu\n */\n\n' > "$TMP/m/bad_empty.cu"
expect_exit 4 "$PKB" build "$TMP/m/bad_empty.cu"
expect_grep "mutant: of ok_base.cu, but no pkb-replace block" "$TMP/out"
cat "$TMP/m/bad_base.cu" > "$TMP/m/bad_stray.cu"
printf 'int stray;\n' >> "$TMP/m/bad_stray.cu"
expect_exit 4 "$PKB" build "$TMP/m/bad_stray.cu"
expect_grep "mutant: line 11: outside a pkb-replace block" "$TMP/out"
printf '/*\n * pkb-mutant-of: ok_base.cu\n */\n/* pkb-replace */\nPKB_SOLUTION;\n' > "$TMP/m/bad_open.cu"
expect_exit 4 "$PKB" build "$TMP/m/bad_open.cu"
expect_grep "mutant: line 4: a pkb-replace block needs lines to replace, then pkb-with, then pkb-end" "$TMP/out"
printf '/*\n * pkb-mutant-of: ok_base.cu\n */\n#define SIDE 2\n' > "$TMP/m/bad_code.cu"
sed -n '5,$p' "$TMP/m/bad_base.cu" >> "$TMP/m/bad_code.cu"
expect_exit 4 "$PKB" build "$TMP/m/bad_code.cu"
expect_grep "mutant: line 4: outside a pkb-replace block" "$TMP/out"
# the tag counts in the header comment only
printf '/* a file */\n// pkb-mutant-of: ok_none.cu\n#include "ok_base.cu"\n' > "$TMP/m/prose.cu"
expect_exit 0 "$PKB" build "$TMP/m/prose.cu"
# issue 36: nvcc reads only the source's folder, pkb's headers, the CUDA
# toolkit and the system's compiler folders (Landlock), so a source cannot
# pull a file of the user's into its object or its log: an #include by
# absolute or relative path, or an assembler .incbin
mkdir -p "$TMP/home" "$TMP/cand"
echo "PKB_TEST_SECRET_f00d" > "$TMP/home/secret.txt"
landlock=$(python3 -c 'import ctypes; l = ctypes.CDLL(None, use_errno=True); print(l.syscall(444, None, 0, 1))')
if [ "${landlock:-0}" -ge 1 ]; then
	{ echo "#include \"$TMP/home/secret.txt\""; cat "$S/ok_oneshot_pull.cu"; } > "$TMP/cand/inc_abs.cu"
	{ echo '#include "../home/secret.txt"'; cat "$S/ok_oneshot_pull.cu"; } > "$TMP/cand/inc_rel.cu"
	{ cat "$S/ok_oneshot_pull.cu"; printf '__asm__(".section .rodata\\n.incbin \\"%s\\"\\n.text\\n");\n' "$TMP/home/secret.txt"; } > "$TMP/cand/incbin.cu"
	for f in inc_abs inc_rel incbin; do
		expect_exit 4 "$PKB" build "$TMP/cand/$f.cu"
		expect_grep "^compile_error: .*$f.cu" "$TMP/out"
		expect_grep "secret.txt(: Permission denied| *$)|file not found: .*secret.txt" "$TMP/out"
		if grep -q PKB_TEST_SECRET "$TMP/out" "$TMP/err"; then not_ok "$f: the secret reached the log"; else ok; fi
	done
	# the same file beside the source is the candidate's own: it compiles
	cp "$TMP/home/secret.txt" "$TMP/cand/mine.txt"
	{ cat "$S/ok_oneshot_pull.cu"; printf '__asm__(".section .rodata\\n.incbin \\"%s\\"\\n.text\\n");\n' "$TMP/cand/mine.txt"; } > "$TMP/cand/incbin_own.cu"
	expect_exit 0 "$PKB" build "$TMP/cand/incbin_own.cu"
else
	echo "t0120: SKIP the compile sandbox's file tests: Landlock is not available on this kernel" >&2
fi
# nvcc's environment is its own: no key of the user's reaches it (a stand-in
# nvcc prints what it gets and fails), and the log kept is its head
mkdir -p "$TMP/fakecuda/bin"
cat > "$TMP/fakecuda/bin/nvcc" <<'SH'
#!/bin/sh
[ "$1" = --version ] && { echo "fake nvcc"; exit 0; }
env
i=0; while [ $i -lt 300 ]; do echo "error line $i"; i=$((i + 1)); done
exit 1
SH
chmod +x "$TMP/fakecuda/bin/nvcc"
OPENAI_API_KEY=sk-must-not-leak GITHUB_TOKEN=ghp-must-not-leak CUDA_HOME=$TMP/fakecuda \
	expect_exit 4 "$PKB" build "$S/ok_oneshot_pull.cu"
if grep -q "must-not-leak" "$TMP/out" "$TMP/err"; then not_ok "a key reached nvcc"; else ok; fi
expect_grep "^TMPDIR=" "$TMP/out"
expect_grep "more lines of the compiler's output cut" "$TMP/out"
if grep -q "error line 299" "$TMP/out"; then not_ok "the whole log was kept"; else ok; fi
done_testing
