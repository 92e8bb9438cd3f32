# pkb sweep on fake ranks: passing, failing, hanging and crashing candidates
# come out as their outcomes; kill -9 at several moments and a torn last
# line lose nothing and run nothing twice
. "$(dirname "$0")/lib.sh"
export PKB_RANK_CMD=$ROOT/build/tests/fake_rank
SRC=$ROOT/problems/001_allreduce/solutions/ok_oneshot_pull.cu
# mkrun DIR N: a pkb generate layout with N samples of 001 and one reply without code
mkrun() {
	mkdir -p "$1/candidates/001" "$1/replies/001"
	for ((k = 0; k < $2; k++)); do
		cp "$SRC" "$1/candidates/001/sample_$k.cu"
		echo '{"outcome": "ok"}' > "$1/replies/001/sample_$k.json"
	done
	echo '{"outcome": "no_code"}' > "$1/replies/001/sample_$2.json"
}
count() { python3 -c "
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
keys = [r['key'] for r in recs]
assert len(keys) == len(set(keys)), 'a key twice'
print(len(recs), ' '.join(sorted(r['outcome'] for r in recs)))" "$1"; }

# (the announced shape alone: each line then names the GPUs of the one
# evaluation of its candidate; t0440 checks the hidden shape's)
mkrun "$TMP/ok" 3
PKB_FAKE_MODE=ok expect_exit 0 "$PKB" sweep "$TMP/ok" -p 1 -g 2 --ngpus 4 -t 2 --hidden-shape off
expect_grep '^4 no_code pass pass pass$' <(count "$TMP/ok/results.jsonl")
expect_grep '"sha256":"[0-9a-f]{64}"' "$TMP/ok/results.jsonl"
expect_grep '"world":2' "$TMP/ok/results.jsonl"
expect_grep 'sweep: 4/4' "$TMP/err"
# two lanes of 2 GPUs on 4: both sets used, never another
expect_grep 'on GPUs 0,1: pass' "$TMP/err"
expect_grep 'on GPUs 2,3: pass' "$TMP/err"
! grep -qE 'on GPUs [0-9,]*[4-9]' "$TMP/err" && ok || not_ok "a GPU beyond --ngpus"
# issue 40: one seed for the run, in DIR/.pkb-seed (only its owner reads
# it), the one every evaluation got; the reference's outputs kept beside it
[ "$(stat -c %a "$TMP/ok/.pkb-seed" 2>/dev/null)" = 600 ] && ok || not_ok "no private .pkb-seed"
[ -d "$TMP/ok/.pkb-refcache" ] && ok || not_ok "no .pkb-refcache"
ls "$TMP/ok"/.pkb-seed.tmp.* >/dev/null 2>&1 && not_ok "a temporary seed file left" || ok
run_seed=$(cat "$TMP/ok/.pkb-seed")
seeds=$(python3 -c 'import json,sys; print(" ".join(sorted({str(json.loads(l)["result"]["seed"]) for l in open(sys.argv[1]) if json.loads(l).get("result")})))' "$TMP/ok/results.jsonl")
[ "$seeds" = "$run_seed" ] && ok || not_ok "evaluations had seeds '$seeds', the run's is '$run_seed'"
# again: everything recorded, nothing run
PKB_FAKE_MODE=ok expect_exit 0 "$PKB" sweep "$TMP/ok" -p 1 -g 2 --ngpus 4 -t 2 --hidden-shape off
expect_grep '4 already recorded, 0 to run' "$TMP/err"
expect_grep '^4 ' <(count "$TMP/ok/results.jsonl")
# another problem selected: nothing of 001 runs
PKB_FAKE_MODE=ok expect_exit 0 "$PKB" sweep "$TMP/ok" -p 2-5 -g 2 --ngpus 4 -o "$TMP/none.jsonl"
expect_grep '0 candidates' "$TMP/err"
expect_exit 2 "$PKB" sweep "$TMP/ok" -p 3-1

# failures: each as eval names it; a hang past --timeout as timeout
for m in mismatch crash; do
	mkrun "$TMP/$m" 1
	PKB_FAKE_MODE=$m expect_exit 0 "$PKB" sweep "$TMP/$m" -p 1 -g 2 --ngpus 2 -t 1
done
expect_grep '^2 mismatch no_code$' <(count "$TMP/mismatch/results.jsonl")
expect_grep '^2 no_code runtime_error$' <(count "$TMP/crash/results.jsonl")
# a hang: eval's own deadline ends it (exit 7) ...
mkrun "$TMP/hang" 1
PKB_FAKE_MODE=hang expect_exit 0 "$PKB" sweep "$TMP/hang" -p 1 -g 2 --ngpus 2 -t 1 --deadline trial=1
expect_grep '^2 no_code timeout$' <(count "$TMP/hang/results.jsonl")
expect_grep '"exit_code":7' "$TMP/hang/results.jsonl"
# ... or, above it, the sweep's (-2), which also kills the orphaned ranks
mkrun "$TMP/hang2" 1
PKB_FAKE_MODE=hang expect_exit 0 "$PKB" sweep "$TMP/hang2" -p 1 -g 2 --ngpus 2 -t 1 --timeout 3
expect_grep '^2 no_code timeout$' <(count "$TMP/hang2/results.jsonl")
expect_grep '"exit_code":-2' "$TMP/hang2/results.jsonl"
expect_grep '"rank_logs":"logs/001/sample_0.ranks"' "$TMP/hang2/results.jsonl"
sleep 0.5
[ -z "$(pgrep -fx "$PKB_RANK_CMD")" ] && ok || not_ok "ranks left running: $(pgrep -fx "$PKB_RANK_CMD")"

# kill -9 at several moments, then resume until done: 13 records, 13 keys
mkrun "$TMP/k" 12
# kill when the file first holds 0 (just started), 2, 5 and 8 records
lines() { [ -e "$TMP/k/results.jsonl" ] && wc -l < "$TMP/k/results.jsonl" || echo 0; }
for at in 0 2 5 8; do
	PKB_FAKE_MODE=ok "$PKB" sweep "$TMP/k" -p 1 -g 2 --ngpus 2 -t 1 2>/dev/null &
	pid=$!
	for ((i = 0; i < 600 && $(lines) < at; i++)); do sleep 0.05; done
	kill -9 $pid
	wait $pid 2>/dev/null
done
# a torn last line, as a kill inside write() would leave
n=$(wc -l < "$TMP/k/results.jsonl")
[ "$n" -gt 0 ] && [ "$n" -lt 13 ] && ok || not_ok "the kills left $n of 13 records: not a mid-run kill"
printf '{"key":"001|sample_9|torn' >> "$TMP/k/results.jsonl"
PKB_FAKE_MODE=ok expect_exit 0 "$PKB" sweep "$TMP/k" -p 1 -g 2 --ngpus 2 -t 1
expect_grep 'torn last record cut away' "$TMP/err"
expect_grep "$n already recorded, $((13 - n)) to run" "$TMP/err"
expect_grep '^13 no_code( pass){12}$' <(count "$TMP/k/results.jsonl")
[ "$(tail -c 1 "$TMP/k/results.jsonl" | od -An -c | tr -d ' ')" = '\n' ] && ok || not_ok "file does not end in a newline"
# a bad line in the middle is no torn write: refused, the file untouched
cp "$TMP/k/results.jsonl" "$TMP/k.bak"
sed -i '2s/^/garbage/' "$TMP/k/results.jsonl"
cp "$TMP/k/results.jsonl" "$TMP/k.bad"
PKB_FAKE_MODE=ok expect_exit 1 "$PKB" sweep "$TMP/k" -p 1 -g 2 --ngpus 2 -t 1
expect_grep 'line 2 is not a sweep record' "$TMP/err"
cmp -s "$TMP/k/results.jsonl" "$TMP/k.bad" && ok || not_ok "the file was changed"
# --- issue 38 ---
P1=$ROOT/problems/001_allreduce/solutions
rj() {   # rj DIR JSON-ARGS: a run.json as pkb generate writes it
	printf '{"pkb_version": "x", "args": %s}\n' "$2" > "$1/run.json"
}
field() {   # field FILE EXPR: a python expression over the records r
	python3 -c "
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
print($2)" "$1"
}
# the instance comes from run.json unless the command line names it, and a
# line says which: W 4 and backend nccl-device, so a correct nccl-device
# candidate passes (it was load_refused as cuda at W = 2)
mkrun "$TMP/rj" 1
cp "$P1/ok_nccl_device.cu" "$TMP/rj/candidates/001/sample_0.cu"
rj "$TMP/rj" '{"world": 4, "backend": "nccl-device", "dtype": "bf16", "m": 1024, "n": 512, "hw": "h200_8"}'
PKB_FAKE_MODE=ok expect_exit 0 "$PKB" sweep "$TMP/rj" --ngpus 4 -t 1
expect_grep '^sweep: W = 4 \(run.json\), dtype bf16 \(run.json\), shape 1024x512 \(run.json\), backend nccl-device \(run.json\)$' "$TMP/err"
! grep -q 'not the hardware' "$TMP/err" && ok || not_ok "a hardware warning on the prompt's GPU"
expect_grep '^2 no_code pass$' <(count "$TMP/rj/results.jsonl")
expect_grep '^4 nccl-device 512$' <(field "$TMP/rj/results.jsonl" \
	"r[1]['instance']['world'], r[1]['instance']['backend'], r[1]['result']['n']")
# the command line wins, and says so; another backend is another key
PKB_FAKE_MODE=ok expect_exit 0 "$PKB" sweep "$TMP/rj" --ngpus 4 -t 1 -g 2 -b cuda --m 256
expect_grep '^sweep: W = 2 \(--gpus\), dtype bf16 \(run.json\), shape 256x512 \(--m/--n and run.json\), backend cuda \(--backend\)$' "$TMP/err"
expect_grep '^4 load_refused no_code no_code pass$' <(count "$TMP/rj/results.jsonl")
expect_exit 2 "$PKB" sweep "$TMP/rj" -b nosuch
expect_exit 2 "$PKB" sweep "$TMP/rj" -d nosuch
# a run.json that is not a run's, or names a bad value: exit 1, one line
echo '{"args": {"world": "four"}}' > "$TMP/rj/run.json"
expect_exit 1 "$PKB" sweep "$TMP/rj" --ngpus 4
expect_grep 'run.json: args.world is not a valid world' "$TMP/err"
echo 'not json' > "$TMP/rj/run.json"
expect_exit 1 "$PKB" sweep "$TMP/rj" --ngpus 4
expect_grep "run.json: not a run's run.json" "$TMP/err"
# the scoring machine differs from the prompt's hardware: one warning line
rj "$TMP/rj" '{"world": 4, "backend": "nccl-device", "hw": "h200_8"}'
PKB_FAKE_DEVICE="NVIDIA H100 80GB HBM3" PKB_FAKE_MODE=ok expect_exit 0 "$PKB" sweep "$TMP/rj" --ngpus 4 -t 1
expect_grep "^warning: this machine's GPUs \(NVIDIA H100 80GB HBM3\) are not the hardware the run's prompts described \(run.json: hw h200_8" "$TMP/err"
[ "$(grep -c 'not the hardware' "$TMP/err")" = 1 ] && ok || not_ok "not one warning line"
# a GPU with no description of its own differs from every one
PKB_FAKE_DEVICE="NVIDIA A100-SXM4-80GB" PKB_FAKE_MODE=ok expect_exit 0 "$PKB" sweep "$TMP/rj" --ngpus 4 -t 1
expect_grep "^warning: this machine's GPUs \(NVIDIA A100-SXM4-80GB\) are not the hardware" "$TMP/err"

# the machine's failure is no verdict: env_error is not recorded, the sweep
# exits 9 and the next run evaluates it
mkrun "$TMP/env" 2
PKB_FAKE_MODE=nogpu expect_exit 9 "$PKB" sweep "$TMP/env" -p 1 -g 2 --ngpus 2 -t 1
expect_grep '2 of 3 evaluations met an env_error' "$TMP/err"
expect_grep '^1 no_code$' <(count "$TMP/env/results.jsonl")
PKB_FAKE_MODE=ok expect_exit 0 "$PKB" sweep "$TMP/env" -p 1 -g 2 --ngpus 2 -t 1
expect_grep '1 already recorded, 2 to run' "$TMP/err"
expect_grep '^3 no_code pass pass$' <(count "$TMP/env/results.jsonl")
# env_error records of an earlier sweep are no verdicts: dropped from the
# file (said once), run again, each key once
python3 - "$TMP/env/results.jsonl" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
for r in recs:
    if r["outcome"] == "pass":
        r["outcome"] = "env_error"
open(sys.argv[1], "w").write("".join(json.dumps(r) + "\n" for r in recs))
PY
PKB_FAKE_MODE=ok expect_exit 0 "$PKB" sweep "$TMP/env" -p 1 -g 2 --ngpus 2 -t 1
expect_grep 'results.jsonl: 2 env_error records dropped' "$TMP/err"
expect_grep '1 already recorded, 2 to run' "$TMP/err"
expect_grep '^3 no_code pass pass$' <(count "$TMP/env/results.jsonl")
# no GPU on this machine (no pretend ranks): refused at once, nothing recorded
mkrun "$TMP/nogpu" 2
env -u PKB_RANK_CMD -u CUDA_VISIBLE_DEVICES "$PKB" sweep "$TMP/nogpu" -p 1 >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ -d /proc/driver/nvidia/gpus ]; then ok; ok; ok; else
	[ $rc = 9 ] && ok || not_ok "no GPU: exit $rc, not 9"
	expect_grep '^error: no GPU on this machine: 2 evaluations need one' "$TMP/err"
	[ ! -e "$TMP/nogpu/results.jsonl" ] && ok || not_ok "records written without a GPU"
