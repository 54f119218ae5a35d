# tests/bench/network's part inside the host test namespace: a suite with
# the test network's netd block, and the node benchmark against it, twice:
# without warm clones, for what network setup adds to vm_create, then with
# them (the default), for creations that take one.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/suite.sh
. tests/network/conf.sh
conf="$NET_T/mcvm-net.conf"
trap 'suite_stop' EXIT
for part in setup warm; do
	net_suite_conf "$conf"
	[ $part = setup ] && echo "warm 0" >>"$conf"
	suite_start -f "$conf" || exit 1
	suite_wait_image debian || exit 1
	suite_token bench "$SUITE_DIR/bench.tok" --allow-network || exit 1
	ctl="$(cd "$SUITE_BUILD" && pwd)/mcvmctl -s $SUITE_SOCK"
	(cd tests/node && MCVM_URL="$SUITE_URL" MCVM_CTL="$ctl" \
	    MCVM_NET_BENCH_PART=$part MCVM_TOKEN_FILE="$SUITE_DIR/bench.tok" \
	    node net/net-bench.mjs) || exit 1
	suite_stop
done
