# pkb roofline (no GPU): the three bounds, the bottleneck, --all, --json,
# and the errors; pkb calibrate without a GPU
. "$(dirname "$0")/lib.sh"
export PKB_CACHE=$TMP/cache
# 012 at the original's default on 8x H100 (the default machine when this
# one is not calibrated): 917504 B / 450 GB/s = 2.039 us
expect_exit 0 "$PKB" roofline 12
expect_grep '^roofline  012_allgather_gemm at W=8 M=1024 N=1024 bf16 on h100_8' "$TMP/out"
expect_grep '^  interconnect  918 KB .* =      2.039 us$' "$TMP/out"
expect_grep '^  compute       1.07 GFLOP +\(tensor\) +/ 989 TFLOP/s +=      1.086 us$' "$TMP/out"
expect_grep '^  bound         2.039 us, interconnect-bound .*serial: 3.477 us$' "$TMP/out"
expect_exit 0 "$PKB" roofline 1 --hw h200_4 --m 32 --json "$TMP/r.json"
expect_grep '"bound_us": 0.2184' "$TMP/r.json"
expect_grep '"hw": "h200_4"' "$TMP/r.json"
# every problem has a bound on the lent machine kind
expect_exit 0 "$PKB" roofline --all --hw h200_4
n=$(grep -cE '^[0-9]{3}  [a-zA-Z0-9_]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+  (interconnect|HBM|compute)$' "$TMP/out")
nprob=$("$PKB" list | grep -c '^[0-9]')
[ "$n" = "$nprob" ] && ok || not_ok "roofline --all: $n of $nprob problems have a bound"
expect_exit 1 "$PKB" roofline 1 --hw h300_2
expect_grep "no hardware 'h300_2'.*known: .*h100_8" "$TMP/err"
expect_exit 1 "$PKB" roofline 1 --hw h200_4 --gpus 8
expect_grep "more GPUs than h200_4 has" "$TMP/err"
expect_exit 1 "$PKB" roofline 1 --hw local
expect_grep "run 'pkb calibrate'" "$TMP/err"
expect_exit 1 "$PKB" roofline 999
expect_exit 2 "$PKB" roofline
expect_exit 2 "$PKB" roofline 1 2
if [ ! -d /proc/driver/nvidia/gpus ] || [ -z "$(ls /proc/driver/nvidia/gpus 2>/dev/null)" ]; then
	expect_exit 9 "$PKB" calibrate
	expect_grep "needs an NVIDIA GPU" "$TMP/err"
fi
done_testing