fi

# run.json's W = 4 on a machine of 2 GPUs: the machine's shortfall (9), not a
# bad command line (2, which --ngpus 2 still is); a dry run needs no GPU
rj "$TMP/nogpu" '{"world": 4}'
CUDA_VISIBLE_DEVICES=0,1 PKB_FAKE_MODE=ok expect_exit 9 "$PKB" sweep "$TMP/nogpu" -p 1
expect_grep '^error: this machine shows 2 GPUs: an evaluation of W = 4 \(run.json\) needs 4$' "$TMP/err"
CUDA_VISIBLE_DEVICES=0,1 PKB_FAKE_MODE=ok expect_exit 2 "$PKB" sweep "$TMP/nogpu" -p 1 --ngpus 2
rm "$TMP/nogpu/run.json"

# a W the problem does not take is a skip with its reason, not a verdict
mkdir -p "$TMP/w3/candidates/011" "$TMP/w3/candidates/001"
cp "$SRC" "$TMP/w3/candidates/011/sample_0.cu"
cp "$SRC" "$TMP/w3/candidates/001/sample_0.cu"
PKB_FAKE_MODE=ok expect_exit 0 "$PKB" sweep "$TMP/w3" -g 3 --ngpus 3 -t 1
expect_grep '2 candidates, 0 already recorded, 1 skipped, 1 to run' "$TMP/err"
expect_grep '^sweep: skip 011 at W = 3: world size 3 not supported \(valid: 2,4,8,16,32\)$' "$TMP/err"
expect_grep '^1 pass$' <(count "$TMP/w3/results.jsonl")

