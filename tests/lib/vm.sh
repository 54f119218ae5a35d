# Helpers for shell suites that drive VMs over /v1 with curl.  Source it
# after suite.sh.

# api TOKEN_FILE TOOL JSON [curl args...]: the tool's JSON answer.
api() {
	_tok=$1
	_tool=$2
	_json=$3
	shift 3
	curl -s -H "Authorization: Bearer $(cat "$_tok")" \
	    -H 'Content-Type: application/json' -d "$_json" "$@" \
	    "$SUITE_URL/v1/tools/$_tool"
}

# jget JSON KEY[.KEY...]: one value of a JSON document; a KEY of a list
# is an index.
jget() {
	printf '%s' "$1" | python3 -c 'import json, sys
d = json.load(sys.stdin)
for k in sys.argv[1].split("."):
    d = d[int(k)] if isinstance(d, list) else d[k]
print(d)' "$2"
}

# alive PID: running, not a zombie waiting for its reaper.
alive() {
	_s=$(awk '/^State:/ { print $2 }' /proc/$1/status 2>/dev/null)
	[ -n "$_s" ] && [ "$_s" != Z ]
}
