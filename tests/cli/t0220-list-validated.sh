# pkb list's gpu-validated column, from a results folder of the test's own
# (PKB_RESULTS): W listed when the newest record of the reference and of every
# ok_/bad_ file got its expected outcome; a newer failure, a missing case or a
# part of a run read after the whole run must not list it; not_run hides nothing
. "$(dirname "$0")/lib.sh"
R=$TMP/results
mkdir -p "$R"
# rec FILE PROBLEM W SOLUTION EXPECT OUTCOME [extra JSON fields]
rec() {
	printf '{"problem":"%s","world":%s,"shape":"default","solution":"%s","expect":"%s","exit":0,"seconds":1,"gpus":"0,1","result":{"outcome":"%s"}%s}\n' \
		"$2" "$3" "$4" "$5" "$6" "${7:-}" >> "$R/$1"
}
# every case of PROBLEM at W, all as expected
all_pass() {   # all_pass FILE PROBLEM W [extra JSON fields]
	rec "$1" "$2" "$3" reference pass pass "${4:-}"
	# every candidate, of every backend (.cu, and a triton one's .py)
	for f in "$ROOT/problems/$2/solutions/"ok_*; do
		rec "$1" "$2" "$3" "problems/$2/solutions/$(basename "$f")" pass pass "${4:-}"
	done
	for f in "$ROOT/problems/$2/solutions/"bad_*; do
		rec "$1" "$2" "$3" "problems/$2/solutions/$(basename "$f")" mismatch mismatch "${4:-}"
	done
}
all_pass 2026-01-01_suite_a.jsonl 001_allreduce 2
all_pass 2026-01-01_suite_a.jsonl 001_allreduce 4
all_pass 2026-01-01_suite_a.jsonl 001_allreduce 8
# 001 at W = 4: the newest run of the reference failed
rec 2026-01-02_suite_b.jsonl 001_allreduce 4 reference pass timeout
# 001 at W = 8: a later case not run changes nothing
rec 2026-01-02_suite_b.jsonl 001_allreduce 8 reference pass pass ',"not_run":true'
# 002 at W = 2: one ok_ file has no record
all_pass 2026-01-01_suite_a.jsonl 002_allgather 2
grep -v 'ok_ce_steps' "$R/2026-01-01_suite_a.jsonl" > "$R/x" && mv "$R/x" "$R/2026-01-01_suite_a.jsonl"
# 003 at W = 2: a failing part (suite_c_part) and the whole run (suite_c),
# which passed; the whole run is the newer
all_pass 2026-01-03_suite_c.jsonl 003_broadcast 2
rec 2026-01-03_suite_c_part.jsonl 003_broadcast 2 reference pass runtime_error
# a line that is not JSON (as in early files) is skipped
echo '{"problem":"003_broadcast","world":2,"seconds":,}' >> "$R/2026-01-03_suite_c.jsonl"
# a file without "suite" in its name is not read
rec 2026-01-04_aa.jsonl 001_allreduce 2 reference pass timeout
# 075 at W = 2: every case but bad_truncated_history, whose pkb-worlds
# line (3 .. 8) keeps it off W = 2; at W = 4 that file's record is missing
all_pass 2026-01-01_suite_a.jsonl 075_fla_gated_deltanet_cp 2
all_pass 2026-01-01_suite_a.jsonl 075_fla_gated_deltanet_cp 4
grep -v '"world":2,.*bad_truncated_history' "$R/2026-01-01_suite_a.jsonl" > "$R/x" && mv "$R/x" "$R/2026-01-01_suite_a.jsonl"
grep -v '"world":4,.*bad_truncated_history' "$R/2026-01-01_suite_a.jsonl" > "$R/x4"
cp "$R/2026-01-01_suite_a.jsonl" "$R/keep"
export PKB_RESULTS=$R
expect_exit 0 "$PKB" list
expect_grep '^075 .* 2,3,4,5,6,7,8 +2,4 ' "$TMP/out"
mv "$R/x4" "$R/2026-01-01_suite_a.jsonl"
expect_exit 0 "$PKB" list
expect_grep '^075 .* 2,3,4,5,6,7,8 +2 ' "$TMP/out"
mv "$R/keep" "$R/2026-01-01_suite_a.jsonl"
expect_exit 0 "$PKB" list
expect_grep '^id .* gpu-validated ' "$TMP/out"
expect_grep '^001 .* any>=2 +2,8 ' "$TMP/out"
expect_grep '^002 .* any>=2 +- ' "$TMP/out"
expect_grep '^003 .* any>=2 +2 ' "$TMP/out"
expect_grep '^004 .* any>=2 +- ' "$TMP/out"
expect_exit 0 "$PKB" list --json -
python3 - "$TMP/out" <<'PY' && ok || not_ok "list --json: gpu_validated"
import json, sys
d = {p["id"]: p["gpu_validated"] for p in json.load(open(sys.argv[1]))}
assert d[1] == [2, 8] and d[2] == [] and d[3] == [2] and d[4] == [], d
PY
# vs-original, from tools/crosscheck's records: the newest per (problem, W);
# W listed where it agrees, then the first W where it does not
# x FILE PROBLEM W RESULT [notes, JSON strings] [extra JSON fields]
x() {
	printf '{"problem":"%s","world":%s,"dtype":"bf16","result":"%s","detail":"","notes":[%s]%s}\n' \
		"$2" "$3" "$4" "${5:-}" "${6:-}" >> "$R/$1"
}
x 2026-01-01_crosscheck.jsonl 001_allreduce 2 agree
x 2026-01-01_crosscheck.jsonl 001_allreduce 4 disagree
x 2026-01-02_crosscheck.jsonl 001_allreduce 4 agree
x 2026-01-02_crosscheck.jsonl 001_allreduce 8 not_run
x 2026-01-01_crosscheck.jsonl 002_allgather 2 agree
x 2026-01-01_crosscheck.jsonl 002_allgather 4 layout
x 2026-01-01_crosscheck.jsonl 003_broadcast 2 disagree
x 2026-01-02_crosscheck.jsonl 003_broadcast 2 original_failed
x 2026-01-01_suite_x.jsonl 004_reduce 2 agree   # not a crosscheck file: not read
# a record of -g, the control (torch's reduced-precision GEMM reductions),
# is not the comparison, however new: marked by its gemm_reductions field,
# or, before that field, by its note (2026-11-28's fp32off file)
x 2026-01-03_crosscheck_g.jsonl 001_allreduce 2 disagree '' ',"gemm_reductions":"torch_default"'
x 2026-01-03_crosscheck_g.jsonl 001_allreduce 4 disagree \
	"\"crosscheck: the original's GEMMs with torch's default reductions (-g: the control)\""
