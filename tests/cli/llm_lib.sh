# tests/cli/llm_lib.sh -- the loopback model of the generate and agent tests:
# start_server ACTION... runs llm_server.py with this script (one action per
# request; $PORT its port, $TMP/log its request log), stop_server ends it.
# Source after lib.sh; the EXIT trap stops the server and removes $TMP.
SRV_PID=
start_server() {
	stop_server
	rm -f "$TMP/port" "$TMP/log"
	printf '%s\n' "$@" >"$TMP/script"
	python3 "$ROOT/tests/cli/llm_server.py" "$TMP/port" "$TMP/script" "$TMP/log" &
	SRV_PID=$!
	for _ in $(seq 100); do [ -s "$TMP/port" ] && break; sleep 0.05; done
	PORT=$(cat "$TMP/port")
	touch "$TMP/log"
}
stop_server() {
	if [ -n "$SRV_PID" ]; then kill "$SRV_PID" 2>/dev/null; wait "$SRV_PID" 2>/dev/null; fi
	SRV_PID=
}
trap 'stop_server; [ -n "${KEEP:-}" ] && cp -r "$TMP" "$KEEP"; rm -rf "$TMP"' EXIT
