/*
 * mcvm-guestd: PID 1 in the guest.  One thread, one poll(2) loop over the
 * agent port, the job pipes and a signalfd.
 */
#ifndef MCVM_GUESTD_H
#define MCVM_GUESTD_H

#include <sys/types.h>

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "agent_proto.h"
#include "outbuf.h"

#define GUESTD_VERSION		"0.1.0"
#define GUESTD_CGROUP_ROOT	"/sys/fs/cgroup"
#define GUESTD_JOBS_CGROUP	GUESTD_CGROUP_ROOT "/mcvm-jobs"
#define GUESTD_CONSOLE_CGROUP	GUESTD_JOBS_CGROUP "/console"	/* tty1's */
#define GUESTD_SPARE_CGROUP	GUESTD_JOBS_CGROUP "/spare"	/* jobs.c */
#define GUESTD_HOSTNAME		"mcvm"
/* Where the VM's identity lives, a tmpfs (guest_set_identity). */
#define GUESTD_IDENTITY_DIR	"/run/mcvm"
/* Its hosts file, for a host name. */
#define GUESTD_HOSTS		"127.0.0.1\tlocalhost\n127.0.1.1\t%s\n" \
				"::1\tlocalhost\n"
#define GUESTD_LOG_MAX		512	/* one kmsg line */
#define GUESTD_FREEZE_WAIT_MS	2000	/* for cgroup.events "frozen 1" */
#define GUESTD_POLL_STEP_MS	5	/* while waiting on the kernel */
#define GUESTD_PORT_RETRY_MS	100	/* after the host side hung up */
#define GUESTD_READ_CHUNK	65536	/* one read from a job pipe */
#define GUESTD_FLUSH_WAIT_MS	1000	/* last replies before poweroff */
#define GUESTD_POLLFDS_MAX	(2 + AGENT_JOBS_TOTAL_MAX * 3)
#define GUESTD_WAITS_MAX	16	/* JOB_READs waiting for their job */
#define GUESTD_CGROUP_LEN	128	/* a job's cgroup path */
#define GUESTD_SPARE_SETTLE_MS	5000	/* a template waits for its spare */

/* Job limits (jobproc.c); the kernel command line may change them. */
#define GUESTD_JOB_PIDS_MAX	4096	/* pids.max of each job */
#define GUESTD_JOB_PIDS_LIMIT	65536	/* the most mcvm.job_pids_max */
#define GUESTD_PID_MAX		4194304	/* kernel.pid_max */
#define GUESTD_AGENT_TASKS	4096	/* kernel.threads-max beyond jobs' */
#define GUESTD_AGENT_RESERVE_MIN (64ULL << 20)	/* memory kept from jobs */
#define GUESTD_AGENT_RESERVE_DIV 8	/* or 1/8 of it, if more */

/* main.c */
/* The workspace user's environment, for jobs and the console (with TERM). */
#define GUESTD_ENV_USER							\
	"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" AGENT_WORKSPACE,	\
	"USER=user", "LOGNAME=user", "SHELL=/bin/bash", "LANG=C.UTF-8"

void	 glog(const char *, ...) __attribute__((format(printf, 1, 2)));
uint64_t now_ms(void);
void	 guest_info(struct agent_msg *);
void	 guest_poweroff(void) __attribute__((noreturn));
int	 guest_set_time(int64_t, uint32_t);
int	 guest_seed(const uint8_t *);
int	 guest_set_identity(const char *, const char *);
int	 guest_net_config(const struct agent_msg *, char *, size_t);
int	 cmdline_value(const char *, char *, size_t);
extern int	 ws_root;

/* gtext.c */
size_t	 gtext_cut(const char *, size_t);
void	 gtext_fit(char *);

/* channel.c: requests and replies */
void	 chan_reset(void);
size_t	 chan_in_room(uint8_t **);
void	 chan_input(size_t, uint64_t);
void	 chan_resume(uint64_t);
size_t	 chan_out(const uint8_t **);
void	 chan_out_done(size_t);
int	 chan_in_pending(void);
int	 chan_waits(uint64_t, int *);
int	 chan_poweroff_pending(void);

/* port.c: the agent port */
int	 port_open(void);
int	 port_pollfd(struct pollfd *, uint64_t);
void	 port_event(short, uint64_t);
uint64_t port_retry_at_ms(void);
void	 port_send(uint64_t);
void	 port_flush(int);
int	 port_hold(void);

/* jobproc.c: the processes and cgroups behind the jobs */
struct child_args {
	char		 procs[GUESTD_CGROUP_LEN + 32];	/* its cgroup.procs */
	int		 pin, pout, perr, cwdfd;
	int		 ctty;	/* pin is a terminal to make its own */
	const char	*file;	/* what to execute; NULL: argv[0] */
	char		**argv;
	int		 cmdfd;	/* made its fd 3 if not -1 (--command-fd) */
	int		 err;	/* errno if it could not exec */
};
int	 jobproc_init(void);
int	 jobproc_cgroup_make(const char *);
int	 jobproc_cgroup_remove(const char *);
int	 jobproc_cgroup_busy(const char *);
int	 jobproc_cgroup_move(const char *, pid_t);
size_t	 jobproc_note(const char *, char *, size_t);
void	 jobproc_kill(pid_t, const char *, int);
pid_t	 jobproc_spawn(struct child_args *, char **);
int	 jobproc_freeze(int);
void	 jobs_reap(void);

/* console.c: tty1's shell, and the devices the workspace user gets */
void	 console_devices(void);
void	 console_init(void);
int	 console_timeout(uint64_t);
int	 console_reaped(pid_t, int);

/* jobs.c: the job table */
struct job;
int	 job_start(const struct agent_msg *, uint32_t *, char *, size_t);
struct job *job_find(uint32_t);
int	 job_expired(uint32_t);
void	 job_reaped(pid_t, int);
void	 job_status(const struct job *, struct agent_job_status *, uint64_t);
size_t	 job_page(const struct job *, int, uint64_t, size_t, uint8_t *,
	    uint64_t *);
int	 job_cancel(struct job *);
void	 jobs_tidy(void);
void	 jobs_release(void);
void	 jobs_spare_settle(uint32_t);
size_t	 jobs_pollfds(struct pollfd *, size_t, struct job **, int *);
void	 jobs_event(struct job *, int, short);
int	 jobs_timeout(uint64_t);
int	 jobs_freeze(uint32_t *);
int	 jobs_thaw(uint64_t);
int	 jobs_frozen(void);
uint32_t jobs_active(void);
uint32_t jobs_busy(void);
uint32_t jobs_total(void);
uint32_t jobs_states(uint8_t *);
void	 jobs_kill_all(void);

#endif
