PROGS += mcvm-stored
mcvm-stored_SRCS := stored/stored.c stored/sandbox.c
mcvm-stored_PKGS := libevent libseccomp libcap-ng

UNIT_EXTRA_SRCS += stored/sandbox.c
