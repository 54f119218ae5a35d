# Minimal test helpers for shell suites.  Source it, call t_ok/t_fail/
# t_check, and end with t_done, which prints "N passed, N failed".
T_PASSED=0
T_FAILED=0

t_pass() {
	T_PASSED=$((T_PASSED + 1))
	echo "ok - $1"
}

t_fail() {
	T_FAILED=$((T_FAILED + 1))
	echo "not ok - $1"
	[ -z "${2:-}" ] || printf '%s\n' "$2" | sed 's/^/#   /'
}

# t_check NAME COMMAND...: passes when the command succeeds; returns
# whether it did.
t_check() {
	_name=$1
	shift
	if _out=$("$@" 2>&1); then
		t_pass "$_name"
	else
		t_fail "$_name" "$_out"
		return 1
	fi
}

# t_expect NAME WANT GOT
t_expect() {
	if [ "$2" = "$3" ]; then
		t_pass "$1"
	else
		t_fail "$1" "want: $2
got:  $3"
	fi
}

# t_match NAME PATTERN TEXT: the text has a line matching the ERE.
t_match() {
	if printf '%s\n' "$3" | grep -Eq -- "$2"; then
		t_pass "$1"
	else
		t_fail "$1" "no line matches /$2/ in:
$3"
	fi
}

t_done() {
	echo "$T_PASSED passed, $T_FAILED failed"
	[ "$T_FAILED" -eq 0 ]
}