# the ranks' logs of a failed evaluation stay in the run directory, beside
# its record, which names them relative to it; a pass keeps none
mkrun "$TMP/logs" 1
PKB_FAKE_MODE=mismatch expect_exit 0 "$PKB" sweep "$TMP/logs" -p 1 -g 2 --ngpus 2 -t 1
expect_grep '^logs/001/sample_0.ranks logs/001/sample_0.ranks$' <(field "$TMP/logs/results.jsonl" \
	"r[1]['rank_logs'], r[1]['result']['log_dir']")
ls "$TMP/logs/logs/001/sample_0.ranks/" | grep -q . && ok || not_ok "no rank logs in the run"
grep -q 'rank logs kept in /tmp/pkb-logs' "$TMP/logs/logs/001/sample_0.log" && not_ok "rank logs in /tmp" || ok
[ ! -e "$TMP/ok/logs/001/sample_0.ranks" ] && ok || not_ok "a pass kept its rank logs"

# --dry-run: no GPU; compile_error and load_refused are final, the rest wait
mkrun "$TMP/dry" 3
cp "$P1/bad_no_compile.cu" "$TMP/dry/candidates/001/sample_1.cu"
cp "$P1/bad_calls_nccl.cu" "$TMP/dry/candidates/001/sample_2.cu"
env -u PKB_RANK_CMD -u CUDA_VISIBLE_DEVICES "$PKB" sweep "$TMP/dry" -p 1 -t 1 --dry-run >"$TMP/out" 2>"$TMP/err"
[ $? = 0 ] && ok || not_ok "dry run exit $?: $(head -c 300 "$TMP/err")"
expect_grep 'dry run: 3 recorded \(no_code, compile_error, load_refused\), 1 build' "$TMP/err"
expect_grep '^3 compile_error load_refused no_code$' <(count "$TMP/dry/results.jsonl")
expect_grep 'error' "$TMP/dry/logs/001/sample_1.log"
PKB_FAKE_MODE=ok expect_exit 0 "$PKB" sweep "$TMP/dry" -p 1 -t 1 -g 2 --ngpus 2
expect_grep '3 already recorded, 1 to run' "$TMP/err"
expect_grep '^4 compile_error load_refused no_code pass$' <(count "$TMP/dry/results.jsonl")
expect_exit 2 "$PKB" sweep "$TMP/dry" --dry-run --slurm
# triton candidates are .py files (issue 42): found as .cu are, built by
# python3's syntax check under --backend triton, a syntax error final
mkdir -p "$TMP/drypy/candidates/001" "$TMP/drypy/replies/001"
cp "$P1/ok_triton_oneshot.py" "$TMP/drypy/candidates/001/sample_0.py"
printf 'def solution(t:
' > "$TMP/drypy/candidates/001/sample_1.py"
for k in 0 1; do echo '{"outcome": "ok"}' > "$TMP/drypy/replies/001/sample_$k.json"; done
env -u PKB_RANK_CMD -u CUDA_VISIBLE_DEVICES "$PKB" sweep "$TMP/drypy" -p 1 -t 1 --dry-run \
	--backend triton >"$TMP/out" 2>"$TMP/err"
