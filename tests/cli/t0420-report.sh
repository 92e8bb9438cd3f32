# pkb report: the page's numbers are pkb score's (checked cell by cell), each
# run's header (model, provider, samples, W, GPU, driver, pkb, date; "-"
# where unknown), the leaderboard, the bootstrap bands (seeded: the same
# page byte for byte; exact where the bootstrap's distribution is known),
# the best verdict of a problem with no correct candidate (the furthest),
# links relative to the page that still resolve once the folder is moved,
# and no absolute path. Then, in headless chromium: the page loads from a
# file with no console error, holds its charts, and its screenshot is not
# blank and uses the full width. PKB_REPORT_PNG=FILE keeps the screenshot
# (docs/report.png is made so).
. "$(dirname "$0")/lib.sh"
# ---- fixture A: records written by hand ------------------------------------
# rec PROBLEM SAMPLE OUTCOME [SPEEDUP BOUND_US [CANDIDATE]]: reference median 1 ms
rec() {
	python3 - "$@" <<'PY'
import json, sys
a = sys.argv[1:] + [None] * 6
pid, sample, outcome, sp, bound, cand = a[:6]
r = {"key": f"{pid}|{sample}", "outcome": outcome,
     "candidate": cand or f"candidates/{pid}/{sample}.cu", "log": f"logs/{pid}/{sample}.log",
     "instance": {"problem": int(pid), "sample": sample, "world": 4, "timing": "perf",
                  "pkb_version": "0.1",
                  "hardware": {"gpu": "NVIDIA H200", "gpus": 4, "driver": "570.133.20",
                               "cuda_runtime": "12.8", "nccl": "2.28.3"}}}
if outcome != "no_code":
    r["result"] = {"outcome": outcome, "timing": {"mode": "warm", "device": "NVIDIA H200"},
                   "date": "2026-11-2%sT10:00:00Z" % (2 + int(pid) % 2)}
if sp:
    r["result"].update(speedup=float(sp), candidate_perf={"median_ms": 1 / float(sp)},
                       reference_perf={"median_ms": 1.0}, roofline={"bound_us": float(bound)})
print(json.dumps(r))
PY
}
PUB=$TMP/pub
G=$PUB/runs/gpt C=$PUB/runs/claude
mkdir -p "$G" "$C"
# gpt's candidates as a sweep run from $PUB records them: runs/gpt/...
{
	rec 1 s0 pass 2.0 250 runs/gpt/candidates/1/s0.cu; rec 1 s1 pass 0.8 250; rec 1 s2 timeout
	rec 9 s0 compile_error; rec 9 s1 pass 1.25 100; rec 30 s0 no_code; rec 30 s1 flagged
	# none correct: the furthest is the mismatch (s2), not the first (s0)
	rec 12 s0 compile_error; rec 12 s1 timeout; rec 12 s2 mismatch; rec 12 s3 load_refused
	rec 12 s4 mismatch
} > "$G/results.jsonl"
# claude's as absolute paths
{
	rec 1 s0 pass 1.5 250 "$C/candidates/1/s0.cu"; rec 1 s1 mismatch
	rec 9 s0 runtime_error; rec 9 s1 pass 3.0 100
} > "$C/results.jsonl"
cat > "$G/run.json" <<'EOF'
{"pkb_version": "0.1", "created": "2026-11-20T09:00:00Z", "updated": "2026-11-20T09:30:00Z",
 "args": {"model": "gpt-5", "provider": "openai", "k": 5, "world": 4, "temperature": 0.7}}
EOF
for f in "$G/candidates/1/s0.cu" "$G/logs/1/s0.log" "$C/candidates/1/s0.cu" "$C/logs/1/s0.log"; do
	mkdir -p "$(dirname "$f")"; echo "// $f" > "$f"
done
expect_exit 0 "$PKB" report "$G" "$C" -o "$PUB/report.html"
expect_exit 0 "$PKB" score "$G" "$C" --json "$TMP/s.json"
expect_exit 0 "$PKB" score "$G" "$C"
cp "$TMP/out" "$TMP/score.txt"
# the same runs named otherwise, from another folder: the same page
(cd "$PUB" && "$PKB" report runs/gpt/ ./runs/claude -o report2.html) && ok || not_ok "report from $PUB"
cmp -s "$PUB/report.html" "$PUB/report2.html" && ok || not_ok "the page depends on how the runs were named"
rm -f "$PUB/report2.html"
# no absolute path, no file:// link, nothing fetched, no script
! grep -qF "$TMP" "$PUB/report.html" && ok || not_ok "an absolute path on the page: $(grep -oF "$TMP[^\"<]*" "$PUB/report.html" | head -2)"
! grep -qiE 'file:|href="/|src=' "$PUB/report.html" && ok || not_ok "an absolute link"
! grep -qi '<script' "$PUB/report.html" && ok || not_ok "a script on the page"
! grep -oE 'https?:[^" ]*' "$PUB/report.html" | grep -vqx 'http://www.w3.org/2000/svg' && ok ||
	not_ok "a URL on the page"
