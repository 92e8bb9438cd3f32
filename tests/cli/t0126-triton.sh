# --backend triton: the candidate is a Python file in the original's solution
# format. pkb build checks its syntax with python3 (ast.parse: none of it
# runs), confined as nvcc is, and keeps it in the compile cache; env_error
# (9) without a Python; pkb doctor says whether torch and Triton import
# (a stand-in torch and triton, tests/unit/data/pystub, for the yes). The
# GPU side (docs/BACKENDS.md) is not run here.
. "$(dirname "$0")/lib.sh"
export PKB_CACHE=$TMP/cache
S=$ROOT/problems/001_allreduce/solutions
for f in "$S/ok_triton_oneshot.py" "$S/bad_triton_local_only.py" \
	 "$ROOT"/problems/012_allgather_gemm/solutions/*triton*.py; do
	expect_exit 0 "$PKB" build --backend triton "$f"
	expect_grep "^ok .*$(basename "$f") \(compiled [0-9a-f]{12}\)" "$TMP/out"
done
expect_exit 0 "$PKB" build --backend triton "$S/ok_triton_oneshot.py"
expect_grep "\(cached [0-9a-f]{12}\)" "$TMP/out"
key=$(grep -oE 'cached [0-9a-f]{12}' "$TMP/out")
ls "$PKB_CACHE/${key#cached }"*.py > /dev/null 2>&1 && ok || not_ok "no ${key#cached }*.py in the cache"
cmp -s "$(ls "$PKB_CACHE/${key#cached }"*.py)" "$S/ok_triton_oneshot.py" && ok || not_ok "the cached file differs"
# a syntax error is a compile_error with Python's own words
mkdir -p "$TMP/c"
printf 'import torch\ndef solution(tensor:\n    return tensor\n' > "$TMP/c/bad.py"
expect_exit 4 "$PKB" build --backend triton "$TMP/c/bad.py"
expect_grep "^compile_error: .*bad.py" "$TMP/out"
expect_grep "SyntaxError" "$TMP/out"
# the check runs none of the file
printf 'open("%s/pwned", "w").write("x")\ndef solution(t):\n    return t\n' "$TMP" > "$TMP/c/side.py"
expect_exit 0 "$PKB" build --backend triton "$TMP/c/side.py"
[ -e "$TMP/pwned" ] && not_ok "the syntax check ran the file" || ok
# a Python file is no object: the cuda backend's nvcc refuses it
expect_exit 4 "$PKB" build "$S/ok_triton_oneshot.py"
# no Python: env_error, in build and in eval (before any launch)
PKB_PYTHON=$TMP/no-python expect_exit 9 "$PKB" build --backend triton "$S/ok_triton_oneshot.py"
expect_grep "^env_error: .*no Python for the triton backend: '.*no-python' is not an executable" "$TMP/out"
PKB_PYTHON=$TMP/no-python expect_exit 9 "$PKB" eval 001 "$S/ok_triton_oneshot.py" --backend triton \
	--gpus 2 -q --json "$TMP/e.json"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["outcome"]=="env_error" and r["backend"]=="triton", r' \
	"$TMP/e.json" && ok || not_ok "eval's record: $(head -c 300 "$TMP/e.json")"
# the doctor: whether torch and Triton import, with which Python
PYTHONPATH=$ROOT/tests/unit/data/pystub "$PKB" doctor --json "$TMP/d.json" > "$TMP/out" 2>&1
expect_grep "^backend   triton: .*Python 3\.[0-9]+\.[0-9]+ \(.*libpython3.*\), torch 0\+stub, triton 0\+stub" "$TMP/out"
python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["backends"]["triton"]; assert t["ready"] and t["libpython"], t' \
	"$TMP/d.json" && ok || not_ok "doctor's JSON: $(head -c 300 "$TMP/d.json")"
PYTHONPATH=$TMP "$PKB" doctor > "$TMP/out" 2>&1
expect_grep "^backend   triton: not here: .*cannot import torch and triton" "$TMP/out"
PKB_PYTHON=$TMP/no-python "$PKB" doctor > "$TMP/out" 2>&1
expect_grep "^backend   triton: not here: no Python for the triton backend" "$TMP/out"
# the tools: skipped where torch and triton do not import, said so
( . "$ROOT/tools/lib.sh"
  PKB_PYTHON=$TMP/no-python; export PKB_PYTHON
  [ -n "$(backend_missing triton)" ] && ! backend_builds triton ) && ok || not_ok "backend_missing/builds triton"
( . "$ROOT/tools/lib.sh"
  PYTHONPATH=$ROOT/tests/unit/data/pystub; export PYTHONPATH
  [ -z "$(backend_missing triton)" ] && backend_builds triton ) && ok || not_ok "the stand-in torch is not found"
done_testing
