# The network suite proper, run by tests/suites/network inside the host
# test namespace (see tests/network/netns.sh for the NET_* variables):
#  - the MCP SDK client suite, tests/node/net;
#  - netd killed under a VM with networking, then mcvmd killed and started
#    again: nothing stale is left (links, nftables tables, listeners).
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/t.sh
. tests/lib/suite.sh
. tests/network/conf.sh

fail_now() {
	t_fail "$1" "${2:-}"
	t_done
	exit 1
}

api() {	# api TOKEN_FILE TOOL JSON
	curl -s -H "Authorization: Bearer $(cat "$1")" \
	    -H 'Content-Type: application/json' -d "$3" \
	    "$SUITE_URL/v1/tools/$2"
}

jget() {	# jget JSON KEY
	printf '%s' "$1" | python3 -c 'import json, sys
d = json.load(sys.stdin)
for k in sys.argv[1].split("."):
    d = d[int(k)] if isinstance(d, list) else d[k]
print(d)' "$2"
}

mcvm_links() { ip -o link show | awk -F': ' '$2 ~ /^mcvm/ { print $2 }'; }
mcvm_tables() { nft list tables | awk '$3 ~ /^mcvm_/ { print $3 }'; }
listening() { ss -Hltn "sport = :$1" | awk '{ print $4 }'; }
templates_settled() {	# until no template (with its network) is being made
	_i=0
	while $MCVMCTL status 2>/dev/null |
	    grep -q '^template[ 0-9]*: .*being made' &&
	    [ $_i -lt 1200 ]; do
		sleep 0.1
		_i=$((_i + 1))
	done
}
warm_settled() {	# until no warm clone is being made
	_i=0
	while $MCVMCTL status 2>/dev/null | grep -q '^warm clone: .*being made' &&
	    [ $_i -lt 300 ]; do
		sleep 0.1
		_i=$((_i + 1))
	done
}
but_warm() {	# stdin without the links and tables of warm clones' slots
	_s=$($MCVMCTL status 2>/dev/null | sed -n \
	    's/^warm clone: vm-[0-9a-f]* of .*, slot \([0-9]*\), .*/\1/p' |
	    tr '\n' '|' | sed 's/|$//')
	if [ -z "$_s" ]; then cat; return; fi
	grep -v -E "^mcvm_?($_s)[a-z]?(@.*)?\$"
}
nothing_left() {	# LABEL: but warm clones', which are mcvmd's own
	templates_settled
	warm_settled
	t_expect "$1: no mcvm link in the host namespace but warm clones'" "" \
	    "$(mcvm_links | but_warm)"
	t_expect "$1: no mcvm nftables table but warm clones'" "" \
	    "$(mcvm_tables | but_warm)"
}

# The suite's config: the dev config and a netd block for the test network.
conf="$NET_T/mcvm-net.conf"
net_suite_conf "$conf"
# MCVM_NET_LOGS=DIR keeps mcvmd's log and the node TAP output there.
keep_logs() {
	[ -n "${MCVM_NET_LOGS:-}" ] && [ -d "${SUITE_DIR:-}" ] || return 0
	mkdir -p "$MCVM_NET_LOGS"
	cp "$SUITE_DIR/mcvmd.log" "$SUITE_DIR/node.tap" "$MCVM_NET_LOGS/" \
	    2>/dev/null
	return 0
}
suite_start -f "$conf" || fail_now "suite starts"
trap 'keep_logs; suite_stop' EXIT
suite_wait_image debian || fail_now "the image is verified"
t_match "netd's preflight is happy" "network ready: uplink $NET_UPLINK" \
    "$(cat "$SUITE_DIR/mcvmd.log")"
suite_token netws "$SUITE_DIR/net.tok" --allow-network || fail_now "token"
suite_token nonet "$SUITE_DIR/nonet.tok" || fail_now "token"

# A free port in this namespace for the explicit port forward.
fwd=$(suite_free_port)

# --- the MCP SDK client suite --------------------------------------------------

log="$SUITE_DIR/node.tap"
ctl="$(cd "$SUITE_BUILD" && pwd)/mcvmctl -s $SUITE_SOCK"
(
	cd tests/node &&
	MCVM_URL="$SUITE_URL" MCVM_TOKEN_FILE="$SUITE_DIR/net.tok" \
	MCVM_TOKEN_NONET_FILE="$SUITE_DIR/nonet.tok" \
	MCVM_NET_FWD_PORT=$fwd MCVM_SUITE_PORT=$SUITE_PORT \
	    MCVM_CTL="$ctl" \
	node --test --test-reporter=tap --test-timeout=900000 net/
) >"$log" 2>&1
grep -E '^ *(ok|not ok) ' "$log" | sed 's/^ *//'
grep -B2 -A30 '^ *not ok' "$log" | head -150
p=$(awk '/^# pass/ { print $3 }' "$log")
f=$(awk '/^# fail/ { print $3 }' "$log")
T_PASSED=$((T_PASSED + ${p:-0}))
T_FAILED=$((T_FAILED + ${f:-1}))
nothing_left "after the SDK suite"

