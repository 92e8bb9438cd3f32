# tools/lib.sh -- sourced by the tools: what a solution's header says, how
# many GPUs this machine has, and the environment every GPU run gets.

# header FILE KEY: the value of FILE's header line "KEY: value" (empty if none)
header() {
	sed -nE "s/.*$2: *([^ ].*[^ ]|[^ ]) *\$/\\1/p" "$1" | head -1
}

# the NVIDIA GPUs here (PKB_TEST_GPUS pretends, for the tools' own tests on
# fake ranks)
gpu_count() {
	echo "${PKB_TEST_GPUS:-$(ls /proc/driver/nvidia/gpus 2>/dev/null | wc -l)}"
}

# backend_of FILE: the backend FILE is built and run under: its pkb-backend
# header line, else `reference` for a problem's reference.cu, else cuda
backend_of() {
	local b
	b=$(header "$1" pkb-backend)
	if [ -n "$b" ]; then
		echo "$b"
	elif [ "$(basename "$1")" = reference.cu ]; then
		echo reference
	else
		echo cuda
	fi
}

# backend_missing B: why candidates of backend B cannot be built or run
# here (one line), or nothing when they can: parallelkittens needs
# ThunderKittens at $THUNDERKITTENS_ROOT (pkb never downloads it), triton
# a python3 ($PKB_PYTHON) with torch and Triton (docs/BACKENDS.md). The
# tools skip such files, saying so.
backend_missing() {
	case $1 in
	parallelkittens)
		[ -r "${THUNDERKITTENS_ROOT:-/nonexistent}/include/kittens.cuh" ] ||
			echo "THUNDERKITTENS_ROOT is unset or has no include/kittens.cuh" ;;
	triton)
		"${PKB_PYTHON:-python3}" -c 'import torch, triton' > /dev/null 2>&1 ||
			echo "${PKB_PYTHON:-python3} cannot import torch and triton" ;;
	esac
}

# backend_builds B: candidates of backend B can at least be built here
# (triton's syntax check needs python3 only; the others as backend_missing)
backend_builds() {
	case $1 in
	triton) command -v "${PKB_PYTHON:-python3}" > /dev/null ;;
	*) [ -z "$(backend_missing "$1")" ] ;;
	esac
}

# takes_world FILE W: FILE runs at W: its header names no pkb-worlds, or
# names W among them (a bad_ file whose shortcut is wrong only at some W)
takes_world() {
	local fw
	fw=$(header "$1" pkb-worlds)
	[ -z "$fw" ] || printf ' %s ' "$fw" | grep -q " $2 "
}

# emit FILE TEXT: TEXT as a line of FILE, under a lock (FILE.lock): cases
# running in lanes append as they finish
emit() {
	{ flock 9; printf '%s\n' "$2" >> "$1"; } 9>> "$1.lock"
}

# in_filter FILTER ID [NAME]: FILTER (-p's comma-separated problem ids, with
# or without leading zeros, or folder names) is empty or names this problem
in_filter() {
	[ -z "$1" ] || printf ',%s,' "$1" | grep -q ",$2,\|,$((10#$2)),${3:+\\|,$3,}"
}

# gpu_hold: `pkb hold` in the background for as long as the calling tool
# runs (it ends when its parent does; gpu_release ends it sooner): launches
# start faster while another process has a context on every GPU
# (src/cmd_hold.c has the figures). Its pid is $gpu_holder, which a tool
# that waits for its own jobs must leave out. Not on pretend GPUs, nor with
# PKB_NO_HOLD=1; PKB_HOLD_CMD replaces it (the tools' tests).
gpu_holder=""
gpu_hold() {
	[ "${PKB_NO_HOLD:-0}" = 1 ] && return 0
	if [ -n "${PKB_HOLD_CMD:-}" ]; then
		$PKB_HOLD_CMD > /dev/null 2>&1 &
	elif [ -z "${PKB_TEST_GPUS:-}" ]; then
		build/pkb hold > /dev/null 2>&1 &
	else
		return 0
	fi
	gpu_holder=$!
}
gpu_release() {
	[ -n "$gpu_holder" ] && kill "$gpu_holder" 2>/dev/null
	gpu_holder=""
}

# warm_cache LIST TOOL: compile every "BACKEND FILE" line of LIST into the
# compile cache, all at once (`pkb build`), so that no launch waits for nvcc
# (~2 s a file); a file that does not compile is left for its eval to
# report. Prints one line: TOOL: how many files, how long.
warm_cache() {
	local t0 files
	t0=$(date +%s.%N)
	files=$(sort -u "$1")
	[ -n "$files" ] && xargs -P "$(nproc)" -L 1 sh -c '"$0" build -q --backend "$1" "$2" > /dev/null 2>&1' \
		build/pkb <<< "$files"
	echo "$2: $(grep -c . <<< "$files") files compiled or found in the compile cache in" \
		"$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s"
}

# never NVLink multicast: on shared machines it can take GPUs out of service,
# and no pkb kernel needs it
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

# m_of SIZE: the base M of a per-rank size (8K, 2M, 256M: bytes of M x 1024
# bf16 elements; at least 1), as tools/bench-collectives and bench-variants
# give sizes
m_of() {
	local v=${1%[KMG]} u=${1: -1} b
	case $u in K) b=$((v * 1024)) ;; M) b=$((v * 1048576)) ;; G) b=$((v * 1073741824)) ;; *) b=$1 ;; esac
	b=$((b / 2048))
	echo $((b >= 1 ? b : 1))
}

# bench_line RESULT.json OUTPUT K=V... K:=N...: one eval's --json result as
# one JSON line, without its trial records, plus the fields K (strings, or
# integers for K:=N). When the eval wrote no result: {"outcome": "no
# result", "message": the first 300 bytes of its console OUTPUT}.
bench_line() {
	python3 - "$@" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception:
    r = {"outcome": "no result", "message": open(sys.argv[2], errors="replace").read(300)}
r.pop("trial_records", None)
for kv in sys.argv[3:]:
    k, v = kv.split("=", 1)
    if k.endswith(":"):
        r[k[:-1]] = int(v)
    else:
        r[k] = v
print(json.dumps(r))
PY
}
