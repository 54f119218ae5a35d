# tests/bench/network's part inside the host test namespace: a suite with
# the test network's netd block, and the node benchmark against it.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/suite.sh
. tests/network/conf.sh
conf="$NET_T/mcvm-net.conf"
net_suite_conf "$conf"
suite_start -f "$conf" || exit 1
trap 'suite_stop' EXIT
suite_wait_image debian || exit 1
suite_token bench "$SUITE_DIR/bench.tok" --allow-network || exit 1
ctl="$(cd "$SUITE_BUILD" && pwd)/mcvmctl -s $SUITE_SOCK"
(cd tests/node && MCVM_URL="$SUITE_URL" MCVM_CTL="$ctl" \
    MCVM_TOKEN_FILE="$SUITE_DIR/bench.tok" node net/net-bench.mjs)
