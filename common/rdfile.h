/*
 * Reading a small file (procfs, sysfs, cgroupfs) whole, in the host's
 * daemons and in the guest agent alike: libc only.
 */
#ifndef MCVM_RDFILE_H
#define MCVM_RDFILE_H

#include <sys/types.h>

#include <stddef.h>

ssize_t	 read_small_file(const char *, char *, size_t);

#endif
