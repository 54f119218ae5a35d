/*
 * qemu-img, run with a time limit, a bounded capture of its error output,
 * a clean environment and resource limits.  stored's own seccomp policy
 * forbids fork and exec, so stored starts a helper before it loads that
 * policy and asks the helper over a socketpair; see qemuimg.c.
 */
#ifndef MCVM_STORED_QEMUIMG_H
#define MCVM_STORED_QEMUIMG_H

#include <sys/types.h>
#include <stddef.h>
#include <stdint.h>

#define QEMUIMG_PATH		"/usr/bin/qemu-img"
#define QEMUIMG_TIMEOUT_MS	(30 * 1000)	/* then SIGKILL */
#define QEMUIMG_OUTPUT_MAX	1024		/* stderr kept; rest dropped */
#define QEMUIMG_ARGV_MAX	16
#define QEMUIMG_AS_MAX		(2ULL << 30)	/* RLIMIT_AS */
#define QEMUIMG_FSIZE_MAX	(64ULL << 20)	/* RLIMIT_FSIZE: overlays */
#define QEMUIMG_NOFILE_MAX	64
#define QEMUIMG_CPU_SEC		(QEMUIMG_TIMEOUT_MS / 1000 + 1)
#define QEMUIMG_POLL_MS		10		/* while reaping */

int	 qemuimg_run(int, char *const [], char *, size_t);
int	 qemuimg_overlay(int, const char *, const char *, uint64_t, char *,
	    size_t);

pid_t	 qemuimg_helper_start(int *, void (*)(void));
struct imsgbuf;
int	 qemuimg_helper_overlay(struct imsgbuf *, int, const char *,
	    const char *, uint64_t, char *, size_t);

#endif
