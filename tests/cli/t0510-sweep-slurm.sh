# pkb sweep --slurm on a real Slurm (tools/slurm-local: one node on
# loopback, 4 pretend GPUs as a GRES, 2 CPUs) with fake ranks: one job
# array, a shard per task, each into its own file; the environment reaches
# the tasks (fake ranks pass) and each runs on the GPUs Slurm gave it; a
# task cancelled mid-run and the resubmission (of that shard only) lose
# nothing and run nothing twice; COMPLETED, CANCELLED, FAILED and TIMEOUT
# as Slurm reports them reach --status; score reads the merged records.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sweep-lib.sh"
S=$TMP/slurm
trap '"$ROOT/tools/slurm-local" stop "$S" >/dev/null 2>&1; rm -rf "$TMP"' EXIT
command -v slurmctld >/dev/null 2>&1 && command -v munged >/dev/null 2>&1 ||
	sh "$ROOT/tools/deps.sh" slurm >&2
if ! "$ROOT/tools/slurm-local" start "$S" 4 > "$TMP/start" 2>&1; then
	not_ok "no Slurm: $(tail -3 "$TMP/start")"
	done_testing; exit
fi
eval "$("$ROOT/tools/slurm-local" env "$S")"
export PKB_RANK_CMD=$ROOT/build/tests/fake_rank PKB_FAKE_MODE=ok
# wait_job JOB [SECONDS]: until no task of JOB is pending or running
wait_job() {
	for ((i = 0; i < ${2:-60} * 5; i++)); do
		[ -z "$(squeue -h -j "$1" -t PENDING,RUNNING,COMPLETING,CONFIGURING 2>/dev/null)" ] && return 0
		sleep 0.2
	done
	return 1
}
job_of() { sed -nE 's/^submitted job ([0-9]+): .*/\1/p' "$1"; }
# every record of a run, every file: count, distinct keys, outcomes
count() { python3 - "$1" <<'PY'
import glob, json, os, sys
recs = []
for f in [os.path.join(sys.argv[1], "results.jsonl")] + sorted(glob.glob(os.path.join(sys.argv[1], "results.d/*.jsonl"))):
    if os.path.exists(f):
        recs += [json.loads(l) for l in open(f) if l.strip()]
keys = [r["key"] for r in recs]
print(len(recs), len(set(keys)), " ".join(sorted(set(r["outcome"] for r in recs))))
PY
}

# ---- a task past its --time: Slurm's TIMEOUT. A 1-minute limit fires 60 to
# 90 s in (slurmctld checks every 30 s), so it runs beside everything below
mkrun "$TMP/T" 1
PKB_FAKE_MODE=hang expect_exit 0 "$PKB" sweep "$TMP/T" --slurm --nodes 1 --gpus-per-node 2 --time 1 \
	-p 1 -g 2 -t 1 --deadline trial=600 --timeout 600
jt=$(job_of "$TMP/out")
[ -n "$jt" ] && ok || not_ok "no job id: $(cat "$TMP/out" "$TMP/err")"
expect_grep '^#SBATCH --time=1$' "$TMP/T/slurm/sweep-1.sh"

# ---- 13 evaluations (12 samples, a reply without code) in 3 shards
mkrun "$TMP/C" 12
PKB_FAKE_MODE=slow expect_exit 0 "$PKB" sweep "$TMP/C" --slurm --nodes 3 --gpus-per-node 2 -p 1 -g 2 -t 1
job=$(job_of "$TMP/out")
expect_grep "^submitted job $job: array 0,1,2 of 3 shards, 13 evaluations missing$" "$TMP/out"
sh=$TMP/C/slurm/sweep-1.sh
expect_grep '^#SBATCH --gres=gpu:2$' "$sh"
expect_grep '^#SBATCH --export=ALL$' "$sh"
expect_grep "^exec '.*/pkb' sweep '$TMP/C' --shard \"\\\$SLURM_ARRAY_TASK_ID/3\" --ngpus 2 '--problems' '1' '--gpus' '2' '--trials' '1'$" "$sh"
# cancel a task once it runs and has recorded an evaluation, mid-shard
cancelled=""
for ((i = 0; i < 300; i++)); do
	for t in $(squeue -h -j "$job" -t RUNNING -o %K 2>/dev/null); do
		f=$TMP/C/results.d/shard-$t-of-3.jsonl
		if [ -s "$f" ]; then
			scancel "${job}_$t"
			cancelled=$t
			break 2
		fi
	done
	sleep 0.1
done
[ -n "$cancelled" ] && ok || not_ok "no task of $job was seen running with a record"
wait_job "$job" && ok || not_ok "job $job did not end"
expect_exit 0 "$PKB" sweep "$TMP/C" --slurm --status
cp "$TMP/out" "$TMP/status1"
expect_grep "^  task $cancelled +CANCELLED " "$TMP/status1"
[ "$(grep -cE '^  task [0-2] +COMPLETED +exit 0:0 ' "$TMP/status1")" = 2 ] && ok ||
	not_ok "expected 2 completed tasks: $(cat "$TMP/status1")"
# the cancelled shard kept what it wrote, and misses the rest
got=$(sed -nE "s/^  task $cancelled .* shard $cancelled: ([0-9]+) of ([0-9]+) recorded.*/\\1 \\2/p" "$TMP/status1")
[ -n "$got" ] && [ "${got% *}" -ge 1 ] && [ "${got% *}" -lt "${got#* }" ] && ok ||
	not_ok "the cancelled shard: '$got' recorded"
