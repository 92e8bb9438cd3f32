#!/bin/sh
# tools/deps.sh -- install the Debian packages pkb builds with, when missing.
# As root it installs them; otherwise it prints the one apt-get line to run.
# (The CUDA toolkit with NCCL is a prerequisite: see README.md.)
pkgs="libjansson-dev libelf-dev libssl-dev libseccomp-dev libcurl4-openssl-dev clang libclang-rt-14-dev"
# `tools/deps.sh report`: also the browser the report's test renders the page in;
# `tools/deps.sh slurm`: also Slurm and munge, for the tests of `pkb sweep --slurm`
# (tools/slurm-local runs them on loopback)
case ${1:-} in
report) pkgs="$pkgs chromium" ;;
slurm) pkgs="$pkgs slurm-wlm munge" ;;
esac
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# headers carried in .deps/include stand in for -dev packages (device machines)
# (tools/carry-headers fills it from a Debian machine)
if [ -n "$missing" ] && [ -z "${1:-}" ] && [ -f .deps/include/jansson.h ] &&
   [ -f .deps/include/libelf.h ] && [ -f .deps/include/seccomp.h ] && [ -f .deps/include/curl/curl.h ]; then
	exit 0
fi
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "pkb: installing$missing" >&2
	(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing) >&2 || {
		echo "pkb: apt-get failed; run: apt-get install$missing" >&2; exit 1; }
else
	echo "pkb: missing Debian packages; run: sudo apt-get install$missing" >&2
	exit 1
fi
if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
	echo "pkb: nvcc not found: install the CUDA toolkit (with NCCL) first" >&2
	exit 1
fi