[ $? = 0 ] && ok || not_ok "dry run of .py exit $?: $(head -c 300 "$TMP/err")"
expect_grep 'dry run: 1 recorded \(no_code, compile_error, load_refused\), 1 build' "$TMP/err"
expect_grep 'SyntaxError' "$TMP/drypy/logs/001/sample_1.log"
expect_grep '"backend":"triton"' "$TMP/drypy/results.jsonl"

# every option at once, four --deadline (issue 39: eval's argv overflowed
# its 24 slots); valgrind sees the sweep's own heap (not ld.so's reads in
# dlopen, which it misreads)
mkrun "$TMP/all" 1
printf '{\n rtld\n Memcheck:Addr8\n ...\n fun:_dl_open\n}\n' > "$TMP/rtld.supp"
if command -v valgrind >/dev/null; then
	PKB_FAKE_MODE=ok expect_exit 0 valgrind -q --error-exitcode=99 --leak-check=no \
		--suppressions="$TMP/rtld.supp" \
		"$PKB" sweep "$TMP/all" -p 1 -g 2 --ngpus 2 -j 1 -t 2 -d fp32 --m 512 --n 256 -b cuda \
		--hidden-shape 256x512 --measure-perf --timeout 120 --deadline init=60 --deadline trial=60 \
		--deadline timing=60 --deadline fini=60 --atol 0.5 --rtol 0.5 -o "$TMP/all.jsonl" -q