# the folder zipped and unpacked elsewhere: every link still resolves
cp -r "$PUB" "$TMP/moved"
expect_exit 0 python3 - "$TMP/moved/report.html" <<'PY'
import os, re, sys, urllib.parse
page = sys.argv[1]
links = re.findall(r'href="([^"]*)"', open(page).read())
base = os.path.dirname(page)
want = {"runs/gpt/candidates/1/s0.cu", "runs/gpt/logs/1/s0.log",
        "runs/claude/candidates/1/s0.cu", "runs/claude/logs/1/s0.log", "runs/gpt/", "runs/claude/"}
assert want <= set(links), sorted(set(links))
for l in want:
    assert os.path.exists(os.path.join(base, urllib.parse.unquote(l))), l
PY
# ---- the numbers are score's --------------------------------------------------
python3 - "$PUB/report.html" "$TMP/s.json" "$TMP/score.txt" <<'PY' && ok || not_ok "numbers"
import json, re, sys
dom, s = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))
pct = lambda x: "-" if x is None else "%.1f%%" % (100 * x)
num = lambda x: "-" if x is None else "%.3f" % x
def table(id):
    t = re.search(rf'<table id="{id}">(.*?)</table>', dom, re.S).group(1)
    return [[re.sub(r"<[^>]*>", "", c) for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row)]
            for row in re.findall(r"<tr>(.*?)</tr>", t, re.S)]
summ = {row[0]: row[1:] for row in table("summary")}
# score's table as it prints it, row by row, is the page's
printed = 0
for line in open(sys.argv[3]):
    row = re.split(r"\s{2,}", line.strip())
    name = row[0].replace(">", "&gt;")
    if name in summ and len(row) == 3:
        assert summ[name] == row[1:], (name, summ[name], row)
        printed += 1
assert printed == 16, printed   # candidates, problems, pass@1-5, fast_p x5, 4 means
g, c = s["runs"]
for i, r in enumerate(s["runs"]):
    for k, v in r["pass_at_k"].items():
        assert summ[f"pass@{k}"][i] == pct(v), (k, summ[f"pass@{k}"], v)
    for p, v in r["fast_p"].items():
        assert summ[f"fast_{p}"][i] == pct(v), (p, v)
    assert summ["geomean"][i] == num(r["geomean_speedup"])
    assert summ["geomean clamped"][i] == num(r["geomean_speedup_clamped"])
    assert summ["S (mean)"][i] == num(r["mean_sol"])
    assert summ["roofline frac"][i] == pct(r["mean_roofline_fraction"])
    counts = {row[0]: row[1:] for row in table("outcome-counts")}
    for o, n in r["outcomes"].items():
        assert counts[o][i] == str(n), (o, counts[o], n)
    rows = table(f"problems-{i}")[1:]
    assert len(rows) == len(r["problems"])
    for row, p in zip(rows, r["problems"]):
        b = p["candidates"][p["best"]]
        assert row[0].startswith("%03d " % p["id"]) and row[2] == f'{p["correct"]} of {p["n"]}'
        assert row[3] == b["outcome"] and row[4] == num(b["speedup"]), (row, b)
        assert row[5] == pct(b["roofline_fraction"]) and row[6] == num(b["sol"]), (row, b)
