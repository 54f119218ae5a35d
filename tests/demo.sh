#!/bin/sh
# sudo make demo: the suite on 127.0.0.1:8090 in the foreground, with a
# demo workspace whose token is in a 0600 file.  Ctrl-C stops it.
set -eu
cd "$(dirname "$0")/.."

DEMO_DIR=${DEMO_DIR:-/var/lib/mcvm-demo}
DEMO_RUN=${DEMO_RUN:-/run/mcvm-demo}
DEMO_LISTEN=${DEMO_LISTEN:-127.0.0.1:8090}
TOKEN="$DEMO_DIR/demo.token"
CTL="build/mcvmctl -s $DEMO_RUN/control.sock"

[ "$(id -u)" -eq 0 ] || { echo "make demo needs root (sudo)" >&2; exit 1; }
mkdir -p "$DEMO_DIR"
chmod 0700 "$DEMO_DIR"

build/mcvmd -d -f etc/mcvm.dev.conf -D statedir="$DEMO_DIR/state" \
    -D rundir="$DEMO_RUN" -D listen="$DEMO_LISTEN" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid' INT TERM

i=0
until $CTL status >/dev/null 2>&1; do
	if ! kill -0 $pid 2>/dev/null || [ $i -ge 100 ]; then
		echo "mcvmd did not come up" >&2
		exit 1
	fi
	sleep 0.1
	i=$((i + 1))
done
# A fresh token each start; rotation revokes the last one.
rm -f "$TOKEN"
$CTL rotate-token --workspace demo --output "$TOKEN" --ttl 7d
$CTL status

cat <<EOM

mcvm is running on http://$DEMO_LISTEN (Ctrl-C stops it).
The demo workspace's token is in $TOKEN (mode 0600); it is not printed.

MCP (Streamable HTTP): http://$DEMO_LISTEN/mcp

  claude mcp add --transport http mcvm http://$DEMO_LISTEN/mcp \\
      --header "Authorization: Bearer \$(sudo cat $TOKEN)"

JSON HTTP API:

  curl -s -H "Authorization: Bearer \$(sudo cat $TOKEN)" \\
      http://$DEMO_LISTEN/v1/tools
  curl -s -H "Authorization: Bearer \$(sudo cat $TOKEN)" \\
      -H 'Content-Type: application/json' -d '{"request_id":"demo-1"}' \\
      http://$DEMO_LISTEN/v1/tools/vm_create
  curl -s -H "Authorization: Bearer \$(sudo cat $TOKEN)" \\
      -H 'Content-Type: application/json' -d '{}' \\
      http://$DEMO_LISTEN/v1/tools/vm_list

The image is verified a few seconds after start; until then vm_create
says so.

Operator commands: $CTL status | list-workspaces | issue-token ...
EOM
wait $pid