else
	PKB_FAKE_MODE=ok expect_exit 0 "$PKB" sweep "$TMP/all" -p 1 -g 2 --ngpus 2 -j 1 -t 2 -d fp32 \
		--m 512 --n 256 -b cuda --hidden-shape 256x512 --measure-perf --timeout 120 --deadline init=60 \
		--deadline trial=60 --deadline timing=60 --deadline fini=60 --atol 0.5 --rtol 0.5 \
		-o "$TMP/all.jsonl" -q
fi
expect_grep '^pass fp32 512 256 2 cuda True$' <(field "$TMP/all.jsonl" \
	"r[1]['outcome'], r[1]['result']['dtype'], r[1]['result']['m'], r[1]['result']['n'], r[1]['result']['trials'], r[1]['result']['backend'], r[1]['result']['measure_perf']")
# the key of those options is the one earlier sweeps wrote (resume finds
# them), and then the hidden shape's (issue 44; --hidden-shape off: none)
expect_grep '^001\|sample_0\|W2\|t2\|perf\|tol0.5/0.5\|pkb0.1\|[0-9a-f]{64}\|fp32\|m512\|n256\|h256x512$' \
	<(field "$TMP/all.jsonl" "r[1]['key']")
# the hidden shape's evaluation: its shape, the sweep's dtype and trials,
# untimed
expect_grep '^pass 256 512 fp32 2 False$' <(field "$TMP/all.jsonl" \
	"r[1]['hidden']['outcome'], r[1]['hidden']['result']['m'], r[1]['hidden']['result']['n'], r[1]['hidden']['result']['dtype'], r[1]['hidden']['result']['trials'], r[1]['hidden']['result']['measure_perf']")

