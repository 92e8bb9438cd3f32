# pkb sweep's lanes (src/lanes.c) and its progress: --jobs runs commands on
# disjoint GPU sets with never more launches on a GPU than their shares
# allow (a timed launch, share 1, always alone), in order; --lanes J shares
# sets between untimed evaluations only; progress is a bar on a terminal
# (under a pty) and one plain line per evaluation otherwise; every record's
# hardware names the driver, CUDA runtime and NCCL (null or a string)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sweep-lib.sh"
export PKB_RANK_CMD=$ROOT/build/tests/fake_rank PKB_FAKE_MODE=ok

# ---- --jobs: each job logs its start and end with its GPUs and share
cat > "$TMP/job.sh" <<'EOS'
#!/bin/sh
echo "start $(date +%s%N) $CUDA_VISIBLE_DEVICES $1 $2" >> "$LOG"
sleep 0.4
echo "end $(date +%s%N) $CUDA_VISIBLE_DEVICES $1 $2" >> "$LOG"
EOS
chmod +x "$TMP/job.sh"
export LOG=$TMP/events
: > "$LOG"
{
	# W share: untimed pairs, timed pairs, untimed quads, a timed single
	for ws in "2 2" "2 2" "2 1" "2 2" "2 2" "2 1" "4 2" "2 2" "4 2" "2 1" "1 1" "2 2"; do
		set -- $ws
		n=$((${n:-0} + 1))
		printf '{"world":%d,"share":%d,"argv":["%s","%d","%d"]}\n' "$1" "$2" "$TMP/job.sh" "$n" "$2"
	done
} > "$TMP/jobs"
expect_exit 0 "$PKB" sweep --jobs "$TMP/jobs" --ngpus 4
expect_grep '^sweep: 12/12 job 1[0-9]? \(.*job.sh\) on GPUs [0-9,]+: exit 0 in ' "$TMP/err"
expect_exit 0 python3 - "$LOG" <<'PY'
import sys
ev = []
for line in open(sys.argv[1]):
    kind, t, gpus, job, share = line.split()
    ev.append((int(t), kind == "start", [int(g) for g in gpus.split(",")], int(job), int(share)))
ev.sort(key=lambda e: (e[0], e[1]))  # an end before a start at the same instant
starts = [e for e in ev if e[1]]
assert sorted(e[3] for e in starts) == list(range(1, 13)), "not every job ran once"
on = {g: [] for g in range(4)}  # GPU -> shares of the launches on it
shared = 0
for t, start, gpus, job, share in ev:
    w = len(gpus)
    assert gpus == list(range(gpus[0], gpus[0] + w)) and gpus[0] % w == 0, f"job {job}: set {gpus} not aligned"
    for g in gpus:
        if start:
            on[g].append(share)
            assert len(on[g]) <= min(on[g]), f"job {job}: GPU {g} carries {len(on[g])} launches, shares {on[g]}"
            shared = max(shared, len(on[g]))
        else:
            on[g].remove(share)
assert shared == 2, "no set was ever shared"
PY
# a job that cannot fit, a line that is no job: refused before anything runs
: > "$LOG"
printf '{"world":1,"argv":["%s","1","1"]}\n{"world":8,"argv":["true"]}\n' "$TMP/job.sh" > "$TMP/bad"
expect_exit 1 "$PKB" sweep --jobs "$TMP/bad" --ngpus 4
expect_grep 'bad:2: not a job of at most 4 GPUs' "$TMP/err"
printf '{"world":1}\n' > "$TMP/bad"
expect_exit 1 "$PKB" sweep --jobs "$TMP/bad" --ngpus 4
[ ! -s "$LOG" ] && ok || not_ok "a job ran from a refused file"
expect_exit 2 "$PKB" sweep --jobs "$TMP/jobs" "$TMP"
expect_exit 2 "$PKB" sweep "$TMP" --lanes 0

# ---- a sweep: the plain progress, a line per evaluation
mkrun "$TMP/a" 5
expect_exit 0 "$PKB" sweep "$TMP/a" -p 1 -g 2 --ngpus 4 --lanes 4 -t 1
[ "$(grep -cE '^sweep: [1-6]/6 001 sample_[0-5]' "$TMP/err")" = 6 ] && ok ||
	not_ok "expected 6 progress lines: $(cat "$TMP/err")"
