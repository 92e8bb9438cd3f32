# the rank's sandbox (issue 30) on the CPU: fake ranks in "load" mode enter it
# as the real rank does (src/sandbox.c) and load real nvcc-built solutions;
# each escape of problem 001's bad_sandbox_* candidates ends in its category,
# naming what it tried, and a well-behaved candidate still passes
. "$(dirname "$0")/lib.sh"
export PKB_RANK_CMD=$ROOT/build/tests/fake_rank PKB_FAKE_MODE=load
S=$ROOT/problems/001_allreduce/solutions
rm -f /tmp/pkb-escape-system
expect_exit 0 "$PKB" eval 1 "$ROOT/tests/cli/sandbox/ok_host_only.cu" --gpus 2 --trials 2 -q \
	--log-dir "$TMP/oklogs" --keep-logs
expect_grep '^pass: 2 of 2 trials' "$TMP/out"
expect_grep '^rank 1: [0-9]+ mappings' "$TMP/oklogs/rank_1.log"
# NAME:CALL -- the candidate and the system call the filter names
for nc in fork_exec:clone syscall_execve:execve asm_execve:execve ptrace:ptrace kill_parent:kill; do
	name=${nc%%:*} call=${nc#*:}
	expect_exit 5 "$PKB" eval 1 "$S/bad_sandbox_$name.cu" --gpus 2 -q --json "$TMP/$name.json"
	expect_grep "^load_refused: forbidden system call $call \([0-9]+\): the rank's sandbox ended it" "$TMP/out"
	expect_grep '"outcome": "load_refused"' "$TMP/$name.json"
done
# system(), popen() and a constructor's system() start their process with
# every signal blocked: the kernel kills the rank with SIGSYS unhandled, the
# parent names what it can
for name in system popen constructor; do
	expect_exit 5 "$PKB" eval 1 "$S/bad_sandbox_$name.cu" --gpus 2 -q --json "$TMP/$name.json"
	expect_grep "^load_refused: rank [01] was killed by SIGSYS in phase '.*': a system call its sandbox forbids" "$TMP/out"
	expect_grep '"outcome": "load_refused"' "$TMP/$name.json"
done
# the constructor runs inside dlopen: the filter is already there
expect_grep "phase 'loading the candidate'" "$TMP/constructor.json"
[ ! -e /tmp/pkb-escape-system ] && ok || not_ok "system() escaped: /tmp/pkb-escape-system exists"
# files: Landlock leaves the home folder unreadable and unwritable
home=$(getent passwd "$(id -u)" | cut -d: -f6)
rm -f "$home/pkb-escape-write"
expect_exit 6 "$PKB" eval 1 "$S/bad_sandbox_write_file.cu" --gpus 2 -q
expect_grep "^runtime_error: pkb_init of the candidate of the candidate returned 1|^runtime_error: .*pkb_init of the candidate.* returned 1" "$TMP/out"
[ ! -e "$home/pkb-escape-write" ] && ok || not_ok "a candidate wrote $home/pkb-escape-write"
expect_exit 6 "$PKB" eval 1 "$S/bad_sandbox_read_home.cu" --gpus 2 -q
expect_grep "^runtime_error: .*pkb_init of the candidate.* returned 1" "$TMP/out"
# nor /tmp, where tools/test-gpu keeps the reference's outputs (--ref-cache)
expect_exit 6 "$PKB" eval 1 "$S/bad_sandbox_read_refcache.cu" --gpus 2 -q
expect_grep "^runtime_error: .*pkb_init of the candidate.* returned 1" "$TMP/out"
# exit() inside pkb_run is named, with its phase, not a lost result
expect_exit 6 "$PKB" eval 1 "$S/bad_sandbox_exit.cu" --gpus 2 -q
expect_grep "^runtime_error: exit\(0\) was called during 'trial 0: candidate'" "$TMP/out"
# INET sockets: trapped when no solution of the job has NCCL (run of a
# cuda-backend candidate), left to NCCL when the reference is in the job
expect_exit 5 "$PKB" run 1 --solution "$ROOT/tests/cli/sandbox/inet.cu" --gpus 2 -q
expect_grep "^load_refused: forbidden system call socket" "$TMP/out"
expect_exit 0 "$PKB" eval 1 "$ROOT/tests/cli/sandbox/inet.cu" --gpus 2 -q
# --no-sandbox: the same escapes are real (trusted code only)
expect_exit 0 "$PKB" eval 1 "$S/bad_sandbox_system.cu" --gpus 2 -q --no-sandbox
[ -e /tmp/pkb-escape-system ] && ok || not_ok "--no-sandbox: system() did not run"
rm -f /tmp/pkb-escape-system "$home/pkb-escape-write"
done_testing