# --- netd killed, then mcvmd killed and started again --------------------------

r=$(api "$SUITE_DIR/net.tok" vm_create \
    '{"request_id":"kill-1","network":"on","port_forwards":["auto:8000"]}')
vm=$(jget "$r" vm_id 2>/dev/null)
hp=$(jget "$r" port_forwards.0.host_port 2>/dev/null)
if [ -z "$vm" ] || [ -z "$hp" ]; then
	t_fail "a VM with networking for the restart tests" "$r"
	t_done
	exit 1
fi
t_match "its host link exists" '^mcvm[0-9]+h' "$(mcvm_links)"
t_match "its nftables table exists" '^mcvm_[0-9]+$' "$(mcvm_tables)"
t_expect "its forward listens on 127.0.0.1" "127.0.0.1:$hp" \
    "$(listening "$hp")"
netd=$(suite_child_pid netd)
kill -KILL "$netd"
i=0
while [ $i -lt 100 ]; do
	n=$(suite_child_pid netd)
	[ -n "$n" ] && [ "$n" != "$netd" ] && break
	sleep 0.1
	i=$((i + 1))
done
t_check "mcvmd restarts the killed netd" test -n "$n" -a "$n" != "$netd"
sleep 1		# mcvmd's LIST to the new netd and what follows
st=$(jget "$(api "$SUITE_DIR/net.tok" vm_status "{\"vm_id\":\"$vm\"}")" \
    state 2>/dev/null)
echo "# after netd's restart: VM $st; links:" $(mcvm_links) "; tables:" \
    $(mcvm_tables) "; forward:" "$(listening "$hp")"
# The forward's listener lived in the old netd: a VM still reported as
# running with that forward must have it back, or be failed.
if [ "$st" = failed ] || [ "$(listening "$hp")" = "127.0.0.1:$hp" ]; then
	t_pass "after netd's restart the VM's forward works, or the VM failed"
else
	t_fail "after netd's restart the VM's forward works, or the VM failed" \
	    "VM $st; nothing listens on port $hp any more"
fi

qemu=$(pgrep -f "guest=$vm")
kill -KILL "$SUITE_PID"
wait "$SUITE_PID" 2>/dev/null
sleep 1
"$SUITE_BUILD/mcvmd" -d -f etc/mcvm.dev.conf -f "$conf" \
    -D statedir="$SUITE_DIR/state" -D rundir="$SUITE_DIR/run" \
    -D listen="127.0.0.1:$SUITE_PORT" >>"$SUITE_DIR/mcvmd.log" 2>&1 &
SUITE_PID=$!
suite_wait_running || fail_now "mcvmd starts again"
suite_wait_image debian || fail_now "the image is verified again"
i=0
while [ -n "$qemu" ] && kill -0 "$qemu" 2>/dev/null && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
sleep 1		# netd's LIST and its teardowns
st=$(api "$SUITE_DIR/net.tok" vm_status "{\"vm_id\":\"$vm\"}")
t_expect "the VM is failed after the restart" failed \
    "$(jget "$st" state 2>/dev/null)"
nothing_left "after the restart"
t_expect "after the restart: no forward listener" "" "$(listening "$hp")"
r=$(api "$SUITE_DIR/net.tok" vm_destroy "{\"vm_id\":\"$vm\"}")
t_expect "the failed VM is destroyed" True "$(jget "$r" destroyed 2>/dev/null)"
nothing_left "after its destroy"

# A VM with networking works after all that.
r=$(api "$SUITE_DIR/net.tok" vm_create '{"request_id":"after-1","network":"on"}')
vm=$(jget "$r" vm_id 2>/dev/null)
t_match "a new VM with networking after the restart" '^10\.231\.0\.' \
    "$(jget "$r" address 2>/dev/null)"
[ -z "$vm" ] ||
    api "$SUITE_DIR/net.tok" vm_destroy "{\"vm_id\":\"$vm\"}" >/dev/null
nothing_left "at the end"
t_check "no sanitizer report or bug in mcvmd's log" suite_log_bugs
keep_logs
tail=$(tail -n 20 "$SUITE_DIR/mcvmd.log")
if ! suite_stop; then
	t_fail "the suite stops cleanly" "$tail"
fi
trap - EXIT
t_done