# issue 39: eval's options pass through the sweep as eval reads them (one
# table, job_opt; one writer, job_opts_argv): the timing mode and counts
# reach the ranks and, not being eval's default, the key; --hw the roofline
mkrun "$TMP/tm" 1
PKB_FAKE_MODE=ok expect_exit 0 "$PKB" sweep "$TMP/tm" -p 1 -g 2 --ngpus 2 -t 1 --timing graph \
	--iters 7 --warmup 3 --hw h200_8 --device-timeout 900 --deadline trial=30 --no-sandbox \
	--arch sm_90a -q
expect_grep '^pass graph 7 h200_8 True$' <(field "$TMP/tm/results.jsonl" \
	"r[1]['outcome'], r[1]['result']['timing']['mode'], r[1]['result']['timing']['iters'], r[1]['result']['roofline']['hw'], r[1]['result']['measure_perf']")
expect_grep '\|perf\|.*\|graph\|it7\|wu3\|h[0-9]+x[0-9]+$' <(field "$TMP/tm/results.jsonl" "r[1]['key']")
expect_grep "^\{'mode': 'graph', 'iters': 7, 'warmup': 3\}$" <(field "$TMP/tm/results.jsonl" \
	"r[1]['instance']['timed']")
# the same command again: every key recorded, nothing runs
PKB_FAKE_MODE=ok expect_exit 0 "$PKB" sweep "$TMP/tm" -p 1 -g 2 --ngpus 2 -t 1 --timing graph \
	--iters 7 --warmup 3 --hw h200_8
expect_grep '2 already recorded, 0 to run' "$TMP/err"
# --timing warm is eval's default: the keys of a plain timed sweep
PKB_FAKE_MODE=ok expect_exit 0 "$PKB" sweep "$TMP/tm" -p 1 -g 2 --ngpus 2 -t 1 --timing warm
expect_grep '0 already recorded, 2 to run' "$TMP/err"
expect_grep '^True$' <(field "$TMP/tm/results.jsonl" "r[3]['key'].endswith('|perf|tol-/-|pkb0.1|' + r[3]['instance']['sha256'] + '|h%(m)dx%(n)d' % r[3]['instance']['hidden']) and 'timed' not in r[3]['instance']")
# what eval refuses, the sweep refuses before running anything (exit 2):
# a W eval does not take (it allowed 64), a dtype it does not know
for bad in "-g 64" "-d int32" "--timing hot" "--deadline nophase=1" "-t 0" "--hw nosuch"; do
	PKB_FAKE_MODE=ok expect_exit 2 "$PKB" sweep "$TMP/tm" -p 1 --ngpus 2 $bad
done
expect_grep "^error: --gpus takes a world size from 1 to 63, not '64'$" <(PKB_FAKE_MODE=ok "$PKB" sweep "$TMP/tm" -g 64 2>&1)
expect_grep "^error: --dtype takes bf16, fp16 or fp32, not 'int32'$" <(PKB_FAKE_MODE=ok "$PKB" sweep "$TMP/tm" -d int32 2>&1)
# run.json's values are checked by the same table
rj "$TMP/tm" '{"world": 64}'
expect_exit 1 "$PKB" sweep "$TMP/tm" --ngpus 2
expect_grep 'run.json: args.world is not a valid world' "$TMP/err"
rj "$TMP/tm" '{"dtype": "int32"}'
expect_exit 1 "$PKB" sweep "$TMP/tm" --ngpus 2
expect_grep 'run.json: args.dtype is not a valid dtype' "$TMP/err"
sleep 1
done_testing
