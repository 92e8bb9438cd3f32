# one evaluation across two "nodes" on loopback (docs/MULTINODE.md): two
# launches of pkb with the launcher variables of a 2 x 2 world meet over TCP
# at MASTER_ADDR:MASTER_PORT and run fake ranks; a node killed mid-trial, a
# wrong world, a port nobody listens on and a node that never arrives each
# end with one line, a documented exit code and within the deadline
. "$(dirname "$0")/lib.sh"
export PKB_RANK_CMD=$ROOT/build/tests/fake_rank MASTER_ADDR=127.0.0.1
P=$ROOT/problems/001_allreduce/solutions/ok_oneshot_pull.cu
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
secs() { python3 -c "import time; print(time.time())"; }
# within LIMIT START: the seconds since START are below LIMIT
within() { python3 -c "import sys, time; sys.exit(0 if time.time() - $2 < $1 else 1)" && ok || not_ok "took over $1 s: $3"; }
# two nodes: node 0 in the background, node 1 here; $TMP/o0,e0 and o1,e1;
# ENV0 and ENV1 are the per-node launcher variables, the rest goes to both
two_nodes() {
	local env0=$1 env1=$2; shift 2
	env $env0 MASTER_PORT=$PORT "$PKB" eval 1 "$P" -q "$@" >"$TMP/o0" 2>"$TMP/e0" & local p0=$!
	env $env1 MASTER_PORT=$PORT "$PKB" eval 1 "$P" -q "$@" >"$TMP/o1" 2>"$TMP/e1"; RC1=$?
	wait $p0; RC0=$?
}
# compile once, so that both nodes find the cache warm
PKB_FAKE_MODE=ok expect_exit 0 "$PKB" eval 1 "$P" --gpus 2 -q

# a 2 x 2 world, torchrun's variables: the allgather of every rank's number
# crosses the link (fake mode coll), every rank's records reach both nodes,
# and both say the same verdict
PORT=$(free_port) T0=$(secs)
PKB_FAKE_MODE=coll two_nodes "RANK=0 WORLD_SIZE=2 LOCAL_RANK=0" "RANK=1 WORLD_SIZE=2 LOCAL_RANK=0" \
	--launcher torch --gpus 4 --trials 3 --json "$TMP/n.json"
[ "$RC0.$RC1" = 0.0 ] && ok || not_ok "2 x 2: exits $RC0 $RC1: $(cat "$TMP/e0" "$TMP/e1")"
expect_grep '^pass: 3 of 3 trials, every output of 4 ranks$' "$TMP/o0"
expect_grep '^pass: 3 of 3 trials, every output of 4 ranks$' "$TMP/o1"
within 10 "$T0" "a 2 x 2 eval on fake ranks"
expect_exit 0 python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['world'] == 4 and len(r['trial_records']) == 12 and all(x['done'] for x in r['launch']['ranks'])" "$TMP/n.json"
# Slurm's variables, with one pkb per rank (srun --ntasks-per-node=2): four
# agents of one rank each; the ranks of one host count from 0 there
PORT=$(free_port)
for t in 0 1 2; do
	PKB_FAKE_MODE=env SLURM_PROCID=$t SLURM_NTASKS=4 SLURM_LOCALID=$((t % 2)) MASTER_PORT=$PORT \
		"$PKB" eval 1 "$P" -q --launcher slurm --log-dir "$TMP/slurm$t" --keep-logs >"$TMP/s$t" 2>&1 &
done
PKB_FAKE_MODE=env SLURM_PROCID=3 SLURM_NTASKS=4 SLURM_LOCALID=1 MASTER_PORT=$PORT \
	expect_exit 0 "$PKB" eval 1 "$P" -q --launcher slurm --log-dir "$TMP/slurm3" --keep-logs
wait
expect_grep '^pass: 5 of 5 trials, every output of 4 ranks$' "$TMP/out"
expect_grep '^pass: 5 of 5 trials, every output of 4 ranks$' "$TMP/s0"
# one host here: local 0..3; host ranks: the ones symm.c maps
expect_grep '^job rank 3 of 4, local 3, host ranks 0 \+ 4$' "$TMP/slurm3/rank_3.log"