x 2026-01-03_crosscheck_g.jsonl 003_broadcast 4 agree '' ',"gemm_reductions":"fp32"'
expect_exit 0 "$PKB" list
expect_grep '^id .* gpu-validated +vs-original +origin' "$TMP/out"
expect_grep '^001 .* any>=2 +2,8 +2,4 +torch' "$TMP/out"
expect_grep '^002 .* any>=2 +- +2 layout@4 +torch' "$TMP/out"
expect_grep '^003 .* any>=2 +2 +4 original_failed@2 +torch' "$TMP/out"
expect_grep '^004 .* any>=2 +- +- +torch' "$TMP/out"
expect_exit 0 "$PKB" list --json -
python3 - "$TMP/out" <<'PY' && ok || not_ok "list --json: vs_original"
import json, sys
d = {p["id"]: p["vs_original"] for p in json.load(open(sys.argv[1]))}
assert d[1] == {"2": "agree", "4": "agree"} and d[2] == {"2": "agree", "4": "layout"}, d
assert d[3] == {"2": "original_failed", "4": "agree"} and d[4] == {}, d
PY
# the committed results: the column is read from bench/results without
# PKB_RESULTS (002's files have all run on GPUs; 001's sandbox escapes of
# 2026-11-25 had not yet, which unlisted 001 as it should)
unset PKB_RESULTS
expect_exit 0 "$PKB" list
expect_grep '^002 .* any>=2 +[0-9]' "$TMP/out"
# issue 37: a record says which files it was made with (problem_sha256, as
# tools/test-gpu stamps it from `pkb list --json`): the problem's folder and
# the problems/lib headers it includes. Once any of them changes, the record
# says nothing; a header it does not include changes nothing
RT=$TMP/root
mkdir -p "$RT/problems"
cp -r "$ROOT/problems/031_fused_moe_fwd" "$ROOT/problems/lib" "$RT/problems/"
R2=$TMP/results2
mkdir -p "$R2"
sha_of() { PKB_ROOT=$RT "$PKB" list --json - | python3 -c 'import json,sys; print([p for p in json.load(sys.stdin) if p["id"] == 31][0]["files_sha256"])'; }
v31() { PKB_ROOT=$RT PKB_RESULTS=$R2 "$PKB" list --json - | python3 -c 'import json,sys; print(",".join(map(str, [p for p in json.load(sys.stdin) if p["id"] == 31][0]["gpu_validated"])) or "-")'; }
S0=$(sha_of)
[ ${#S0} = 64 ] && ok || not_ok "no files_sha256 for 031: '$S0'"
R=$R2 all_pass 2026-02-01_suite.jsonl 031_fused_moe_fwd 2 ",\"problem_sha256\":\"$S0\""
[ "$(v31)" = 2 ] && ok || not_ok "031 with its current files: '$(v31)'"
echo "/* changed */" >> "$RT/problems/lib/logprob_host.h"     # not 031's
[ "$(sha_of)" = "$S0" ] && [ "$(v31)" = 2 ] && ok || not_ok "another problem's header changed 031"
echo "/* changed */" >> "$RT/problems/lib/moe_fused.cuh"      # 031's
[ "$(sha_of)" != "$S0" ] && [ "$(v31)" = - ] && ok || not_ok "031's lib header changed, still '$(v31)'"
cp "$ROOT/problems/lib/moe_fused.cuh" "$RT/problems/lib/"
[ "$(v31)" = 2 ] && ok || not_ok "031's files restored: '$(v31)'"
set -- "$RT/problems/031_fused_moe_fwd/solutions/"ok_*.cu
echo "// changed" >> "$1"
[ "$(v31)" = - ] && ok || not_ok "031's ok_ file changed, still '$(v31)'"
# an older record without the hash does not come back once a newer one is
# of other files
cp -r "$ROOT/problems/031_fused_moe_fwd" "$RT/problems/"
R=$R2 all_pass 2026-01-15_suite.jsonl 031_fused_moe_fwd 4
[ "$(v31)" = 2,4 ] && ok || not_ok "031 with an old record at W = 4: '$(v31)'"
R=$R2 all_pass 2026-02-02_suite.jsonl 031_fused_moe_fwd 4 ',"problem_sha256":"00"'
[ "$(v31)" = 2 ] && ok || not_ok "a newer record of other files let the old one count: '$(v31)'"
# a record of the files as they are now counts even when a file that sorts
# after it (one date, machines' names h200x2 < h200x4) holds a stale one;
# a newer current record still wins (the newest run of the same files)
R=$R2 all_pass 2026-03-01_h200x2_suite.jsonl 031_fused_moe_fwd 8 ",\"problem_sha256\":\"$S0\""
R=$R2 all_pass 2026-03-01_h200x4_suite.jsonl 031_fused_moe_fwd 8 ',"problem_sha256":"00"'
[ "$(v31)" = 2,8 ] && ok || not_ok "a stale record in a later-named file hid a current one: '$(v31)'"
R=$R2 rec 2026-03-02_suite.jsonl 031_fused_moe_fwd 8 reference pass timeout ",\"problem_sha256\":\"$S0\""
[ "$(v31)" = 2 ] && ok || not_ok "a newer current failure did not win: '$(v31)'"
done_testing
