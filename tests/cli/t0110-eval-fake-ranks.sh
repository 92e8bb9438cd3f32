# the whole eval path on the CPU: fake rank programs stand in for GPUs, and
# each failure mode must come out as its category, exit code and JSON
. "$(dirname "$0")/lib.sh"
export PKB_RANK_CMD=$ROOT/build/tests/fake_rank
P=$ROOT/problems/001_allreduce/solutions/ok_oneshot_pull.cu
PKB_FAKE_MODE=ok expect_exit 0 "$PKB" eval 1 "$P" --gpus 4 --trials 3 -q --json "$TMP/ok.json"
expect_grep '^pass: 3 of 3 trials, every output of 4 ranks' "$TMP/out"
expect_grep '"trials_passed": 3' "$TMP/ok.json"
expect_grep '"pkb_version": "0.1"' "$TMP/ok.json"
expect_grep '"gpu": "Fake GPU A",' "$TMP/ok.json"   # what it ran on, once for 4 ranks
PKB_FAKE_MODE=mixedgpu expect_exit 0 "$PKB" eval 1 "$P" --gpus 4 --trials 2 -q --json "$TMP/mixed.json"
expect_grep '"gpu": "Fake GPU A, Fake GPU B",' "$TMP/mixed.json"
PKB_FAKE_MODE=ok expect_exit 0 "$PKB" run 1 --gpus 2 -q --json "$TMP/run.json"
expect_grep '"gpu": "Fake GPU A",' "$TMP/run.json"
expect_grep '"date": "20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z"' "$TMP/ok.json"
expect_exit 0 python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert all(x[\"phase_seconds\"][\"cuda_init\"] >= 0 and x[\"phase_seconds\"][\"trial\"] > 0 for x in r[\"launch\"][\"ranks\"])" "$TMP/ok.json"
# each rank's teardown after its "done", timed by the parent (issue 40)
PKB_FAKE_MODE=slowexit PKB_FAKE_RANK_ONLY=1 expect_exit 0 "$PKB" eval 1 "$P" --gpus 2 -q --json "$TMP/slowexit.json"
expect_exit 0 python3 -c "import json,sys; r=json.load(open(sys.argv[1]))[\"launch\"][\"ranks\"]; assert r[1][\"exit_s\"] >= 0.35 and r[0][\"exit_s\"] < 0.35, r" "$TMP/slowexit.json"
expect_exit 0 python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert all(0 <= x[\"exit_s\"] < 5 for x in r[\"launch\"][\"ranks\"]), r[\"launch\"]" "$TMP/ok.json"
PKB_FAKE_MODE=mismatch expect_exit 3 "$PKB" eval 1 "$P" --gpus 2 -q --json "$TMP/mm.json"
expect_grep "^mismatch: trial 0, rank 0: output 'out': 7 of 100 elements wrong; worst at \[0,3\]" "$TMP/out"
expect_grep '"outcome": "mismatch"' "$TMP/mm.json"
PKB_FAKE_MODE=hang PKB_FAKE_RANK_ONLY=1 expect_exit 7 "$PKB" eval 1 "$P" --gpus 2 -q --deadline trial=1
expect_grep "^timeout: rank 1: phase 'trial 0: candidate' passed its 1 s deadline" "$TMP/out"
expect_grep "rank logs kept in" "$TMP/err"
# the ranks' TMPDIR is the launch's own folder, gone after it however it
# ended: what a solution process leaves there (Triton's cache) never
# outlives its evaluation, a timeout included
PKB_FAKE_MODE=litter PKB_FAKE_RANK_ONLY=1 expect_exit 7 "$PKB" eval 1 "$P" --gpus 2 -q --deadline trial=1 --log-dir "$TMP/litter"
litter=$(sed -n 's/^litter: //p' "$TMP/litter/rank_1.log")
case $litter in */pkb-tmp.*/litter.1) ok ;; *) not_ok "litter at '$litter'" ;; esac
[ -n "$litter" ] && [ ! -e "$litter" ] && [ ! -e "$(dirname "$litter")" ] && ok || not_ok "'$litter' outlived its launch"
PKB_FAKE_MODE=crash PKB_FAKE_RANK_ONLY=1 expect_exit 6 "$PKB" eval 1 "$P" --gpus 2 -q
expect_grep "^runtime_error: rank 1 killed by signal 11" "$TMP/out"
# both ranks crash: whichever the parent sees first is named, never both lost
PKB_FAKE_MODE=crash expect_exit 6 "$PKB" eval 1 "$P" --gpus 2 -q
expect_grep "^runtime_error: rank [01] killed by signal 11" "$TMP/out"
PKB_FAKE_MODE=fail expect_exit 6 "$PKB" eval 1 "$P" --gpus 2 -q
expect_grep "illegal memory access" "$TMP/out"
PKB_FAKE_MODE=ok expect_exit 0 "$PKB" run 1 --gpus 2 -q
# run's -b reaches the symbol scan (job.c reads -b for eval, sweep and agent too)
PKB_FAKE_MODE=ok expect_exit 0 "$PKB" run 1 --gpus 2 -q -b nccl-device \
	-s "$ROOT/problems/001_allreduce/solutions/ok_nccl_device.cu"
PKB_FAKE_MODE=ok expect_exit 5 "$PKB" run 1 --gpus 2 -q \
	-s "$ROOT/problems/001_allreduce/solutions/ok_nccl_device.cu"
expect_exit 2 "$PKB" run 1 --gpus 2 -q -b nosuch
# W = 8, the original's setting: eight rank processes, every output checked,
# and a hang or a crash of the last rank still named
PKB_FAKE_MODE=ok expect_exit 0 "$PKB" eval 1 "$P" --gpus 8 --trials 2 -q --json "$TMP/w8.json"
expect_grep '^pass: 2 of 2 trials, every output of 8 ranks' "$TMP/out"
expect_exit 0 python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert r[\"world\"] == 8 and len(r[\"launch\"][\"ranks\"]) == 8" "$TMP/w8.json"
PKB_FAKE_MODE=hang PKB_FAKE_RANK_ONLY=7 expect_exit 7 "$PKB" eval 1 "$P" --gpus 8 -q --deadline trial=1
expect_grep "^timeout: rank 7: phase 'trial 0: candidate' passed its 1 s deadline" "$TMP/out"
PKB_FAKE_MODE=crash PKB_FAKE_RANK_ONLY=7 expect_exit 6 "$PKB" eval 1 "$P" --gpus 8 -q
expect_grep "^runtime_error: rank 7 killed by signal 11" "$TMP/out"
# the ranks' environment is built, not inherited (issue 30): what CUDA, NCCL
# and pkb read reaches them; the parent's API keys and credentials do not
OPENAI_API_KEY=sk-test-must-not-leak AWS_SECRET_ACCESS_KEY=aws-must-not-leak GITHUB_TOKEN=ghp-must-not-leak \
	CUDA_VISIBLE_DEVICES=0,1 NCCL_DEBUG=WARN PKB_FAKE_MODE=env \
	expect_exit 0 "$PKB" eval 1 "$P" --gpus 2 -q --log-dir "$TMP/envlogs" --keep-logs
expect_grep "^env CUDA_VISIBLE_DEVICES=0,1$" "$TMP/envlogs/rank_1.log"
expect_grep "^env NCCL_DEBUG=WARN$" "$TMP/envlogs/rank_1.log"
expect_grep "^env NCCL_NVLS_ENABLE=0$" "$TMP/envlogs/rank_0.log"
expect_grep "^env PKB_FD=3$" "$TMP/envlogs/rank_1.log"
# its address is the job's (issue 39: PKB_RANK and PKB_WORLD were set, never read)
expect_grep "^job rank 1 of 2, local 1, host ranks 0 \+ 2$" "$TMP/envlogs/rank_1.log"
if grep -q "^env PKB_\(RANK\|WORLD\|LOCAL_RANK\|HOST_FIRST\|HOST_SIZE\)=" "$TMP"/envlogs/rank_*.log; then
	not_ok "a rank got its address in its environment"; else ok; fi
expect_grep "^env PATH=" "$TMP/envlogs/rank_0.log"
if grep -q "must-not-leak" "$TMP"/envlogs/rank_*.log; then not_ok "a credential reached a rank"; else ok; fi

# issue 36: a fresh input seed for every evaluation (a fixed one let a
# candidate serve outputs memoised in an earlier run), recorded in the JSON,
# the one the ranks got; --seed reproduces
PKB_FAKE_MODE=env expect_exit 0 "$PKB" eval 1 "$P" --gpus 2 -q --json "$TMP/s1.json" --log-dir "$TMP/s1" --keep-logs
PKB_FAKE_MODE=ok expect_exit 0 "$PKB" eval 1 "$P" --gpus 2 -q --json "$TMP/s2.json"
s1=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["seed"])' "$TMP/s1.json")
s2=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["seed"])' "$TMP/s2.json")
[ -n "$s1" ] && [ "$s1" != "$s2" ] && [ "$s1" != 42 ] && ok || not_ok "two evaluations drew seeds '$s1' and '$s2'"
expect_grep "^job seed $s1\$" "$TMP/s1/rank_0.log"
expect_grep "^job seed $s1\$" "$TMP/s1/rank_1.log"
expect_exit 0 "$PKB" eval 1 "$P" --gpus 2 -q --seed 7 --json "$TMP/s3.json"
expect_grep '"seed": 7,' "$TMP/s3.json"
expect_grep "^job ref_cache -$" "$TMP/s1/rank_0.log"

# the phases of an eval whose reference's outputs come from --ref-cache
# (rank.c): a load begins the reference's round after the candidate's fini;
# without it the parent flags the order
PKB_FAKE_MODE=refkept expect_exit 0 "$PKB" eval 1 "$P" --gpus 2 --trials 1 -q
PKB_FAKE_MODE=refkept_noload expect_exit 8 "$PKB" eval 1 "$P" --gpus 2 --trials 1 -q
expect_grep "announced phase 'trial.trial 0: reference \(kept from --ref-cache\)' after a later kind" "$TMP/out"

# issue 40: --seed-file keeps the seed off every command line; --ref-cache
# names the judge's store of the reference's outputs, made and resolved,
# never where a sandboxed solution process could read it
printf '12345\n' > "$TMP/seed"
PKB_FAKE_MODE=env expect_exit 0 "$PKB" eval 1 "$P" --gpus 2 -q --seed-file "$TMP/seed" \
	--ref-cache "$TMP/rc/../rc2" --json "$TMP/s4.json" --log-dir "$TMP/s4" --keep-logs
expect_grep '"seed": 12345,' "$TMP/s4.json"
expect_grep "^job seed 12345$" "$TMP/s4/rank_1.log"
expect_grep "^job ref_cache $(cd "$TMP" && pwd -P)/rc2$" "$TMP/s4/rank_0.log"
[ -d "$TMP/rc2" ] && ok || not_ok "--ref-cache did not make its folder"
printf 'seven\n' > "$TMP/badseed"
expect_exit 2 "$PKB" eval 1 "$P" --gpus 2 -q --seed-file "$TMP/badseed"
expect_grep "^error: --seed-file .*badseed: not a file holding one non-negative integer" "$TMP/err"
expect_exit 2 "$PKB" eval 1 "$P" --gpus 2 -q --seed-file "$TMP/nonexistent"
mkdir -p "$TMP/libs"
LD_LIBRARY_PATH="$TMP/libs" expect_exit 2 "$PKB" eval 1 "$P" --gpus 2 -q --ref-cache "$TMP/libs/rc"
expect_grep "^error: --ref-cache .*/libs/rc: a solution process could read it" "$TMP/err"
[ ! -e "$TMP/libs/rc" ] && ok || not_ok "a refused --ref-cache was made"
expect_exit 2 "$PKB" eval 1 "$P" --gpus 2 -q --ref-cache /usr/lib/pkb-ref
[ ! -e /usr/lib/pkb-ref ] && ok || not_ok "a refused --ref-cache was made under /usr"

# issue 36: a rank's messages are checked against the job, not filed as they
# come. A candidate re-announcing its phase to re-arm the deadline (here a
# frame every 0.3 s against a 1 s trial deadline) ends flagged once it passes
# the job's count of trial phases (2 a trial): it cannot outlive the sum of
# its phases' budgets, where it once ran forever
T0=$(date +%s)
PKB_FAKE_MODE=rearm PKB_FAKE_RANK_ONLY=1 expect_exit 8 "$PKB" eval 1 "$P" --gpus 2 --trials 1 -q --deadline trial=1
expect_grep "^flagged: rank 1 announced phase kind 'trial' 3 times; the job has 2: a message the harness.s rank does not send" "$TMP/out"
[ $(( $(date +%s) - T0 )) -le 5 ] && ok || not_ok "rearm took $(( $(date +%s) - T0 )) s"
# a second timing record of the reference (written from pkb_fini after the
# real ones: the parent once kept the last, a speedup of 69x on GPUs)
PKB_FAKE_MODE=forge PKB_FAKE_RANK_ONLY=0 expect_exit 8 "$PKB" eval 1 "$P" --gpus 2 -q --measure-perf --json "$TMP/forge.json"
expect_grep "^flagged: rank 0 sent a second perf record of reference: a record the harness.s rank does not send" "$TMP/out"
expect_grep '"outcome": "flagged"' "$TMP/forge.json"
# issue 40: each solution process's steps, one "proc" record per process
# and rank, in the eval's JSON; a second one is a record the rank never sends
expect_exit 0 "$PKB" eval 1 "$P" --gpus 2 -q --json "$TMP/proc.json"
expect_exit 0 python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["processes"]; assert sorted("%d %s %g" % (x["rank"], x["solution"], x["seconds"]["exit"]) for x in p) == ["0 candidate 0.3", "0 reference 0.3", "1 candidate 0.3", "1 reference 0.3"], p' "$TMP/proc.json"
# tools/phase-table sums them: the slowest process of each role per launch
expect_exit 0 "$ROOT/tools/phase-table" "$TMP/proc.json"
expect_grep '^\| candidate \| exit \| 1 \| 0\.300 \| 0\.300 \| 0\.3 \|$' "$TMP/out"
expect_grep '^\| reference \| own\.context \| 1 \| 0\.400 \| 0\.400 \| 0\.4 \|$' "$TMP/out"
expect_exit 0 "$ROOT/tools/phase-table" --project 5:2 "$TMP/proc.json"
w=$(python3 -c 'import json,sys; print("%.1f" % (json.load(open(sys.argv[1]))["launch"]["wall_s"] * 5 / 2 / 60))' "$TMP/proc.json")
expect_grep "^projected: 1 problems x 5 samples, 2 launches at once: $w min" "$TMP/out"
expect_grep "^not in these records \(not projected\): 002 003 " "$TMP/out"
expect_exit 2 "$ROOT/tools/phase-table" --project 5 "$TMP/proc.json"
expect_exit 1 "$ROOT/tools/phase-table" "$TMP/proc.json" -w 4
expect_grep '^phase-table: no passing evaluation in ' "$TMP/err"
PKB_FAKE_MODE=procdup PKB_FAKE_RANK_ONLY=1 expect_exit 8 "$PKB" eval 1 "$P" --gpus 2 -q
expect_grep "^flagged: rank 1 sent a second proc record of " "$TMP/out"
# a record in another rank's name
PKB_FAKE_MODE=alias PKB_FAKE_RANK_ONLY=1 expect_exit 8 "$PKB" eval 1 "$P" --gpus 2 -q
expect_grep "^flagged: rank 1 sent a record in rank 0.s name" "$TMP/out"
done_testing
