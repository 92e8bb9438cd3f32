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
expect_exit 0 "$PKB" show 001_allreduce --brief --dtype fp32
expect_grep "input +tensor +fp32" "$TMP/out"
expect_exit 1 "$PKB" show 999
expect_grep "no problem '999'" "$TMP/err"
expect_exit 1 "$PKB" show 1 --gpus 1
expect_grep "world size 1 not supported" "$TMP/err"
expect_exit 1 "$PKB" list --json /nonexistent/dir/x.json
done_testing