# node 1 killed (-9) mid-trial: node 0 ends at once with the timeout
# category and every rank's phase, though the trial deadline is 60 s; the
# killed node's ranks die with it
PORT=$(free_port) T0=$(secs)
PKB_FAKE_MODE=hang RANK=0 WORLD_SIZE=2 MASTER_PORT=$PORT "$PKB" eval 1 "$P" -q --launcher env --gpus 4 \
	>"$TMP/o0" 2>"$TMP/e0" & p0=$!
PKB_FAKE_MODE=hang RANK=1 WORLD_SIZE=2 MASTER_PORT=$PORT "$PKB" eval 1 "$P" -q --launcher env --gpus 4 \
	>"$TMP/o1" 2>"$TMP/e1" & p1=$!
for i in $(seq 50); do [ "$(pgrep -P $p1 | wc -l)" = 2 ] && break; sleep 0.1; done
sleep 1
kids=$(pgrep -P $p1 | tr '\n' ' ')
kill -9 $p1
{ wait $p0; } 2>/dev/null; rc=$?
[ "$rc" = 7 ] && ok || not_ok "node 1 killed: node 0 exited $rc, expected 7"
expect_grep "^timeout: rank 2: node 1 \(.*\) lost in phase 'trial 0: candidate': its link closed \(phases: rank 0: 'trial 0: candidate'; rank 1: 'trial 0: candidate'; rank 2: 'trial 0: candidate'; rank 3: 'trial 0: candidate'\)$" "$TMP/o0"
within 10 "$T0" "node 0 after node 1's kill"
{ wait $p1; } 2>/dev/null
sleep 0.5
left=0
for k in $kids; do case $(ps -o stat= -p "$k" 2>/dev/null) in ''|Z*) ;; *) left=1 ;; esac; done
[ -n "$kids" ] && [ "$left" = 0 ] && ok || not_ok "the killed node's ranks ($kids) outlived it"

# node 0 killed: node 1 ends with the timeout category and its ranks' phases
PORT=$(free_port) T0=$(secs)
PKB_FAKE_MODE=hang RANK=0 WORLD_SIZE=2 MASTER_PORT=$PORT "$PKB" eval 1 "$P" -q --launcher env --gpus 4 \
	>"$TMP/o0" 2>"$TMP/e0" & p0=$!
PKB_FAKE_MODE=hang RANK=1 WORLD_SIZE=2 MASTER_PORT=$PORT "$PKB" eval 1 "$P" -q --launcher env --gpus 4 \
	>"$TMP/o1" 2>"$TMP/e1" & p1=$!
for i in $(seq 50); do [ "$(pgrep -P $p1 | wc -l)" = 2 ] && break; sleep 0.1; done
sleep 1
kill -9 $p0
{ wait $p1; } 2>/dev/null; rc=$?
[ "$rc" = 7 ] && ok || not_ok "node 0 killed: node 1 exited $rc, expected 7"
expect_grep "^timeout: node 1 lost node 0 at 127.0.0.1:$PORT: its link closed \(phases: rank 2: 'trial 0: candidate'; rank 3: 'trial 0: candidate'\)$" "$TMP/o1"
within 10 "$T0" "node 1 after node 0's kill"
{ wait $p0; } 2>/dev/null

# a rank's failure on node 1 ends node 0's ranks too, and both say so
PORT=$(free_port)
PKB_FAKE_MODE=fail PKB_FAKE_RANK_ONLY=3 two_nodes "RANK=0 WORLD_SIZE=2" "RANK=1 WORLD_SIZE=2" \
	--launcher torch --gpus 4 --deadline trial=30
[ "$RC0.$RC1" = 6.6 ] && ok || not_ok "a failing rank: exits $RC0 $RC1, expected 6 6"
expect_grep '^runtime_error: fake: an illegal memory access$' "$TMP/o0"
expect_grep '^runtime_error: fake: an illegal memory access$' "$TMP/o1"
expect_grep 'rank 3 failed first' "$TMP/e1"
# a hang on node 1: node 0's deadline, every rank's phase, on both nodes
PORT=$(free_port) T0=$(secs)
PKB_FAKE_MODE=hang PKB_FAKE_RANK_ONLY=2 two_nodes "RANK=0 WORLD_SIZE=2" "RANK=1 WORLD_SIZE=2" \
	--launcher torch --gpus 4 --deadline trial=1
