# tools/stage-bundled: pkb's own candidates as a run directory for a
# sweep of the whole benchmark (issue 40): which files are staged, the
# run.json the sweep reads, and a sweep of it on fake ranks
. "$(dirname "$0")/lib.sh"
S=$ROOT/tools/stage-bundled
expect_exit 0 "$S" "$TMP/r" -p 1,2,11 -w 2
expect_grep "^stage-bundled: [0-9]+ ok_ and [0-9]+ bad_ files of 3 problems in $TMP/r at W = 2 \(cuda\); [1-9][0-9]* left out" "$TMP/out"
# every ok_ and bad_ file that applies, with the files they include
for f in ok_oneshot_pull.cu bad_late_host_thread.cu bad_heat_in_fini.cu; do
	if [ -f "$TMP/r/001/$f" ]; then ok; else not_ok "001/$f not staged"; fi
done
if [ -f "$TMP/r/011/bad_early_chunk.cu" ] && [ -f "$TMP/r/011/ok_ce_pipeline.cu" ]; then ok; else not_ok "011's mutant or its base"; fi
# left out: another backend's file; a bad_ file whose pkb-worlds lacks W
if [ ! -e "$TMP/r/001/ok_nccl_device.cu" ]; then ok; else not_ok "an nccl-device file staged for cuda"; fi
n_src=$(ls "$ROOT"/problems/001_allreduce/solutions/*.cu | wc -l)
n_dst=$(ls "$TMP"/r/001/*.cu | wc -l)
if [ "$n_dst" -lt "$n_src" ] && [ "$n_dst" -gt 10 ]; then ok; else not_ok "001: $n_dst of $n_src staged"; fi
expect_exit 0 python3 -c "import json,sys; a=json.load(open(sys.argv[1]))['args']; assert (a['world'], a['backend'], a['dtype'], a['problems']) == (2, 'cuda', 'bf16', [1, 2, 11]), a" "$TMP/r/run.json"
# nccl-device: the other way round
expect_exit 0 "$S" "$TMP/n" -p 1 -w 2 -b nccl-device
if [ -f "$TMP/n/001/ok_nccl_device.cu" ] && [ ! -e "$TMP/n/001/ok_oneshot_pull.cu" ]; then ok; else not_ok "nccl-device staging"; fi
# a problem that does not take W is not staged; a folder with candidates is refused
expect_exit 0 "$S" "$TMP/w" -p 51 -w 2
expect_grep "of 0 problems" "$TMP/out"
expect_exit 2 "$S" "$TMP/r" -p 1
expect_grep "already holds candidates" "$TMP/err"
expect_exit 2 "$S" "$TMP/x" -w four
# the sweep takes it as it is: the instance from run.json, every file a sample
export PKB_RANK_CMD=$ROOT/build/tests/fake_rank
expect_exit 0 "$S" "$TMP/s" -p 9 -w 2
PKB_FAKE_MODE=ok expect_exit 0 "$PKB" sweep "$TMP/s" --ngpus 4 -t 1 --hidden-shape off
expect_grep "^sweep: W = 2 \(run.json\)" "$TMP/err"
n=$(ls "$TMP"/s/009/*.cu | wc -l)
expect_exit 0 python3 -c "import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; assert len(r) == int(sys.argv[2]), len(r)" "$TMP/s/results.jsonl" "$n"
done_testing
