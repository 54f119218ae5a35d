PROGS += mcvmctl
mcvmctl_SRCS := ctl/mcvmctl.c
mcvmctl_PKGS := libcap-ng libcrypto
