# tools/bench-ab on fake ranks: each file evaluated by both pkbs, rounds
# times, the sides alternating which goes first; a file the old tree lacks
# is said, not run; the table's row per file; bad arguments exit 2, too few
# GPUs exit 9
. "$(dirname "$0")/lib.sh"
export PKB_RANK_CMD=$ROOT/build/tests/fake_rank PKB_FAKE_MODE=ok PKB_TEST_GPUS=4
cd "$ROOT"
f=problems/002_allgather/solutions/ok_oneshot_push.cu
r=problems/002_allgather/reference.cu
# an old tree with the reference but not the candidate, its pkb this one's
old=$TMP/old
mkdir -p "$old/build" "$old/problems/002_allgather"
ln -s "$ROOT/build/pkb" "$old/build/pkb"
cp $r "$old/$r"
expect_exit 0 tools/bench-ab -B "$old" -w 2 -n 3 -o "$TMP/ab" $r $f
n=$(grep -c '"bench_side": "old"' "$TMP/ab.jsonl"); m=$(grep -c '"bench_side": "new"' "$TMP/ab.jsonl")
[ "$n" = 4 ] && [ "$m" = 6 ] && ok || not_ok "expected 3 old + 1 absent and 6 new lines, got $n and $m"
expect_grep "\"bench_file\": \"$f\", \"bench_side\": \"old\", \"bench_round\": 1, \"outcome\": \"absent\"" "$TMP/ab.jsonl"
# round 1 old first, round 2 new first
sides=$(python3 -c 'import json,sys; print(" ".join(r["bench_side"] for r in map(json.loads, open(sys.argv[1])) if r["bench_file"] == sys.argv[2]))' "$TMP/ab.jsonl" $r)
[ "$sides" = "old new new old old new" ] && ok || not_ok "the sides did not alternate: $sides"
expect_grep '"world": 2' "$TMP/ab.jsonl"
expect_grep '"backend": "reference"' "$TMP/ab.jsonl"
expect_grep '^\| reference.cu \(002\) \| 3/3 \| 5\.00 \| 5\.00 \| 1\.000x \| 10\.00 \| 10\.00 \| 2\.000x \| 2\.000x \|$' "$TMP/ab.md"
expect_grep '^\| ok_oneshot_push.cu \(002\) \| 0/3 \| - \| 5\.00 \| - \|' "$TMP/ab.md"
expect_grep '^\|  old: absent: the old tree has no problems/002_allgather/solutions/ok_oneshot_push.cu \|' "$TMP/ab.md"
# a shape reaches both sides
expect_exit 0 tools/bench-ab -B "$old" -w 2 -n 1 -s "64 x 512" -o "$TMP/s" $r
[ "$(grep -c '"m": 64, "n": 512' "$TMP/s.jsonl")" = 2 ] && ok || not_ok "the shape did not reach both sides"
# -b REV: the old tree is build/ab/<commit>, built once (here already there)
sha=$(git rev-parse HEAD)
if [ ! -e "build/ab/$sha" ]; then
	mkdir -p "build/ab/$sha/build" && ln -s "$ROOT/build/pkb" "build/ab/$sha/build/pkb"
	cp -r problems "build/ab/$sha/"
	expect_exit 0 tools/bench-ab -b HEAD -w 2 -n 1 -o "$TMP/b" $r
	expect_grep "\"bench_rev\": \"$sha\"" "$TMP/b.jsonl"
	rm -rf "build/ab/$sha"
	rmdir build/ab 2>/dev/null
fi
expect_exit 2 tools/bench-ab -w 2 $r
expect_exit 2 tools/bench-ab -b HEAD -B "$old" $r
expect_exit 2 tools/bench-ab -b no-such-commit-xyz $r
expect_exit 2 tools/bench-ab -B "$old" -n 0 $r
expect_exit 2 tools/bench-ab -B "$old" -s 64 $r
expect_exit 2 tools/bench-ab -B "$old" /etc/passwd
expect_exit 2 tools/bench-ab -B "$TMP" $r
PKB_TEST_GPUS=1 expect_exit 9 tools/bench-ab -B "$old" -w 2 $r
done_testing
