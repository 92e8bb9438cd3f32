# The triton backend's Triton part without a GPU (tests/cli/t0127-triton-launcher.py):
# python/pkb_triton.py primes Triton before the sandbox so that no process
# starts after it (the ptxas version, the driver module, ldconfig, file), and
# its ctypes launcher packs a kernel's arguments as Triton 3.6's C launcher
# does, checked against each kernel's PTX through a stand-in libcuda. Needs a
# Python that imports Triton ($PKB_PYTHON, else python3), not torch; skipped,
# saying so, where there is none.
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PKB_PYTHON:-python3}
name=$(basename "$0")
if ! "$PY" -c 'import triton' > /dev/null 2>&1; then
	echo "$name: skipped: no triton ($PY cannot import it)"
	echo "$name: 0 passed, 0 failed"
	exit 0
fi
"$PY" -I "$ROOT/tests/cli/t0127-triton-launcher.py" "$ROOT"