# spot values by hand: gpt geomean (2 * 0.8 * 1.25)^(1/3) = 2^(1/3) = 1.260;
# claude fast_1 = (1/2 + 1/2) / 2 = 50.0%
assert abs(g["geomean_speedup"] - 2 ** (1 / 3)) < 1e-9 and summ["geomean"][0] == "1.260"
assert abs(c["fast_p"]["1"] - 0.5) < 1e-12
# the header: run.json and the records; "-" where neither says
runs = table("runs")
hdr = runs[0]
gr, cr = (dict(zip(hdr, row)) for row in runs[1:])
assert gr["run"] == "gpt-5" and gr["model"] == "gpt-5" and gr["provider"] == "openai", gr
assert gr["folder"] == "runs/gpt" and gr["temperature"] == "0.7" and gr["mode"] == "one-shot"
assert gr["samples"] == "2-5" and gr["problems"] == "4" and gr["W"] == "4", gr
assert gr["GPU"] == "NVIDIA H200" and gr["driver"] == "570.133.20" and gr["CUDA"] == "12.8"
assert gr["NCCL"] == "2.28.3" and gr["pkb"] == "0.1" and gr["date"] == "2026-11-22 to 2026-11-23", gr
assert cr["run"] == "claude" and cr["model"] == "-" and cr["provider"] == "-" and cr["mode"] == "-", cr
assert cr["temperature"] == "-" and cr["date"] == "2026-11-23", cr
assert g["label"] == "gpt-5" and g["meta"]["driver"] == "570.133.20" and c["meta"]["model"] == "-"
# item 7: with none correct the best is the furthest, the first of equals
p12 = next(p for p in g["problems"] if p["id"] == 12)
p30 = next(p for p in g["problems"] if p["id"] == 30)
assert p12["best"] == 2 and p30["best"] == 1, (p12["best"], p30["best"])
cells = re.findall(r'<g class="cell">.*?</g>', dom)
assert any(">mismatch</text><title>012 " in x for x in cells), "heat map: 012's mismatch"
assert any(">flagged</text><title>030 " in x for x in cells), "heat map: 030's flagged"
# the leaderboard: ranked by fast_1; pass@1, fast_0 and fast_1 are score's
lb = table("leaderboard")
assert lb[0][4:7] == ["pass@1", "fast_0 (correct)", "fast_1"], lb[0]
order = sorted(s["runs"], key=lambda r: (-r["fast_p"]["1"], -r["pass_at_k"]["1"]))
for row, r in zip(lb[1:], order):
    assert row[1] == r["label"], (row, r["label"])
    for cell, v in zip(row[4:7], (r["pass_at_k"]["1"], r["fast_p"]["0"], r["fast_p"]["1"])):
        assert cell.split(" ")[0] == pct(v), (cell, v)
    assert row[7] == num(r["geomean_speedup"]) and row[8] == num(r["mean_sol"])
# the bands: claude's two problems both have pass@1 1/2: every resample's
# mean is 1/2. gpt's four: 2/3, 1/2, 0, 0: a draw of four zeros has chance
# 1/16 > 2.5%, so the lower end is 0; the upper end lies between the exact
# distribution's 95th and 99.9th percentiles (1000 resamples)
band = lambda cell: re.search(r"\[(.*?)%, (.*?)%\]", cell).groups()
by = {row[1]: row for row in lb[1:]}
assert band(by["claude"][4]) == ("50.0", "50.0"), by["claude"]
lo, hi = map(float, band(by["gpt-5"][4]))
import itertools
means = sorted(sum(x) / 4 for x in itertools.product([2 / 3, 1 / 2, 0, 0], repeat=4))
assert lo == 0 and 100 * means[int(0.95 * 256)] - 0.05 <= hi <= 100 * means[int(0.999 * 256)] + 0.05, (lo, hi)
assert lo <= 100 * g["pass_at_k"]["1"] <= hi
# score --json carries the same bands
for r in s["runs"]:
    row = by[r["label"]]
    ci = r["ci"]
    assert ci["resamples"] == 1000 and ci["seed"] == 1 and ci["level"] == 0.95, ci
    for cell, (l, h) in zip(row[4:7], (ci["pass_at_k"]["1"], ci["fast_p"]["0"], ci["fast_p"]["1"])):
        assert band(cell) == tuple("%.1f" % (100 * x) for x in (l, h)), (cell, l, h)
assert "1000 resamples, seed 1" in dom and "percentile bootstrap over problems" in dom
assert "pass@k" in dom and "Chen et al." in dom and "pass &gt; flagged &gt; mismatch" in dom
PY
# seeded: the same page twice; another seed moves the bands, not the numbers
expect_exit 0 "$PKB" report "$G" "$C" -o "$PUB/again.html"
cmp -s "$PUB/report.html" "$PUB/again.html" && ok || not_ok "two reports of the same runs differ"
expect_exit 0 "$PKB" report "$G" "$C" --seed 7 -o "$PUB/seed7.html"
! cmp -s "$PUB/report.html" "$PUB/seed7.html" && ok || not_ok "--seed changes nothing"
diff <(sed 's/<span class="band">[^<]*<\/span>//g; s/points="[^"]*"//g; s/seed [0-9]*//g' "$PUB/report.html") \
     <(sed 's/<span class="band">[^<]*<\/span>//g; s/points="[^"]*"//g; s/seed [0-9]*//g' "$PUB/seed7.html") \
	>/dev/null && ok || not_ok "--seed changed more than the bands"
