/*
 * mcvm-guestd: PID 1 in the guest.  One thread, one poll(2) loop over the
 * agent port, the job pipes and a signalfd.
 */
#ifndef MCVM_GUESTD_H
#define MCVM_GUESTD_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "agent_proto.h"
#include "outbuf.h"

#define GUESTD_VERSION		"0.1.0"
#define GUESTD_CGROUP_ROOT	"/sys/fs/cgroup"
#define GUESTD_JOBS_CGROUP	GUESTD_CGROUP_ROOT "/mcvm-jobs"
#define GUESTD_HOSTNAME		"mcvm"
#define GUESTD_LOG_MAX		512	/* one kmsg line */
#define GUESTD_FREEZE_WAIT_MS	2000	/* for cgroup.events "frozen 1" */
#define GUESTD_POLL_STEP_MS	5	/* while waiting on the kernel */
#define GUESTD_PORT_RETRY_MS	100	/* after the host side hung up */
#define GUESTD_READ_CHUNK	65536	/* one read from a job pipe */
#define GUESTD_FLUSH_WAIT_MS	1000	/* last replies before poweroff */
#define GUESTD_POLLFDS_MAX	(2 + AGENT_JOBS_TOTAL_MAX * 3)
#define GUESTD_WAITS_MAX	16	/* JOB_READs waiting for their job */

/* main.c */
void	 glog(const char *, ...) __attribute__((format(printf, 1, 2)));
uint64_t now_ms(void);
void	 guest_info(struct agent_msg *);
void	 guest_poweroff(void) __attribute__((noreturn));
extern int	 ws_root;

/* channel.c */
int	 chan_open(void);
int	 chan_pollfd(struct pollfd *, uint64_t);
void	 chan_event(short, uint64_t);
int	 chan_poweroff_pending(void);
uint64_t chan_retry_at(void);
void	 chan_flush(int);
int	 chan_hold(void);
int	 chan_waits(uint64_t);

/* jobs.c */
struct job;
int	 jobs_init(void);
int	 job_start(const struct agent_msg *, uint32_t *, char *, size_t);
struct job *job_find(uint32_t);
void	 job_status(const struct job *, struct agent_job_status *, uint64_t);
size_t	 job_page(const struct job *, int, uint64_t, size_t,
	    const uint8_t **);
int	 job_cancel(struct job *);
void	 jobs_reap(void);
void	 jobs_tidy(void);
size_t	 jobs_pollfds(struct pollfd *, size_t, struct job **, int *);
void	 jobs_event(struct job *, int, short);
int	 jobs_timeout(uint64_t);
int	 jobs_freeze(uint32_t *);
int	 jobs_thaw(uint64_t);
int	 jobs_frozen(void);
uint32_t jobs_active(void);
uint32_t jobs_total(void);
void	 jobs_kill_all(void);

#endif
