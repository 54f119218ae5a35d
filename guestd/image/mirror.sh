# host_mirror: the host's Debian mirror for $SUITE, from deb822 or
# one-line apt sources (sourced by build.sh and tests/image-qga/build.sh).
host_mirror() {
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -r "$f" ] || continue
		awk '/^URIs:/ { u = $2 } /^Suites:/ && u != "" &&
		    / '"$SUITE"'( |$)/ && u !~ /security/ {
		    print u; exit }' "$f"
	done | head -n 1
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -r "$f" ] || continue
		awk '$1 == "deb" && $0 ~ / '"$SUITE"' / && $0 !~ /security/ {
		    for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {
		    print $i; exit } }' "$f"
	done | head -n 1
}
