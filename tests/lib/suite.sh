# Starts and stops a private mcvm suite for a test: its own state and run
# directories under a fresh temp dir, its own loopback port, etc/
# mcvm.dev.conf from the build tree.  Source it from the repository root.
#
#	suite_start [mcvmd args...]	sets SUITE_DIR SUITE_PID SUITE_PORT
#					SUITE_URL SUITE_SOCK MCVMCTL; the
#					state directory is SUITE_STATE if set;
#					if it does not come up, prints its log
#					and stops it
#	suite_token WS FILE [args]	issues a token into FILE
#	suite_child_pid NAME		pid of frontd, netd or stored
#	suite_wait_running		until every child reports running
#	suite_wait_image NAME		until stored verified the image
#	suite_log_bugs			mcvmd's log's bugs, if any
#	suite_stop			SIGTERM, wait, then clean up

SUITE_BUILD=${SUITE_BUILD:-build}
SUITE_TIMEOUT=${SUITE_TIMEOUT:-20}

# A port below the kernel's ephemeral range (ip_local_port_range), so that
# no outgoing connection takes it between this pick and frontd's bind, and
# one no socket uses in any state (a connected one blocks the bind too).
suite_free_port() {
	read -r _lo _hi </proc/sys/net/ipv4/ip_local_port_range
	[ "$_lo" -gt 12000 ] || _lo=32768
	_p=$(( 10000 + $$ % (_lo - 12000) ))
	while ss -Htan "sport = :$_p" | grep -q .; do
		_p=$((_p + 1))
	done
	echo "$_p"
}

suite_status() {
	$MCVMCTL status 2>/dev/null
}

suite_child_pid() {
	suite_status | awk -v n="$1" '$1 == n { print $3 }'
}

suite_wait_running() {
	_i=0
	while [ $_i -lt $((SUITE_TIMEOUT * 10)) ]; do
		if suite_status >/dev/null; then
			return 0
		fi
		if ! kill -0 "$SUITE_PID" 2>/dev/null; then
			echo "mcvmd exited; its log:" >&2
			cat "$SUITE_DIR/mcvmd.log" >&2
			return 1
		fi
		sleep 0.1
		_i=$((_i + 1))
	done
	echo "suite did not come up; its log:" >&2
	cat "$SUITE_DIR/mcvmd.log" >&2
	return 1
}

suite_start() {
	SUITE_DIR=$(mktemp -d /tmp/mcvm-test.XXXXXX)
	chmod 0755 "$SUITE_DIR"
	SUITE_PORT=$(suite_free_port)
	SUITE_URL="http://127.0.0.1:$SUITE_PORT"
	SUITE_SOCK="$SUITE_DIR/run/control.sock"
	MCVMCTL="$SUITE_BUILD/mcvmctl -s $SUITE_SOCK"
	"$SUITE_BUILD/mcvmd" -d -f etc/mcvm.dev.conf \
	    -D statedir="${SUITE_STATE:-$SUITE_DIR/state}" \
	    -D rundir="$SUITE_DIR/run" -D listen="127.0.0.1:$SUITE_PORT" "$@" \
	    >"$SUITE_DIR/mcvmd.log" 2>&1 &
	SUITE_PID=$!
	suite_wait_running && return 0
	suite_stop
	return 1
}

# The log of the last mcvmd started on SUITE_DIR (the log is appended to).
suite_last_log() {
	awk '/mcvmd\[[0-9]+\]: starting \(schema/ { buf = "" }
	    { buf = buf $0 "\n" } END { printf "%s", buf }' \
	    "$SUITE_DIR/mcvmd.log"
}

# Waits until stored has verified the catalog image NAME.
suite_wait_image() {
	_i=0
	while [ $_i -lt $((SUITE_TIMEOUT * 10)) ]; do
		suite_last_log | grep -q "image $1: verified" && return 0
		if suite_last_log | grep -q "image $1 refused"; then
			suite_last_log | grep "image $1 refused" >&2
			return 1
		fi
		sleep 0.1
		_i=$((_i + 1))
	done
	echo "image $1 was not verified in time" >&2
	return 1
}

suite_token() {
	_ws=$1
	_file=$2
	shift 2
	$MCVMCTL issue-token --workspace "$_ws" --output "$_file" "$@" \
	    >/dev/null
}

# What mcvmd's log (every mcvmd started on SUITE_DIR) holds of bugs: a
# sanitizer's report (leaks are reported at exit) or one mcvmd found in
# itself, such as a result its tool's output schema does not describe.
# Fails, printing them, if there are any.
suite_log_bugs() {
	if grep -qE 'Sanitizer|runtime error:|: bug: ' "$SUITE_DIR/mcvmd.log"
	then
		grep -E -A30 'Sanitizer|runtime error:|: bug: ' \
		    "$SUITE_DIR/mcvmd.log" | head -60
		return 1
	fi
	return 0
}

# Stops the suite and removes its directory.  Returns non-zero if mcvmd
# had to be killed or anything of it was left behind.
suite_stop() {
	_rc=0
	if kill -0 "$SUITE_PID" 2>/dev/null; then
		kill -TERM "$SUITE_PID"
		_i=0
		while kill -0 "$SUITE_PID" 2>/dev/null &&
		    [ $_i -lt $((SUITE_TIMEOUT * 10)) ]; do
			sleep 0.1
			_i=$((_i + 1))
		done
		if kill -0 "$SUITE_PID" 2>/dev/null; then
			echo "mcvmd did not stop; killing it" >&2
			kill -KILL "$SUITE_PID"
			_rc=1
		fi
	fi
	wait "$SUITE_PID" 2>/dev/null
	for _p in $(pgrep -f -- "$SUITE_DIR/"); do
		echo "left behind: $(tr '\0' ' ' </proc/$_p/cmdline)" >&2
		kill -KILL "$_p"
		_rc=1
	done
	rm -rf "$SUITE_DIR"
	return $_rc
}

# Fails the test MESSAGE and ends the suite, with DETAIL or else the end of
# mcvmd's log, which says why.
fail_now() {
	t_fail "$1" "${2:-$(suite_last_log 2>/dev/null | tail -n 30)}"
	t_done
	exit 1
}
