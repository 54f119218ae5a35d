# Networking end to end (tests/suites/network) and the cost of network
# setup in vm_create (tests/bench/network), in test network namespaces.
E2E_SUITES += network
BENCH_SUITES += network
