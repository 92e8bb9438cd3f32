# tools/slurm-local: a real Slurm (slurmctld, slurmd, munge) for one node on
# loopback with 4 pretend GPUs as a GRES, the base of the `pkb sweep --slurm`
# tests: a job array gets disjoint GPU pairs, a failing task is FAILED in
# Slurm's own state, and stop ends the three daemons it started, no others.
. "$(dirname "$0")/lib.sh"
S=$TMP/slurm
trap '"$ROOT/tools/slurm-local" stop "$S" >/dev/null 2>&1; rm -rf "$TMP"' EXIT
expect_exit 0 "$ROOT/tools/slurm-local" start "$S" 4
eval "$("$ROOT/tools/slurm-local" env "$S")"
cat > "$TMP/task.sh" <<'EOS'
#!/bin/bash
echo "gpus=$CUDA_VISIBLE_DEVICES"
sleep 1
[ "$SLURM_ARRAY_TASK_ID" != 3 ]
EOS
expect_exit 0 sbatch --parsable --array=0-3 --gres=gpu:2 -o "$TMP/out_%a.txt" "$TMP/task.sh"
job=$(cat "$TMP/out")
for _ in $(seq 1 150); do
	[ -z "$(squeue -h -j "$job" -t PENDING,RUNNING,COMPLETING 2>/dev/null)" ] && break
	sleep 0.2
done
for a in 0 1 2; do
	expect_grep "^gpus=(0,1|2,3)$" "$TMP/out_$a.txt"
	scontrol show job "${job}_$a" > "$TMP/state" 2>&1
	expect_grep "JobState=COMPLETED" "$TMP/state"
done
scontrol show job "${job}_3" > "$TMP/state" 2>&1
expect_grep "JobState=FAILED .*|ExitCode=1:0" "$TMP/state"
# two tasks ran side by side on disjoint pairs (4 GPUs, 2 each)
[ "$(cat "$TMP"/out_*.txt | sort -u | wc -l)" = 2 ] && ok || not_ok "GPU sets: $(cat "$TMP"/out_*.txt)"
pids="$(cat "$S/slurmctld.pid" "$S/slurmd.pid" "$S/munge-run/munged.pid")"
expect_exit 0 "$ROOT/tools/slurm-local" stop "$S"
sleep 0.3
alive=0
for p in $pids; do kill -0 "$p" 2>/dev/null && alive=1; done
[ "$alive" = 0 ] && ok || not_ok "a daemon outlived stop"
done_testing
