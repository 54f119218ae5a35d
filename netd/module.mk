PROGS += mcvm-netd
mcvm-netd_SRCS := netd/netd.c netd/sandbox.c
mcvm-netd_PKGS := libevent libseccomp libcap-ng

UNIT_EXTRA_SRCS += netd/sandbox.c
