# pkb build: compile into the cache and scan the symbols, no GPU; the exit
# code is that of the first refused file (4 compile_error, 5 load_refused)
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
done_testing