[ "$RC0.$RC1" = 7.7 ] && ok || not_ok "a hang: exits $RC0 $RC1, expected 7 7"
expect_grep "^timeout: rank 2: phase 'trial 0: candidate' passed its 1 s deadline \(phases: rank 0: 'tearing down'; rank 1: 'tearing down'; rank 2: 'trial 0: candidate'; rank 3: 'tearing down'\)$" "$TMP/o1"
within 8 "$T0" "a hang on node 1"

# a wrong world: the world sizes differ, --gpus differs, the job differs,
# two agents claim one node: env_error (9) on every node, one line, each
# node told why
PORT=$(free_port) T0=$(secs)
PKB_FAKE_MODE=ok two_nodes "RANK=0 WORLD_SIZE=2" "RANK=1 WORLD_SIZE=3" --launcher torch --gpus 6 --deadline rendezvous=20
[ "$RC0.$RC1" = 9.9 ] && ok || not_ok "world sizes differ: exits $RC0 $RC1, expected 9 9"
expect_grep '^env_error: node 1 counts 3 nodes and 6 ranks, node 0 counts 2 and 6 \(the launcher.s world size and --gpus must be the same on every node\)$' "$TMP/o0"
expect_grep '^env_error: node 0 stopped the launch: node 1 counts 3 nodes' "$TMP/o1"
within 5 "$T0" "a mismatched world, refused as it arrives"
[ "$(wc -l <"$TMP/o0")" = 1 ] && ok || not_ok "more than one line: $(cat "$TMP/o0")"
PORT=$(free_port)
env RANK=0 WORLD_SIZE=2 MASTER_PORT=$PORT "$PKB" eval 1 "$P" -q --launcher torch --gpus 4 >"$TMP/o0" 2>"$TMP/e0" & p0=$!
RANK=1 WORLD_SIZE=2 MASTER_PORT=$PORT expect_exit 9 "$PKB" eval 1 "$P" -q --launcher torch --gpus 2
wait $p0; rc=$?
[ "$rc" = 9 ] && ok || not_ok "--gpus differs: node 0 exited $rc"
expect_grep '^env_error: node 1 counts 2 nodes and 2 ranks, node 0 counts 2 and 4' "$TMP/o0"
PORT=$(free_port)
PKB_FAKE_MODE=ok two_nodes "RANK=0 WORLD_SIZE=2" "RANK=1 WORLD_SIZE=2" --launcher torch --gpus 4 --trials 2
[ "$RC0.$RC1" = 0.0 ] && ok || not_ok "the same job twice: exits $RC0 $RC1"
# each node draws a seed of its own (no --seed): node 0's is used by every
# rank and recorded on both nodes
PORT=$(free_port)
env RANK=0 WORLD_SIZE=2 MASTER_PORT=$PORT PKB_FAKE_MODE=ok "$PKB" eval 1 "$P" -q --launcher torch --gpus 4 --json "$TMP/sd0.json" >"$TMP/o0" 2>"$TMP/e0" & p0=$!
RANK=1 WORLD_SIZE=2 MASTER_PORT=$PORT PKB_FAKE_MODE=ok expect_exit 0 "$PKB" eval 1 "$P" -q --launcher torch --gpus 4 --json "$TMP/sd1.json"
wait $p0
expect_exit 0 python3 -c 'import json,sys; a, b = (json.load(open(f))["seed"] for f in sys.argv[1:]); assert a == b and a != 42, (a, b)' "$TMP/sd0.json" "$TMP/sd1.json"
PORT=$(free_port)
env RANK=0 WORLD_SIZE=2 MASTER_PORT=$PORT "$PKB" eval 1 "$P" -q --launcher torch --gpus 4 >"$TMP/o0" 2>"$TMP/e0" & p0=$!
RANK=1 WORLD_SIZE=2 MASTER_PORT=$PORT expect_exit 9 "$PKB" eval 1 "$P" -q --launcher torch --gpus 4 --seed 7
wait $p0
expect_grep "^env_error: node 1 holds another job than node 0 \('seed' differs\)" "$TMP/o0"
expect_grep "^env_error: node 0 stopped the launch: node 1 holds another job" "$TMP/out"
PORT=$(free_port)
env RANK=0 WORLD_SIZE=3 MASTER_PORT=$PORT "$PKB" eval 1 "$P" -q --launcher torch --gpus 3 >"$TMP/o0" 2>"$TMP/e0" & p0=$!
env RANK=1 WORLD_SIZE=3 MASTER_PORT=$PORT "$PKB" eval 1 "$P" -q --launcher torch --gpus 3 >"$TMP/o1" 2>"$TMP/e1" & p1=$!
sleep 0.5
RANK=1 WORLD_SIZE=3 MASTER_PORT=$PORT expect_exit 9 "$PKB" eval 1 "$P" -q --launcher torch --gpus 3
wait $p0; rc=$?
wait $p1
[ "$rc" = 9 ] && ok || not_ok "two node 1s: node 0 exited $rc"
expect_grep '^env_error: two agents say they are node 1' "$TMP/o0"