expect_grep '^sweep: 6/6 001 sample_[0-4] on GPUs (0,1|2,3): pass \([0-9]+s, ETA 0s\)$' "$TMP/err"
! grep -qE 'on GPUs [0-9,]*[4-9]' "$TMP/err" && ok || not_ok "a GPU beyond --ngpus"
# the hardware of every record that ran: GPU count, nvcc, driver, CUDA runtime, NCCL
expect_exit 0 python3 - "$TMP/a/results.jsonl" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
ran = [r for r in recs if r["outcome"] != "no_code"]
assert len(ran) == 5, len(ran)
for r in ran:
    hw = r["instance"]["hardware"]
    for k in ("driver", "cuda_runtime", "nccl"):
        assert k in hw, f"no {k} in {hw}"
        assert hw[k] is None or (isinstance(hw[k], str) and hw[k]), hw
    assert hw["gpus"] == 2, hw
PY
# another instance: dtype and shape reach eval, the record and the key
mkrun "$TMP/d" 1
expect_exit 0 "$PKB" sweep "$TMP/d" -p 1 -g 2 --ngpus 2 -t 1 -d fp32 --m 2048 --n 512
expect_exit 0 python3 - "$TMP/d/results.jsonl" <<'PY'
import json, sys
r = [json.loads(l) for l in open(sys.argv[1]) if '"pass"' in l][0]
assert (r["instance"]["dtype"], r["instance"]["m"], r["instance"]["n"]) == ("fp32", 2048, 512), r["instance"]
assert r["key"].endswith("|fp32|m2048|n512|h%(m)dx%(n)d" % r["instance"]["hidden"]), r["key"]
PY
expect_exit 2 "$PKB" sweep "$TMP/d" --m 0
# -q: nothing but errors
mkrun "$TMP/q" 1
expect_exit 0 "$PKB" sweep "$TMP/q" -p 1 -g 2 --ngpus 2 -t 1 -q
[ ! -s "$TMP/err" ] && ok || not_ok "-q printed: $(cat "$TMP/err")"
# timed evaluations never share a set, whatever --lanes asks
mkrun "$TMP/p" 2
expect_exit 0 "$PKB" sweep "$TMP/p" -p 1 -g 2 --ngpus 4 --lanes 4 -t 1 --measure-perf
expect_grep 'timed evaluations own their GPUs: 2 lanes of 2 GPUs, not 4' "$TMP/err"
expect_grep '^3$' <(wc -l < "$TMP/p/results.jsonl")

# ---- on a terminal: the bar, redrawn in place (done/total, passed, failures
# by outcome, elapsed, ETA), no plain lines, a newline at the end
if command -v script >/dev/null 2>&1; then
	mkrun "$TMP/t" 3
	PKB_FAKE_MODE=mismatch script -qec "'$PKB' sweep '$TMP/t' -p 1 -g 2 --ngpus 4 -t 1" /dev/null \
		< /dev/null > "$TMP/pty" 2>&1
	tr '\r' '\n' < "$TMP/pty" > "$TMP/bar"
	expect_grep '^\[#{7} {23}\] 1/4 passed 0 no_code 1 [0-9]+s ETA 0s' "$TMP/bar"
	expect_grep '^\[#{30}\] 4/4 passed 0 no_code 1 mismatch 3 [0-9]+s ETA 0s' "$TMP/bar"
	grep -q '^sweep: [0-9]/4' "$TMP/bar" && not_ok "plain lines on a terminal" || ok
	# each redraw clears the rest of the line; the last ends it
	[ "$(grep -o $'\033\[K' "$TMP/pty" | wc -l)" = 4 ] && ok || not_ok "no redraw: $(od -c "$TMP/pty" | head)"
	expect_grep $'ETA 0s\033\\[K\r?$' "$TMP/pty"
else
	not_ok "script (bsdutils) missing: the terminal bar is untested"
fi
done_testing
