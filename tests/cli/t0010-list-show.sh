# list and show work without a GPU, and their JSON is well-formed
. "$(dirname "$0")/lib.sh"
expect_exit 0 "$PKB" list --json "$TMP/list.json"
expect_grep "^001  allreduce" "$TMP/out"
expect_grep '"name": "allreduce"' "$TMP/list.json"
n=$(ls -d "$ROOT"/problems/[0-9][0-9][0-9]_*/ | wc -l)
[ "$(grep -c '^[0-9][0-9][0-9] ' "$TMP/out")" = "$n" ] && ok || not_ok "list shows a line per problem folder"
expect_exit 0 "$PKB" show 1 --gpus 8 --m 64 --n 48 --json "$TMP/show.json"
expect_grep "All-reduce" "$TMP/out"
expect_grep "input +tensor +bf16 +\(64, 48\)" "$TMP/out"
expect_grep "output +out +bf16 +\(64, 48\)" "$TMP/out"
expect_grep '"world": 8' "$TMP/show.json"
# every problem's default shapes are valid at W = 2, 4 and 8 (the original's
# setting is 8 GPUs), and the shapes that scale with W say so at W = 8
bad=""
# (051 is refused at W = 2 on purpose: its EP groups would have one expert,
# so a candidate that never communicates would pass; its README says so)
for d in "$ROOT"/problems/[0-9][0-9][0-9]_*/; do
	id=$(basename "$d"); id=${id%%_*}
	for w in 2 4 8; do
		[ "$id@W=$w" = 051@W=2 ] && continue
		"$PKB" show "$id" --gpus $w --brief > /dev/null 2>&1 || bad="$bad $id@W=$w"
	done
done
[ -z "$bad" ] && ok || not_ok "default shapes refused:$bad"
expect_exit 0 "$PKB" show 8 --gpus 8 --m 3 --n 1001
expect_grep "input +tensor +bf16 +\(8, 3, 1001\)" "$TMP/out"
expect_exit 0 "$PKB" show 5 --gpus 8
expect_grep "\(8, 1024, 1024\)" "$TMP/out"
expect_exit 0 "$PKB" show 001_allreduce --brief --dtype fp32
expect_grep "input +tensor +fp32" "$TMP/out"
expect_exit 1 "$PKB" show 999
expect_grep "no problem '999'" "$TMP/err"
expect_exit 1 "$PKB" show 1 --gpus 1
expect_grep "world size 1 not supported" "$TMP/err"
expect_exit 1 "$PKB" list --json /nonexistent/dir/x.json
done_testing