# a port nobody listens on: node 1 retries until the rendezvous deadline
PORT=$(free_port) T0=$(secs)
RANK=1 WORLD_SIZE=2 MASTER_PORT=$PORT expect_exit 9 "$PKB" eval 1 "$P" -q --launcher torch --gpus 4 \
	--deadline rendezvous=2
expect_grep "^env_error: no node 0 at 127.0.0.1:$PORT within 2 s \(Connection refused\)$" "$TMP/out"
within 6 "$T0" "no node 0"
# a second node that never arrives; a stranger's bytes on the port do not
# count as a node (dropped with a warning)
PORT=$(free_port) T0=$(secs)
RANK=0 WORLD_SIZE=2 MASTER_PORT=$PORT "$PKB" eval 1 "$P" -q --launcher torch --gpus 4 \
	--deadline rendezvous=3 >"$TMP/o0" 2>"$TMP/e0" & p0=$!
sleep 1
python3 -c "import socket,sys; s=socket.create_connection(('127.0.0.1', int(sys.argv[1]))); s.sendall(b'GET / HTTP/1.0\r\n\r\n' * 4); s.close()" $PORT
wait $p0; rc=$?
[ "$rc" = 9 ] && ok || not_ok "a missing node: node 0 exited $rc"
expect_grep "^env_error: 1 of 2 nodes arrived at port $PORT within 3 s \(missing: node 1\)$" "$TMP/o0"
expect_grep "^warning: node 0: dropped a connection from .* that sent no pkb hello" "$TMP/e0"
within 7 "$T0" "a missing node"

# the launcher's variables, read before anything is compiled (exit 1)
RANK=0 expect_exit 1 env -u WORLD_SIZE "$PKB" eval 1 "$P" -q --launcher torch
expect_grep "^error: WORLD_SIZE is not set" "$TMP/err"
RANK=2 WORLD_SIZE=2 MASTER_PORT=1 expect_exit 1 "$PKB" eval 1 "$P" -q --launcher torch
expect_grep "^error: RANK='2' is not an integer from 0 to 1" "$TMP/err"
expect_exit 1 env -u RANK -u WORLD_SIZE -u OMPI_COMM_WORLD_RANK -u SLURM_PROCID "$PKB" eval 1 "$P" -q --launcher env
expect_grep "^error: --launcher env: none of" "$TMP/err"
OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2 expect_exit 1 env -u MASTER_PORT "$PKB" eval 1 "$P" -q --launcher mpi
expect_grep "^error: MASTER_PORT is not set" "$TMP/err"
SLURM_PROCID=0 SLURM_NTASKS=2 MASTER_PORT=5 expect_exit 1 "$PKB" eval 1 "$P" -q --launcher slurm --gpus 3
expect_grep "^error: --gpus 3 does not split over 2 nodes" "$TMP/err"
expect_exit 2 "$PKB" eval 1 "$P" -q --launcher pbs
expect_grep "^error: --launcher takes slurm, mpi, torch or env, not 'pbs'" "$TMP/err"
# one task is one node: the local path, no port needed
SLURM_PROCID=0 SLURM_NTASKS=1 PKB_FAKE_MODE=ok expect_exit 0 env -u MASTER_PORT "$PKB" eval 1 "$P" -q --launcher slurm --gpus 2
expect_grep '^pass: 5 of 5 trials, every output of 2 ranks$' "$TMP/out"
done_testing