expect_exit 0 "$PKB" report "$G" --resamples 0 -o "$TMP/nob.html"
! grep -q 'class="band"' "$TMP/nob.html" && grep -q 'No bands' "$TMP/nob.html" && ok ||
	not_ok "--resamples 0 still draws bands"
# two runs of one model are told apart by folder; an agent run says so
cp -r "$G" "$PUB/runs/gpt2"
sed -i 's/"k": 5,/"mode": "agent", "k": 1,/' "$PUB/runs/gpt2/run.json"
expect_exit 0 "$PKB" report "$G" "$PUB/runs/gpt2" -o "$PUB/two.html"
expect_exit 0 python3 - "$PUB/two.html" <<'PY'
import re, sys
rows = re.findall(r"<tr><td>(.*?)</tr>", re.search(r'<table id="runs">(.*?)</table>',
                  open(sys.argv[1]).read(), re.S).group(1))
cells = [[re.sub(r"<[^>]*>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", "<td>" + r)]
         for r in rows]
assert [c[0] for c in cells] == ["gpt-5 (gpt)", "gpt-5 (gpt2)"], cells
assert [c[4] for c in cells] == ["one-shot", "agent"], cells
PY
expect_exit 2 "$PKB" report "$G" --resamples x -o "$TMP/x.html"
expect_exit 2 "$PKB" report "$G"
expect_exit 1 "$PKB" report "$G" -o "$TMP/no/such/dir/r.html"
expect_grep "no folder" "$TMP/err"

# ---- fixture B: three runs of 24 problems, for the browser and docs/report.png
python3 - "$TMP/b" <<'PY'
import json, os, random, sys
root = sys.argv[1]
ids = [1, 2, 3, 5, 8, 12, 13, 17, 20, 23, 27, 31, 35, 40, 41, 44, 48, 52, 57, 60, 64, 70, 75, 81]
runs = [("s45", "claude-sonnet-4-5", "anthropic", 0.62, 0.9),
        ("gpt5", "gpt-5", "openai", 0.55, 0.7), ("g25", "gemini-2.5-pro", "gemini", 0.4, 0.5)]
rng = random.Random(38)
fails = ["compile_error", "mismatch", "runtime_error", "timeout", "load_refused", "no_code",
         "flagged"]
for d, model, prov, pc, mu in runs:
    os.makedirs(f"{root}/{d}")
    json.dump({"pkb_version": "0.1", "created": "2026-11-21T08:00:00Z",
               "updated": "2026-11-21T09:00:00Z",
               "args": {"model": model, "provider": prov, "k": 4, "world": 4,
                        "temperature": 1.0}}, open(f"{root}/{d}/run.json", "w"))
    with open(f"{root}/{d}/results.jsonl", "w") as f:
        for pid in ids:
            for k in range(4):
                ok = rng.random() < pc
                out = "pass" if ok else rng.choices(fails, [5, 6, 3, 2, 1, 2, 1])[0]
                r = {"key": f"{pid:03d}|sample_{k}", "outcome": out,
                     "candidate": f"candidates/{pid:03d}/sample_{k}.cu",
                     "log": f"logs/{pid:03d}/sample_{k}.log",
                     "instance": {"problem": pid, "sample": f"sample_{k}", "world": 4,
                                  "timing": "perf", "pkb_version": "0.1",
                                  "hardware": {"gpu": "NVIDIA H200", "gpus": 4,
                                               "driver": "570.133.20", "cuda_runtime": "12.8",
                                               "nccl": "2.28.3"}}}
                if out != "no_code":
                    r["result"] = {"outcome": out, "date": "2026-11-22T1%d:00:00Z" % k,
                                   "timing": {"mode": "warm", "device": "NVIDIA H200"}}
                if ok:
                    sp = round(rng.lognormvariate(mu - 0.9, 0.6), 3)
                    r["result"].update(speedup=sp, candidate_perf={"median_ms": 1 / sp},
                                       reference_perf={"median_ms": 1.0},
                                       roofline={"bound_us": rng.uniform(80, 400)})
                f.write(json.dumps(r) + "\n")
PY
B=$TMP/b
expect_exit 0 "$PKB" report "$B/s45" "$B/gpt5" "$B/g25" -o "$B/report.html"
expect_exit 0 "$PKB" score "$B/s45" "$B/gpt5" "$B/g25" --json "$B/s.json"

