PROGS += mcvm-netd
mcvm-netd_SRCS := netd/netd.c netd/sandbox.c netd/addr.c netd/rules.c \
	netd/links.c netd/forward.c
mcvm-netd_PKGS := libevent libseccomp libcap-ng libnl-3.0 libnl-route-3.0 \
	libnftables

UNIT_EXTRA_SRCS += netd/sandbox.c netd/addr.c netd/rules.c

# Plays mcvmd to the real binary for tests/suites/netd.
TESTPROGS += netd-driver
netd-driver_SRCS := tests/netd/driver.c tests/lib/peer.c
netd-driver_PKGS := libevent
