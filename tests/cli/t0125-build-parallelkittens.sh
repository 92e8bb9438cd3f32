# --backend parallelkittens: ThunderKittens found through $THUNDERKITTENS_ROOT
# (never downloaded), its include/ and prototype/ on nvcc's path and its
# flags on the line (-std=c++20, -DKITTENS_<GPU> from the arch, -DNDEBUG,
# -lcuda), cuda's symbol rule; env_error (9) where it is missing. A stub
# root stands in for TK (it checks the flags); the bundled TK candidates
# compile against the real one where THUNDERKITTENS_ROOT names it.
. "$(dirname "$0")/lib.sh"
export PKB_CACHE=$TMP/cache
S=$ROOT/problems/001_allreduce/solutions
real_tk=${THUNDERKITTENS_ROOT:-}
unset THUNDERKITTENS_ROOT
# missing: a clear one-line error, exit 9, in build and in eval (before any launch)
expect_exit 9 "$PKB" build --backend parallelkittens "$S/ok_tk_pgl.cu"
expect_grep "^env_error: .*ok_tk_pgl.cu: THUNDERKITTENS_ROOT is not set" "$TMP/out"
[ "$(wc -l < "$TMP/out")" = 1 ] && ok || not_ok "more than one line: $(cat "$TMP/out")"
expect_exit 9 "$PKB" eval 001 "$S/ok_tk_pgl.cu" --backend parallelkittens --gpus 2 -q --json "$TMP/e.json"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["outcome"]=="env_error" and "THUNDERKITTENS_ROOT" in r["message"], r' \
	"$TMP/e.json" && ok || not_ok "eval's record: $(head -c 300 "$TMP/e.json")"
mkdir -p "$TMP/empty"
THUNDERKITTENS_ROOT=$TMP/empty expect_exit 9 "$PKB" build --backend parallelkittens "$S/ok_tk_pgl.cu"
expect_grep "THUNDERKITTENS_ROOT='.*/empty' has no readable include/kittens.cuh" "$TMP/out"
# the doctor says whether the backend can run here
"$PKB" doctor --json "$TMP/d.json" > "$TMP/out" 2>&1
expect_grep "^backend   parallelkittens: not here: THUNDERKITTENS_ROOT is not set" "$TMP/out"
THUNDERKITTENS_ROOT=$TMP/empty "$PKB" doctor > "$TMP/out" 2>&1
expect_grep "^backend   parallelkittens: not here: .*has no readable include/kittens.cuh" "$TMP/out"

# a stub ThunderKittens that compiles only under TK's flags
mkdir -p "$TMP/tk/include" "$TMP/tk/prototype"
cat > "$TMP/tk/include/kittens.cuh" <<'CU'
#pragma once
#if __cplusplus < 202002L
#error "not C++20"
#endif
#if !defined(KITTENS_HOPPER) && !defined(KITTENS_BLACKWELL)
#error "no KITTENS_<GPU>"
#endif
#ifndef NDEBUG
#error "no -DNDEBUG"
#endif
#include "stub_part.cuh"
#include "proto_part.cuh"
CU
echo 'static const int tk_stub_part = 1;' > "$TMP/tk/include/stub_part.cuh"
echo 'static const int tk_proto_part = 1;' > "$TMP/tk/prototype/proto_part.cuh"
mkdir -p "$TMP/cand"
cat > "$TMP/cand/tk.cu" <<'CU'
#include <cuda.h>
#include "kittens.cuh"
#include "pkb.h"
PKB_SOLUTION;
#ifdef WANT_BLACKWELL
#ifndef KITTENS_BLACKWELL
#error "sm_100a is Blackwell"
#endif
#endif
extern "C" int pkb_init(pkb_ctx *ctx) { int v; return cuDriverGetVersion(&v) != CUDA_SUCCESS; }
extern "C" int pkb_run(pkb_ctx *ctx) { return tk_stub_part - tk_proto_part; }
extern "C" int pkb_fini(pkb_ctx *ctx) { return 0; }
CU
export THUNDERKITTENS_ROOT=$TMP/tk
expect_exit 0 "$PKB" build --backend parallelkittens "$TMP/cand/tk.cu"
expect_grep "^ok .*tk.cu \(compiled [0-9a-f]{12}\)" "$TMP/out"
key1=$(grep -oE 'compiled [0-9a-f]{12}' "$TMP/out")
# the driver API TK's host side uses is linked, and allowed
so=$(ls "$PKB_CACHE/${key1#compiled }"*.so | head -1)
readelf -d "$so" | grep -q 'NEEDED.*libcuda.so' && ok || not_ok "no libcuda in $(readelf -d "$so" | grep NEEDED)"
# not under cuda: TK's path is the parallelkittens backend's alone
expect_exit 4 "$PKB" build --backend cuda "$TMP/cand/tk.cu"
expect_grep "kittens.cuh" "$TMP/out"
# TK's headers (quoted includes, recursively) are in the key
echo '// changed' >> "$TMP/tk/prototype/proto_part.cuh"
expect_exit 0 "$PKB" build --backend parallelkittens "$TMP/cand/tk.cu"
key2=$(grep -oE 'compiled [0-9a-f]{12}' "$TMP/out")
[ -n "$key2" ] && [ "$key1" != "$key2" ] && ok || not_ok "a TK header's change left the key: $key1 / $key2"
# the arch picks TK's GPU
sed 's/^#include <cuda.h>/#define WANT_BLACKWELL\n#include <cuda.h>/' "$TMP/cand/tk.cu" > "$TMP/cand/tkb.cu"
expect_exit 0 "$PKB" build --backend parallelkittens --arch sm_100a "$TMP/cand/tkb.cu"
expect_exit 4 "$PKB" build --backend parallelkittens "$TMP/cand/tkb.cu"
expect_grep "sm_100a is Blackwell" "$TMP/out"
# cuda's symbol rule: NCCL refused
cat > "$TMP/cand/tk_nccl.cu" <<'CU'
#include <nccl.h>
#include "kittens.cuh"
#include "pkb.h"
PKB_SOLUTION;
extern "C" int pkb_init(pkb_ctx *ctx) { return ncclAllReduce(0, 0, 0, ncclFloat, ncclSum, (ncclComm_t)ctx->nccl_comm, 0); }
extern "C" int pkb_run(pkb_ctx *ctx) { return 0; }
extern "C" int pkb_fini(pkb_ctx *ctx) { return 0; }
CU
expect_exit 5 "$PKB" build --backend parallelkittens "$TMP/cand/tk_nccl.cu"
expect_grep "^load_refused: .*'ncclAllReduce', which the parallelkittens backend forbids" "$TMP/out"

# the bundled candidates, against the real ThunderKittens
if [ -n "$real_tk" ] && [ -r "$real_tk/include/kittens.cuh" ]; then
	export THUNDERKITTENS_ROOT=$real_tk
	for f in "$S/ok_tk_pgl.cu" "$S/bad_tk_local_only.cu" \
		 "$ROOT"/problems/012_allgather_gemm/solutions/ok_tk_gemm.cu \
		 "$ROOT"/problems/012_allgather_gemm/solutions/bad_tk_local_only.cu; do
		expect_exit 0 "$PKB" build --backend parallelkittens "$f"
	done
else
	echo "t0125: SKIP the bundled ThunderKittens candidates: THUNDERKITTENS_ROOT is unset" >&2
fi
done_testing