# ---- in the browser ---------------------------------------------------------------
command -v chromium >/dev/null 2>&1 || sh "$ROOT/tools/deps.sh" report >&2
if ! command -v chromium >/dev/null 2>&1; then
	if [ "$(id -u)" != 0 ]; then
		# the one case that may skip: said on the line run-tests shows
		echo "$(basename "$0"): $_pass passed, $_fail failed; SKIPPED the browser checks:" \
			"chromium is missing and, not root, this cannot install it (sudo apt-get install chromium)"
		[ "$_fail" = 0 ]; exit
	fi
	not_ok "chromium missing and tools/deps.sh report could not install it"
	done_testing; exit
fi
chrome() { timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
	--enable-logging=stderr --v=0 "$@"; }
for page in "$PUB/report.html" "$B/report.html"; do
	expect_exit 0 chrome --dump-dom "file://$page"
	cp "$TMP/out" "$page.dom"
	! grep -qiE 'CONSOLE|Uncaught|Failed to load|net::ERR' "$TMP/err" && ok ||
		not_ok "console error: $(grep -iE 'CONSOLE|Uncaught|Failed to load|net::ERR' "$TMP/err" | head -3)"
done
expect_exit 0 chrome --screenshot="$TMP/shot.png" --window-size=1400,2400 "file://$B/report.html"
! grep -qiE 'CONSOLE|Uncaught|Failed to load|net::ERR' "$TMP/err" && ok || not_ok "console error"
[ -n "${PKB_REPORT_PNG:-}" ] && cp "$TMP/shot.png" "$PKB_REPORT_PNG"
# the DOM as chromium built it: the parts, one curve and one band per run,
# a heat map cell per problem and run, and score's numbers in the leaderboard
expect_exit 0 python3 - "$B/report.html.dom" "$B/s.json" "$PUB/report.html.dom" <<'PY'
import json, re, sys
dom, s, a = open(sys.argv[1]).read(), json.load(open(sys.argv[2])), open(sys.argv[3]).read()
for id in ["runs", "leaderboard", "passk", "fastp", "heatmap", "failures", "categories",
           "outcome-counts", "summary", "problems-0", "problems-1", "problems-2"]:
    assert f'id="{id}"' in dom, id
nr = len(s["runs"])
assert len(re.findall(r'class="curve passk"', dom)) == nr
assert len(re.findall(r'class="curve fastp"', dom)) == nr
assert len(re.findall(r'<polygon class="band"', dom)) == 2 * nr
assert len(re.findall(r'<g class="cell">', dom)) == sum(len(r["problems"]) for r in s["runs"])
pct = lambda x: "%.1f%%" % (100 * x)
lb = re.search(r'<table id="leaderboard">(.*?)</table>', dom, re.S).group(1)
for r in s["runs"]:
    assert re.search(re.escape(r["label"]) + r".*?" + re.escape(pct(r["pass_at_k"]["1"])) +
                     r".*?" + re.escape(pct(r["fast_p"]["1"])), lb), r["label"]
assert len(re.findall(r"<svg", a)) >= 5 and "gpt-5" in a
PY
# the screenshot decoded by hand (zlib): 1400 x 2400, not blank (a good
# share of pixels not white, many colours), and the page's right third drawn
# on (full width, not a narrow column)
expect_exit 0 python3 - "$TMP/shot.png" <<'PY'
import struct, sys, zlib
d = open(sys.argv[1], "rb").read()
assert d[:8] == b"\x89PNG\r\n\x1a\n"
pos, idat, hdr = 8, b"", None
while pos < len(d):
    n, t = struct.unpack(">I4s", d[pos:pos + 8])
    body = d[pos + 8:pos + 8 + n]
    if t == b"IHDR": hdr = struct.unpack(">IIBBBBB", body)
    if t == b"IDAT": idat += body
    pos += 12 + n
w, h, depth, ctype = hdr[:4]
assert (w, h) == (1400, 2400) and depth == 8 and ctype in (2, 6), hdr
bpp = 3 if ctype == 2 else 4
raw, stride = zlib.decompress(idat), w * bpp
prev, colours, dark, right = bytearray(stride), set(), 0, 0
i = 0
for y in range(h):
    f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
    for x in range(stride):   # undo the PNG filters
        a = line[x - bpp] if x >= bpp else 0
        b, c = prev[x], prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    prev = line
    if y % 4 == 0:
        for x in range(0, stride, bpp * 4):
            px = tuple(line[x:x + 3]); colours.add(px)
            dark += px != (255, 255, 255)
            right += px != (255, 255, 255) and x // bpp > 2 * w // 3
assert dark > 5000, f"only {dark} non-white pixels sampled"
assert len(colours) > 40, f"{len(colours)} colours"
assert right > 1000, f"only {right} non-white pixels sampled in the right third"
PY
done_testing
