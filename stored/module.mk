PROGS += mcvm-stored
mcvm-stored_SRCS := stored/stored.c stored/sandbox.c stored/catalog.c \
	stored/disk.c stored/qemuimg.c stored/images.c stored/reply.c \
	stored/vmdisks.c
mcvm-stored_PKGS := libevent libseccomp libcap-ng libcrypto jansson

UNIT_EXTRA_SRCS += stored/sandbox.c stored/catalog.c stored/disk.c \
	stored/qemuimg.c stored/images.c stored/reply.c stored/vmdisks.c

# Plays mcvmd to the real binary for tests/suites/stored.
TESTPROGS += stored-driver
stored-driver_SRCS := tests/stored/driver.c tests/lib/peer.c
stored-driver_PKGS := libevent libcrypto
