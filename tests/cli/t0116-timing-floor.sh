# eval reports the timed loop's floor (`empty_call_us` of `pkb calibrate`,
# docs/ROOFLINE.md) next to the roofline when this machine's calibration has
# one for the same GPU and at least as many GPUs, and says it in the roofline
# line when the candidate is within 3 floors of it; fake ranks (candidate
# 5 us, an "NVIDIA H200")
. "$(dirname "$0")/lib.sh"
export PKB_RANK_CMD=$ROOT/build/tests/fake_rank PKB_FAKE_MODE=ok
cache=$PKB_CACHE
export PKB_CACHE=$TMP/cache
mkdir -p "$PKB_CACHE/hw"
for so in "$cache"/*.so; do [ -e "$so" ] && ln -s "$so" "$PKB_CACHE/"; done
P=$ROOT/problems/001_allreduce/solutions/ok_oneshot_pull.cu
run() { expect_exit 0 "$PKB" eval 1 "$P" --gpus 4 --m 32 --trials 1 --iters 20 -q --json "$TMP/r.json"; }
local_json() {   # DEVICE GPUS FLOOR_US
	cat > "$PKB_CACHE/hw/local.json" <<JSON
{"name": "local", "title": "$1", "gpus": $2, "sm_count": 132, "l2_bytes": 62914560,
 "hbm_bytes": 150109880320, "hbm_bw": 4.2e12, "net_bw": 3.967e11,
 "flops": {"bf16": 8.87e14, "fp16": 9.89e14, "fp8": 1.979e15, "tf32": 4.94e14, "fp32": 6.7e13},
 "measured": {"device": "$1", "gpus": $2, "empty_call_us": $3}}
JSON
}
run
if grep -q timing_floor "$TMP/r.json" "$TMP/out"; then not_ok "a floor without a calibration"; else ok; fi
local_json "NVIDIA H200" 4 4.16
run
expect_grep '"timing_floor_us": 4\.16' "$TMP/r.json"
expect_grep "^roofline 0.22 us on h200_4 .*; the timed loop's floor here is 4\.16 us \(an empty call, pkb calibrate\)$" "$TMP/out"
# a candidate 3 floors above it: recorded, not said
local_json "NVIDIA H200" 4 1.5
run
expect_grep '"timing_floor_us": 1\.5' "$TMP/r.json"
if grep -q "floor here" "$TMP/out"; then not_ok "floor said at 5 us against 1.5"; else ok; fi
# another GPU, or fewer GPUs than the run: not this machine's floor
local_json "NVIDIA H100 80GB HBM3" 8 4.16
run
if grep -q timing_floor "$TMP/r.json"; then not_ok "another GPU's floor"; else ok; fi
local_json "NVIDIA H200" 2 4.16
run
if grep -q timing_floor "$TMP/r.json"; then not_ok "a 2-GPU floor for a 4-GPU run"; else ok; fi
done_testing
