/*
 * qemu-img, run as jobs: each with a time limit, a bounded capture of its
 * output, a clean environment and resource limits fit for its operation.
 * stored's own seccomp policy forbids fork and exec, so stored starts a
 * helper before it loads that policy; see qemuimg.c.
 */
#ifndef MCVM_STORED_QEMUIMG_H
#define MCVM_STORED_QEMUIMG_H

#include <sys/types.h>
#include <stddef.h>
#include <stdint.h>

#define QEMUIMG_PATH		"/usr/bin/qemu-img"
#define QEMUIMG_OUTPUT_MAX	1024		/* stderr kept; rest dropped */
#define QEMUIMG_STDOUT_MAX	(64 * 1024)	/* QEMUIMG_STDOUT: JSON */
#define QEMUIMG_ARGV_MAX	24
#define QEMUIMG_ARG_MAX		4096		/* one argument's bytes */
#define QEMUIMG_AS_MAX		(2ULL << 30)	/* RLIMIT_AS */
#define QEMUIMG_NOFILE_MAX	64
#define QEMUIMG_POLL_MS		10		/* while reaping */
#define QEMUIMG_JOBS_MAX	8		/* at once, in all */
#define QEMUIMG_XFD		3		/* qemu-img's extra fd */
#define QEMUIMG_XFD_PATH	"/proc/self/fd/3"

/* How long one job may run, and how large a file it may write. */
#define QEMUIMG_QUICK_MS	(30 * 1000)	/* create, info, snapshot */
#define QEMUIMG_LONG_MS		(30 * 60 * 1000) /* convert */
#define QEMUIMG_OVERLAY_FSIZE	(64ULL << 20)	/* a new overlay, metadata */

/* qemuimg_spec flags */
#define QEMUIMG_PROGRESS	0x1	/* stdout is -p's progress */
#define QEMUIMG_STDOUT		0x2	/* stdout kept: QEMUIMG_STDOUT_MAX */

struct qemuimg_spec {
	const char	*argv[QEMUIMG_ARGV_MAX + 1];	/* NULL-terminated */
	int		 dirfd;		/* its working directory; borrowed */
	int		 xfd;		/* -1, or its QEMUIMG_XFD; borrowed */
	uint32_t	 timeout_ms;
	uint64_t	 fsize_max;	/* RLIMIT_FSIZE */
	uint32_t	 flags;
};

/* How a job ended: status 0 when qemu-img exited 0, else an errno value
 * (ETIMEDOUT killed at its deadline, EIO it failed) and why in text. */
struct qemuimg_result {
	int		 status;
	const char	*text;
	const char	*out;		/* QEMUIMG_STDOUT, NUL-terminated */
	size_t		 outlen;
};

struct qemuimg_job;
typedef void	(*qemuimg_done_fn)(const struct qemuimg_result *, void *);
typedef void	(*qemuimg_progress_fn)(uint32_t, void *);	/* permille */

/* In stored. */
void		 qemuimg_init(int);
int		 qemuimg_start(const struct qemuimg_spec *, qemuimg_done_fn,
		    qemuimg_progress_fn, void *, struct qemuimg_job **,
		    char *, size_t);
void		 qemuimg_cancel(struct qemuimg_job *);
unsigned int	 qemuimg_running(void);
pid_t		 qemuimg_helper_start(int *, void (*)(void));

/* In a job, and for tests: runs one qemu-img to its end. */
int		 qemuimg_run(const struct qemuimg_spec *, int,
		    void (*)(uint32_t, void *), void *, char *, size_t,
		    char *, size_t *);
int		 qemuimg_argv_check(const char *const *);

#endif
