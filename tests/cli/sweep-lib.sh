# tests/cli/sweep-lib.sh -- sourced by the sweep tests after lib.sh.
# mkrun DIR N [SRC]: a `pkb generate` layout with N samples of 001 (copies
# of SRC, default a known-good candidate) and one reply without code
mkrun() {
	local src=${3:-$ROOT/problems/001_allreduce/solutions/ok_oneshot_pull.cu}
	mkdir -p "$1/candidates/001" "$1/replies/001"
	for ((k = 0; k < $2; k++)); do
		cp "$src" "$1/candidates/001/sample_$k.cu"
		echo '{}' > "$1/replies/001/sample_$k.json"
	done
	echo '{}' > "$1/replies/001/sample_$2.json"
}
