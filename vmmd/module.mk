PROGS += mcvmd
mcvmd_SRCS := vmmd/mcvmd.c vmmd/control.c vmmd/state.c vmmd/schema.c \
	vmmd/front.c
mcvmd_PKGS := libevent sqlite3 libcap-ng libseccomp libcrypto

UNIT_EXTRA_SRCS += vmmd/schema.c
