# --measure-perf on fake ranks (no GPU): the verdicts and records that come
# from perf records -- speedup, flagged escape, a failed re-check, modified
# inputs -- plus the timing mode in the JSON and the --trace file
. "$(dirname "$0")/lib.sh"
export PKB_RANK_CMD=$ROOT/build/tests/fake_rank
P=$ROOT/problems/001_allreduce/solutions/ok_oneshot_pull.cu
# 64 KiB per rank (--m 32): the fake times (10 and 5 us) are above the bound
PKB_FAKE_MODE=ok expect_exit 0 "$PKB" eval 1 "$P" --gpus 4 --m 32 --trials 1 --iters 20 -q \
	--timing cold --json "$TMP/ok.json" --trace "$TMP/trace.json"
expect_grep '^speedup 2.000x \(the smaller of reference / candidate by medians, 2.000x, and by means, 2.000x; n=[0-9]+, max over 4 ranks, cold, 64 input groups\)' "$TMP/out"
# 001 at 64 KiB, W = 4 on h200_4 (the smallest nominal machine of an "NVIDIA H200" with 4 GPUs):
# 98304 B / 450 GB/s = 0.218 us; S = 1 / (1 + (5 - t) / (10 - t))
expect_grep '^roofline 0.22 us on h200_4 \(interconnect-bound\): at 4% of it, speed-of-light score 0.672$' "$TMP/out"
expect_grep '"bound_us": 0.2184' "$TMP/ok.json"
# W = 8: 2 * 7/8 * 64 KiB / 450 GB/s = 0.255 us on h200_8
PKB_FAKE_MODE=ok expect_exit 0 "$PKB" eval 1 "$P" --gpus 8 --m 32 --trials 1 --iters 20 -q
expect_grep '^speedup 2.000x .*max over 8 ranks' "$TMP/out"
expect_grep '^roofline 0.25 us on h200_8' "$TMP/out"
# at 2 MiB per rank the bound is 6.99 us: a 5 us candidate is impossible
PKB_FAKE_MODE=ok expect_exit 8 "$PKB" eval 1 "$P" --gpus 4 --trials 1 --iters 20 -q
expect_grep "^flagged: the candidate's median 5.000 us is below the hardware's lower bound \(roofline 6.99 us on h200_4" "$TMP/out"
PKB_FAKE_MODE=ok expect_exit 0 "$PKB" eval 1 "$P" --gpus 4 --m 32 --trials 1 --iters 20 -q --hw b200_8
expect_grep '^roofline 0.11 us on b200_8' "$TMP/out"
expect_exit 2 "$PKB" eval 1 "$P" --gpus 4 --m 32 --trials 1 --iters 20 -q --hw nosuch
expect_grep "^error: --hw: no hardware 'nosuch' .*known: .*h200_4" "$TMP/err"
# a GPU without a description: no roofline, said so, the verdict stands
PKB_FAKE_DEVICE="Tesla T4" PKB_FAKE_MODE=ok expect_exit 0 "$PKB" eval 1 "$P" --gpus 2 --m 32 --trials 1 --iters 20 -q
expect_grep "^roofline: none \(no hardware description for 'Tesla T4'" "$TMP/out"
expect_grep '"mode": "cold"' "$TMP/ok.json"
expect_grep '"speedup": 2.0' "$TMP/ok.json"
# the trace: a process per rank, a thread per solution, a slice per call
python3 - "$TMP/trace.json" > "$TMP/tr.txt" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["traceEvents"]
x = [e for e in t if e["ph"] == "X"]
print("slices", len(x))
print("ranks", sorted({e["pid"] for e in x}))
print("threads", sorted({e["tid"] for e in x}))
c = [e for e in x if e["pid"] == 2 and e["name"] == "candidate"]
print("dur", c[0]["dur"], "ts1", round(c[1]["ts"], 3))
PY
expect_grep '^slices 160$' "$TMP/tr.txt"
expect_grep '^ranks \[0, 1, 2, 3\]$' "$TMP/tr.txt"
expect_grep '^threads \[0, 1\]$' "$TMP/tr.txt"
expect_grep '^dur 5.0 ts1 22.0$' "$TMP/tr.txt"
# the GPUs' heat (therm.h): the hottest rank's temperature and the slowest
# rank's SM clock; a GPU still hot from the candidate flags the evaluation
expect_exit 0 python3 -c "import json,sys; r=json.load(open(sys.argv[1])); h=r['reference_perf']['gpu_heat']; assert h == {'temp_c': [43, 45], 'sm_mhz': [1977, 1967], 'cool_s': 0.0, 'hot_c': 0, 'fini_rise_c': -1}, h; assert r['candidate_perf']['gpu_heat']['fini_rise_c'] == 5" "$TMP/ok.json"
# a candidate whose pkb_fini heats the GPU (more than 5 C) is flagged
PKB_FAKE_MODE=heatfini expect_exit 8 "$PKB" eval 1 "$P" --gpus 2 --m 32 --trials 1 --iters 20 -q
expect_grep "^flagged: the candidate's pkb_fini and exit raised rank 0's GPU by 9 C \(more than 5 C\)" "$TMP/out"
PKB_FAKE_MODE=hot expect_exit 8 "$PKB" eval 1 "$P" --gpus 2 --m 32 --trials 1 --iters 20 -q --json "$TMP/hot.json"
expect_grep "^flagged: rank 1's GPU was still 6 C above its temperature at the candidate's warmup after 20 s" "$TMP/out"
expect_exit 0 python3 -c "import json,sys; r=json.load(open(sys.argv[1])); h=r['reference_perf']['gpu_heat']; assert h['hot_c'] == 6 and h['cool_s'] == 20.0 and r['outcome'] == 'flagged', h" "$TMP/hot.json"
# a rank that could not read it: no heat in the record, no flag
PKB_FAKE_MODE=nothermal expect_exit 0 "$PKB" eval 1 "$P" --gpus 2 --m 32 --trials 1 --iters 20 -q --json "$TMP/noth.json"
expect_exit 0 python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert 'gpu_heat' not in r['reference_perf'] and 'gpu_heat' not in r['candidate_perf']" "$TMP/noth.json"
PKB_FAKE_MODE=escape expect_exit 8 "$PKB" eval 1 "$P" --gpus 2 --m 32 --trials 1 --iters 20 -q
expect_grep '^flagged: work escaped the timed stream: the host clock saw 50.000 ms' "$TMP/out"
PKB_FAKE_MODE=stale expect_exit 3 "$PKB" eval 1 "$P" --gpus 2 --m 32 --trials 1 --iters 20 -q
expect_grep "^mismatch: rank 0, a timed call: output 'out': 100 of 100 elements wrong" "$TMP/out"
PKB_FAKE_MODE=modify expect_exit 3 "$PKB" eval 1 "$P" --gpus 2 --m 32 --trials 1 --iters 20 -q
expect_grep "^mismatch: rank 0: a timed call modified its inputs" "$TMP/out"
# pkb run --measure-perf: one solution, the same checks
PKB_FAKE_MODE=ok expect_exit 0 "$PKB" run 1 --gpus 2 --m 32 --iters 20 --timing graph -q
expect_grep '^time: median 10.00 us.*max over 2 ranks, graph\)' "$TMP/out"
# and the same verdict as eval when a median is below the bound
PKB_FAKE_MODE=ok expect_exit 8 "$PKB" run 1 --solution "$P" --gpus 4 --iters 20 -q
expect_grep "^flagged: the candidate's median 5.000 us is below the hardware's lower bound \(roofline 6.99 us on h200_4" "$TMP/out"
# a trace that cannot be written: the verdict stands, the exit says input error
PKB_FAKE_MODE=ok expect_exit 1 "$PKB" eval 1 "$P" --gpus 2 --m 32 --trials 1 --iters 20 -q \
	--trace /nonexistent/dir/t.json
expect_exit 2 "$PKB" eval 1 "$P" --timing hot
expect_grep "warm, cold or graph" "$TMP/err"
# issue 44: work moved between timed calls (every tenth call doing much of
# the others' work) halves the candidate's median but not its mean: the
# speedup is the smaller ratio, 1x, not 2x
PKB_FAKE_MODE=superbatch expect_exit 0 "$PKB" eval 1 "$P" --gpus 2 -q --measure-perf --iters 100 --json "$TMP/sb.json"
expect_grep '^speedup 1.000x \(the smaller of reference / candidate by medians, 2.000x, and by means, 1.000x' "$TMP/out"
expect_exit 0 python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert abs(r["speedup"] - 1) < 1e-9 and abs(r["speedup_median"] - 2) < 1e-9, r["speedup"]' "$TMP/sb.json"
done_testing
