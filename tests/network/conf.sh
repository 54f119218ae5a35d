# The config of a suite run inside the test network (tests/network/
# netns.sh): the dev config and a netd block for that network.  Sourced
# by the scripts that run in its "host" namespace, from the repository
# root, with NET_UPLINK, NET_POOL and NET_RESOLVER exported.
#
#	net_suite_conf FILE	writes it to FILE

net_suite_conf() {
	cat >"$1" <<CONF
include "$PWD/etc/mcvm.dev.conf"
netd {
	uplink "$NET_UPLINK"
	pool "$NET_POOL"
	resolver "$NET_RESOLVER"
}
CONF
}
