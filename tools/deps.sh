#!/bin/sh
# tools/deps.sh -- install the Debian packages pkb builds with, when missing.
# As root it installs them; otherwise it prints the one apt-get line to run.
# (The CUDA toolkit with NCCL is a prerequisite: see README.md.)
pkgs="libjansson-dev libelf-dev libssl-dev libseccomp-dev libcurl4-openssl-dev clang libclang-rt-14-dev"
# Wanted, not needed: chromium, headless, in which tests/cli/t0420 renders
# pkb report's page. Installed with the rest as root; otherwise said, and that
# test skips its browser checks, saying so (the page's other checks still run).
# `tools/deps.sh report`: chromium needed (t0420 runs this when it lacks it);
# `tools/deps.sh slurm`: also Slurm and munge, for the tests of `pkb sweep --slurm`
# (tools/slurm-local runs them on loopback). Also wanted: Debian python3's
# shared libpython (libpython3-dev pulls it), which the triton backend embeds
# and test_pybridge needs; without it that test skips, saying so.
wanted="chromium libpython3-dev"
case ${1:-} in
report) pkgs="$pkgs chromium"; wanted="" ;;
slurm) pkgs="$pkgs slurm-wlm munge" ;;
esac
absent() {   # absent PKG...: those not installed
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || printf ' %s' "$p"
	done
}
missing=$(absent $pkgs)
optional=$(absent $wanted)
# headers carried in .deps/include stand in for -dev packages (device machines)
# (tools/carry-headers fills it from a Debian machine)
if [ -n "$missing" ] && [ -z "${1:-}" ] && [ -f .deps/include/jansson.h ] &&
   [ -f .deps/include/libelf.h ] && [ -f .deps/include/seccomp.h ] && [ -f .deps/include/curl/curl.h ]; then
	exit 0
fi
[ -z "$missing$optional" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "pkb: installing$missing$optional" >&2
	(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing $optional) >&2 || {
		echo "pkb: apt-get failed; run: apt-get install$missing$optional" >&2
		[ -n "$missing" ] && exit 1; }
elif [ -n "$missing" ]; then
	echo "pkb: missing Debian packages; run: sudo apt-get install$missing$optional" >&2
	exit 1
else
	echo "pkb: no$optional: tests/cli/t0420 will skip its browser checks; run: sudo apt-get install$optional" >&2
	exit 0
fi
[ -z "$missing" ] && exit 0
if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
	echo "pkb: nvcc not found: install the CUDA toolkit (with NCCL) first" >&2
	exit 1
fi
