# The test network of tests/suites/network and tests/bench/network: three
# network namespaces made for one run and removed afterwards.  Nothing
# here touches the machine's own network namespace: every command runs
# inside a namespace named with the run's prefix.
#
#	$NET_HOST  the "host": mcvmd and its children run here (entered with
#		   nsenter --net, so that the cgroup mounts stay visible),
#		   IPv4 forwarding on, a web server on 0.0.0.0:8083 standing
#		   for the host's own services
#	  up0 198.51.100.2/30 (TEST-NET-2) <-- veth, the uplink -->
#	$NET_INET  the "internet": wan0 198.51.100.1/30, and on lo
#		   203.0.113.1 (TEST-NET-3, HTTP on port 80) and
#		   203.0.113.53 (the resolver named in the config); it
#		   routes the VM pool back to the host, so that an inbound
#		   connection to a guest reaches mcvm's rules
#	  pv0 10.99.0.1/24 (host) <-- veth -->
#	$NET_PRIV  a private host 10.99.0.2 and a "metadata" service
#		   169.254.169.254, both serving HTTP on port 80; the host
#		   routes to both, so only mcvm's rules keep a guest away
#
# The VM pool, 10.231.0.0/24, overlaps none of these.
#
#	net_up		makes it all; sets NET_* below; non-zero on failure
#	net_down	kills the servers, deletes the namespaces
#	net_in NS CMD	runs CMD in NS (net only; mounts stay)

NET_P=mcvmt$$
NET_HOST=$NET_P-host
NET_INET=$NET_P-inet
NET_PRIV=$NET_P-priv
NET_UPLINK=up0
NET_UPLINK_ADDR=198.51.100.2
NET_INET_ADDR=203.0.113.1
NET_RESOLVER=203.0.113.53
NET_PRIVATE=10.99.0.2
NET_HOST_PRIV_ADDR=10.99.0.1
NET_METADATA=169.254.169.254
NET_POOL=10.231.0.0/24
NET_HOST_PORT=8083
NET_PIDS=""
NET_T=""

net_in() {
	_ns=$1
	shift
	nsenter --net=/run/netns/"$_ns" "$@"
}

net_serve() {	# NS ADDR PORT: an HTTP server saying where it is
	mkdir -p "$NET_T/www-$2-$3"
	echo "hello from $2:$3" >"$NET_T/www-$2-$3/index.html"
	# nsenter itself, not a function's subshell: $! is the server's pid
	# (nsenter execs it), so net_down's kill reaches it.
	nsenter --net=/run/netns/"$1" python3 -m http.server -b "$2" \
	    -d "$NET_T/www-$2-$3" "$3" </dev/null >/dev/null \
	    2>"$NET_T/www-$2-$3.log" &
	NET_PIDS="$NET_PIDS $!"
}

net_wait_port() {	# NS ADDR PORT: until something listens there
	_i=0
	while [ $_i -lt 100 ]; do
		net_in "$1" python3 -c 'import socket, sys
socket.create_connection((sys.argv[1], int(sys.argv[2])), 1).close()' \
		    "$2" "$3" 2>/dev/null && return 0
		sleep 0.1
		_i=$((_i + 1))
	done
	echo "nothing listens on $2:$3 in $1" >&2
	return 1
}

net_up() {
	NET_T=$(mktemp -d /tmp/mcvm-net.XXXXXX) || return 1
	chmod 0755 "$NET_T"
	ip netns add $NET_HOST && ip netns add $NET_INET &&
	    ip netns add $NET_PRIV || return 1
	for _n in $NET_HOST $NET_INET $NET_PRIV; do
		net_in $_n ip link set lo up || return 1
	done
	# The uplink: host <-> internet.
	net_in $NET_HOST ip link add up0 type veth peer name wan0 \
	    netns $NET_INET &&
	net_in $NET_HOST ip addr add $NET_UPLINK_ADDR/30 dev up0 &&
	net_in $NET_HOST ip link set up0 up &&
	net_in $NET_HOST ip route add default via 198.51.100.1 &&
	net_in $NET_INET ip addr add 198.51.100.1/30 dev wan0 &&
	net_in $NET_INET ip link set wan0 up &&
	net_in $NET_INET ip addr add $NET_INET_ADDR/24 dev lo &&
	net_in $NET_INET ip addr add $NET_RESOLVER/32 dev lo &&
	net_in $NET_INET ip route add $NET_POOL via $NET_UPLINK_ADDR &&
	# The private network: host <-> private host.
	net_in $NET_HOST ip link add pv0 type veth peer name pv1 \
	    netns $NET_PRIV &&
	net_in $NET_HOST ip addr add $NET_HOST_PRIV_ADDR/24 dev pv0 &&
	net_in $NET_HOST ip link set pv0 up &&
	net_in $NET_HOST ip route add $NET_METADATA/32 via $NET_PRIVATE &&
	net_in $NET_PRIV ip addr add $NET_PRIVATE/24 dev pv1 &&
	net_in $NET_PRIV ip link set pv1 up &&
	net_in $NET_PRIV ip addr add $NET_METADATA/32 dev lo &&
	net_in $NET_PRIV ip route add default via $NET_HOST_PRIV_ADDR &&
	# Forwarding in the host test namespace only.
	net_in $NET_HOST sysctl -qw net.ipv4.ip_forward=1 || return 1
	net_serve $NET_INET $NET_INET_ADDR 80
	net_serve $NET_PRIV $NET_PRIVATE 80
	net_serve $NET_PRIV $NET_METADATA 80
	net_serve $NET_HOST 0.0.0.0 $NET_HOST_PORT
	net_wait_port $NET_INET $NET_INET_ADDR 80 &&
	net_wait_port $NET_PRIV $NET_PRIVATE 80 &&
	net_wait_port $NET_PRIV $NET_METADATA 80 &&
	net_wait_port $NET_HOST 127.0.0.1 $NET_HOST_PORT
}

net_down() {
	for _p in $NET_PIDS; do
		kill "$_p" 2>/dev/null
	done
	for _p in $NET_PIDS; do
		wait "$_p" 2>/dev/null
	done
	NET_PIDS=""
	for _n in $NET_PRIV $NET_INET $NET_HOST; do
		ip netns del "$_n" 2>/dev/null
	done
	[ -z "$NET_T" ] || rm -rf "$NET_T"
}

# What is left of mcvm in the test namespaces: links named mcvm*, nftables
# tables named mcvm_*, netns names other than ours.  Empty when clean.
net_leftovers() {
	for _n in $NET_HOST $NET_INET $NET_PRIV; do
		net_in $_n ip -o link show 2>/dev/null |
		    awk -F': ' -v n=$_n '$2 ~ /^mcvm/ { print n ": link " $2 }'
	done
	net_in $NET_HOST nft list tables 2>/dev/null |
	    awk -v n=$NET_HOST '$3 ~ /^mcvm_/ { print n ": " $0 }'
	# VM netns have no names; a named one would be a leak.  Other
	# runs' test namespaces (mcvmt<pid>-*, mcvmb<pid>) are not mcvm's.
	ip netns list | awk '$1 ~ /^mcvm/ && $1 !~ /^mcvm[tb][0-9]+(-|$)/ {
	    print "netns " $1 }'
}
