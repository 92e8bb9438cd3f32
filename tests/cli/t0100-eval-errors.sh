# eval's verdicts that need no GPU: bad input (1), compile_error (4) with the
# compiler's message, load_refused (5) naming the symbol, and no GPU (9),
# for eval, doctor and hold
. "$(dirname "$0")/lib.sh"
P=$ROOT/problems/001_allreduce/solutions
expect_exit 1 "$PKB" eval 999 "$P/ok_oneshot_pull.cu"
expect_exit 1 "$PKB" eval 1 /nonexistent.cu
expect_exit 4 "$PKB" eval 1 "$P/bad_no_compile.cu" -q --json "$TMP/c.json"
expect_grep '^compile_error: .*launch_the_allreduce' "$TMP/out"
expect_grep '"outcome": "compile_error"' "$TMP/c.json"
expect_grep '"exit_code": 4' "$TMP/c.json"
expect_exit 5 "$PKB" eval 1 "$P/bad_calls_nccl.cu" -q --json "$TMP/r.json"
expect_grep "load_refused: the candidate uses 'ncclAllReduce'" "$TMP/out"
# a second eval of an unchanged file compiles nothing
expect_exit 5 "$PKB" eval 1 "$P/bad_calls_nccl.cu"
expect_grep "compile cache hit" "$TMP/err"
if [ "$(ls /proc/driver/nvidia/gpus 2>/dev/null | wc -l)" = 0 ]; then
	expect_exit 9 "$PKB" eval 1 "$P/ok_oneshot_pull.cu" --gpus 2 -q --json "$TMP/g.json"
	expect_grep "needs 2 NVIDIA GPUs" "$TMP/out"
	expect_grep '"outcome": "env_error"' "$TMP/g.json"
	expect_exit 9 "$PKB" doctor
	expect_grep "not ready" "$TMP/out"
	expect_grep "^heat      not read \(no GPU\): a candidate that heats the GPU" "$TMP/out"
	expect_exit 9 "$PKB" hold --for 5
	expect_grep "^error: no CUDA device to hold" "$TMP/err"
fi
done_testing