missing=$(( ${got#* } - ${got% *} ))
expect_grep "^sweep $TMP/C: 13 evaluations, $((13 - missing)) recorded .*, $missing missing$" "$TMP/status1"
read -r n k _ <<< "$(count "$TMP/C")"
[ "$n" = $((13 - missing)) ] && [ "$k" = "$n" ] && ok || not_ok "after the cancel: $n records, $k keys"
# the environment reached the tasks (fake ranks: pass), on Slurm's GPUs
expect_grep "^sweep: [0-9]+/[0-9]+ 001 sample_[0-9]+ on GPUs (0,1|2,3): pass" <(cat "$TMP"/C/slurm/${job}_*.out)
# again: only the cancelled shard is submitted, and it completes
PKB_FAKE_MODE=slow expect_exit 0 "$PKB" sweep "$TMP/C" --slurm --nodes 3 --gpus-per-node 2 -p 1 -g 2 -t 1
job2=$(job_of "$TMP/out")
expect_grep "^submitted job $job2: array $cancelled of 3 shards, $missing evaluations missing$" "$TMP/out"
wait_job "$job2" && ok || not_ok "job $job2 did not end"
expect_grep "^sweep: shard $cancelled/3: .*, $missing to run$" "$TMP/C/slurm/${job2}_$cancelled.out"
read -r n k outs <<< "$(count "$TMP/C")"
[ "$n" = 13 ] && [ "$k" = 13 ] && ok || not_ok "after the resubmission: $n records, $k keys"
[ "$outs" = "no_code pass" ] && ok || not_ok "outcomes: $outs"
expect_exit 0 "$PKB" sweep "$TMP/C" --slurm --status
expect_grep "^sweep $TMP/C: 13 evaluations, 13 recorded \(no_code 1, pass 12\), 0 missing$" "$TMP/out"
expect_grep "^job $job2: array $cancelled of 3 shards" "$TMP/out"
expect_grep "^  task $cancelled +COMPLETED +exit 0:0 +shard $cancelled: ([0-9]+) of \\1 recorded$" "$TMP/out"
# nothing left: nothing submitted; the local sweep agrees
expect_exit 0 "$PKB" sweep "$TMP/C" --slurm --nodes 3 --gpus-per-node 2 -p 1 -g 2 -t 1
expect_grep 'every evaluation is recorded; nothing to submit' "$TMP/err"
[ ! -e "$TMP/C/slurm/sweep-3.sh" ] && ok || not_ok "a third submission"
expect_exit 0 "$PKB" sweep "$TMP/C" -p 1 -g 2 -t 1 --ngpus 2
expect_grep '13 already recorded, 0 to run' "$TMP/err"
# score reads the merged records; a key in two files counts once
expect_exit 0 "$PKB" score "$TMP/C" --json "$TMP/s.json"
head -1 "$(ls "$TMP"/C/results.d/*.jsonl | head -1)" >> "$TMP/C/results.jsonl"
expect_exit 0 "$PKB" score "$TMP/C" --json "$TMP/s2.json"
expect_exit 0 python3 - "$TMP/s.json" "$TMP/s2.json" <<'PY'
import json, sys
a, b = (json.load(open(f))["runs"][0] for f in sys.argv[1:])
assert a["candidates"] == 13 and a["left_out"] == 0, a
assert a["outcomes"]["pass"] == 12 and a["outcomes"]["no_code"] == 1, a["outcomes"]
assert b["candidates"] == 13 and b["left_out_reasons"] == {"key seen twice": 1}, b
PY

# ---- a task that fails: its results file cannot be opened (a directory)
mkrun "$TMP/F" 1
mkdir -p "$TMP/F/results.d/shard-0-of-1.jsonl"
expect_exit 0 "$PKB" sweep "$TMP/F" --slurm --gpus-per-node 2 -p 1 -g 2 -t 1
jf=$(job_of "$TMP/out")
wait_job "$jf" && ok || not_ok "job $jf did not end"
expect_exit 0 "$PKB" sweep "$TMP/F" --slurm --status
expect_grep "^  task 0 +FAILED +exit 1:0 +shard 0: 0 of 2 recorded" "$TMP/out"
expect_grep '2 missing and nothing running' "$TMP/err"

# ---- refusals
expect_exit 2 "$PKB" sweep "$TMP/C" --slurm -o "$TMP/x.jsonl"
expect_exit 2 "$PKB" sweep "$TMP/C" --status
expect_exit 2 "$PKB" sweep "$TMP/C" --slurm --partition 'a b'
expect_grep "only letters, digits and" "$TMP/err"
expect_exit 2 "$PKB" sweep "$TMP/C" --slurm --gpus-per-node 1 -g 2
expect_exit 2 "$PKB" sweep "$TMP/C" --shard 3/3
mkdir -p "$TMP/E"
expect_exit 1 "$PKB" sweep "$TMP/E" --slurm --status
expect_grep 'no Slurm submission of' "$TMP/err"
mkrun "$TMP/P" 1
expect_exit 1 "$PKB" sweep "$TMP/P" --slurm --partition nope -p 1
expect_grep 'sbatch failed .*[Pp]artition' "$TMP/err"
# an array of another shard count still running: no second array over it
PKB_FAKE_MODE=hang expect_exit 1 "$PKB" sweep "$TMP/T" --slurm --nodes 2 --gpus-per-node 2 -p 1 -g 2 -t 1
expect_grep "array job $jt \(1 shards\) is still (RUNNING|PENDING)" "$TMP/err"

# ---- the timed-out task
wait_job "$jt" 150 && ok || not_ok "job $jt did not time out in 150 s"
expect_exit 0 "$PKB" sweep "$TMP/T" --slurm --status
expect_grep "^  task 0 +TIMEOUT " "$TMP/out"
read -r n _ <<< "$(count "$TMP/T")"
[ "$n" = 1 ] && ok || not_ok "the timed-out shard: $n records, expected the no_code one"
done_testing
