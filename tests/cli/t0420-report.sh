# pkb report: the page opens in headless chromium from a file, is not blank,
# holds the charts (svg) and the numbers pkb score --json gives, fetches
# nothing and logs no console error
. "$(dirname "$0")/lib.sh"
command -v chromium >/dev/null 2>&1 || sh "$ROOT/tools/deps.sh" report >&2
if ! command -v chromium >/dev/null 2>&1; then
	not_ok "chromium missing and tools/deps.sh report could not install it"
	done_testing; exit
fi
# rec PROBLEM SAMPLE OUTCOME [SPEEDUP BOUND_US]: reference median 1 ms
rec() {
	python3 - "$@" <<'PY'
import json, sys
a = sys.argv[1:] + [None] * 5
pid, sample, outcome, sp, bound = a[:5]
r = {"key": f"{pid}|{sample}", "outcome": outcome, "candidate": f"candidates/{pid}/{sample}.cu",
     "log": f"logs/{pid}/{sample}.log",
     "instance": {"problem": int(pid), "sample": sample, "world": 4, "timing": "perf",
                  "hardware": {"gpu": "NVIDIA H200", "gpus": 4}}}
if outcome != "no_code":
    r["result"] = {"outcome": outcome, "timing": {"mode": "warm", "device": "NVIDIA H200"}}
if sp:
    r["result"].update(speedup=float(sp), candidate_perf={"median_ms": 1 / float(sp)},
                       reference_perf={"median_ms": 1.0}, roofline={"bound_us": float(bound)})
print(json.dumps(r))
PY
}
mkdir -p "$TMP/gpt" "$TMP/claude"
{
	rec 1 s0 pass 2.0 250; rec 1 s1 pass 0.8 250; rec 1 s2 timeout
	rec 9 s0 compile_error; rec 9 s1 pass 1.25 100; rec 30 s0 no_code; rec 30 s1 flagged
	# none correct: the best is the furthest (s2's mismatch), not the first
	rec 12 s0 compile_error; rec 12 s1 timeout; rec 12 s2 mismatch; rec 12 s3 load_refused
	rec 12 s4 mismatch
} > "$TMP/gpt/results.jsonl"
{
	rec 1 s0 pass 1.5 250; rec 1 s1 mismatch; rec 9 s0 runtime_error; rec 9 s1 pass 3.0 100
} > "$TMP/claude/results.jsonl"
expect_exit 0 "$PKB" report "$TMP/gpt" "$TMP/claude" -o "$TMP/r.html"
expect_exit 0 "$PKB" score "$TMP/gpt" "$TMP/claude" --json "$TMP/s.json"
# self-contained: no script, no URL but the SVG namespace and file links
! grep -qi '<script' "$TMP/r.html" && ok || not_ok "a script on the page"
! grep -oE '(src|href)="https?:[^"]*' "$TMP/r.html" | grep -q . && ok || not_ok "a network resource"
expect_exit 0 timeout 120 chromium --headless --no-sandbox --disable-gpu --enable-logging=stderr \
	--screenshot="$TMP/shot.png" --window-size=1200,2000 "file://$TMP/r.html"
! grep -qiE 'CONSOLE|Uncaught|Failed to load|net::ERR' "$TMP/err" && ok || not_ok "console error: $(grep -iE 'CONSOLE|Uncaught|Failed to load|net::ERR' "$TMP/err" | head -3)"
expect_exit 0 timeout 120 chromium --headless --no-sandbox --disable-gpu --dump-dom "file://$TMP/r.html"
cp "$TMP/out" "$TMP/dom.html"
# the PNG decoded by hand (zlib): 1200 x 2000, and not blank: a good share of
# pixels not white and several colours (the charts' fills)
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
assert (w, h) == (1200, 2000) and depth == 8 and ctype in (2, 6), hdr
bpp = 3 if ctype == 2 else 4
raw, stride = zlib.decompress(idat), w * bpp
prev, colours, dark = bytearray(stride), set(), 0
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
assert dark > 2000, f"only {dark} non-white pixels sampled"
assert len(colours) > 20, f"{len(colours)} colours"
PY
expect_exit 0 python3 - "$TMP/dom.html" "$TMP/s.json" <<'PY'
import json, re, sys
dom, s = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))
assert len(re.findall(r"<svg", dom)) >= 3, "charts missing"
assert len(re.findall(r"<polyline", dom)) == 2, "one fast_p curve per run"
assert dom.count("<rect") >= 10
pct = lambda x: "-" if x is None else "%.1f%%" % (100 * x)
num = lambda x: "-" if x is None else "%.3f" % x
cells = re.findall(r"<td>([^<]*)</td>", dom)
for r in s["runs"]:
    want = [pct(v) for v in r["pass_at_k"].values()] + [pct(v) for v in r["fast_p"].values()]
    want += [num(r["geomean_speedup"]), num(r["geomean_speedup_clamped"]), num(r["mean_sol"]),
             pct(r["mean_roofline_fraction"])]
    for w in want:
        assert w in cells, (r["name"], w)
    for o, n in r["outcomes"].items():
        assert re.search(rf"<td>{o}</td>(<td>\d+</td>)*", dom), o
    for p in r["problems"]:
        b = p["candidates"][p["best"]]
        assert num(b["speedup"]) in cells and pct(b["roofline_fraction"]) in cells, b
        assert f'{p["correct"]} of {p["n"]}' in dom
# spot values by hand: gpt geomean (2 * 0.8 * 1.25)^(1/3) = 2^(1/3) = 1.260;
# claude fast_1 = (1/2 + 1/2) / 2 = 50.0%
g, c = s["runs"]
assert abs(g["geomean_speedup"] - 2 ** (1 / 3)) < 1e-9 and "1.260" in cells
assert abs(c["fast_p"]["1"] - 0.5) < 1e-12
assert "candidates/1/s0.cu" in dom and "logs/1/s0.log" in dom
assert "pass@k" in dom and "Chen et al." in dom
# with none correct the best is the furthest, the first of equals
best = {p["id"]: p["best"] for p in g["problems"]}
assert best[12] == 2 and best[30] == 1, best
assert re.search(r'<td>012</td>.*?<td class="bad">mismatch</td>', dom)
assert re.search(r'<td>030</td>.*?<td class="bad">flagged</td>', dom)
PY
expect_exit 2 "$PKB" report "$TMP/gpt"
done_testing
