/*
 * mcvmd: the root parent and controller.
 */
#ifndef MCVMD_H
#define MCVMD_H

#include <sys/types.h>
#include <stdint.h>

#include "config.h"
#include "hash.h"
#include "msg_ctl.h"
#include "proc.h"
#include "proto.h"
#include "validate.h"

#define CHILD_RESTART_MAX	5	/* restarts within the window ... */
#define CHILD_RESTART_WINDOW	60	/* ... seconds, before giving up */
#define CHILD_STOP_TIMEOUT	5	/* seconds between SIGTERM and SIGKILL */
#define CHILD_BACKOFF_MIN	1	/* frontd past the limit: a pause of */
#define CHILD_BACKOFF_MAX	60	/* 1 s, doubling up to 60 s */
#define CONTROL_MAX_CLIENTS	16

enum child_state {
	CHILD_DOWN = 0,
	CHILD_STARTING,		/* forked, no HELLO yet */
	CHILD_RUNNING,
};

struct child {
	const struct proc_desc	*desc;
	pid_t			 pid;
	enum child_state	 state;
	struct imsgev		 iev;
	int			 iev_live;
	uint32_t		 gen;		/* counts starts, from 1 */
	unsigned int		 restarts;
	time_t			 restart_times[CHILD_RESTART_MAX];
	unsigned int		 backoff;	/* pauses in a row */
	struct event		 restart_ev;	/* the restart's turn */
};

struct mcvmd {
	struct mcvm_config	 conf;
	struct proc_opts	 opts;
	char			 bindir[PATH_MAX];
	char			 emptydir[PATH_MAX];
	struct child		 children[PROC_MAX];
	pid_t			 pid;		/* mcvmd's, not a fork's */
	int			 shutting_down;
};

extern struct mcvmd	*env;

/* mcvmd.c */
#define CHILD_ARGV_MAX	(16 + 2 * 32)	/* -D macros, flags, extras */
struct child	*child_by_id(enum proc_id);
void		 child_path(const struct child *, char *, size_t);
void		 child_start(struct child *);
void		 mcvmd_reap(void);
void		 mcvmd_shutdown(int) __attribute__((__noreturn__));
int		 child_argv(const char *, char **);
extern char *const child_envp[];

/* control.c */
#define CONTROL_MSG_MAX		512	/* an answer's text */

/* A control client's request answered later (control.c). */
struct ctl_ticket {
	uint64_t	 serial;	/* its connection's; 0: none */
	uint32_t	 conn;
	uint32_t	 peerid;
};

int	 control_init(const struct mcvm_config *);
void	 control_settle(struct ctl_ticket *, int, const char *);
void	 control_listen(void);
void	 control_cleanup(const struct mcvm_config *);

/* state.c */
/* What a checkpoint was made with: QEMU's SHA-256, the VM's devices. */
#define VM_PROFILE_MAX	192

struct ws_auth {
	enum auth_status status;
	int64_t		 id;
	char		 name[WS_NAME_MAX + 1];
	uint32_t	 flags;
	int64_t		 expires;	/* the token's end, epoch s; 0 none */
};

struct ws_entry {
	int64_t		 id;
	char		 name[WS_NAME_MAX + 1];
	uint32_t	 flags;
	int64_t		 created;
	int64_t		 revoked;	/* 0 = live */
	uint32_t	 live_tokens;
	int64_t		 next_expiry;	/* 0 = none */
};

int	 state_open(const char *);
void	 state_close(void);
int	 state_schema_version(void);
struct sqlite3	*state_db(void);
int	 state_token_auth(const uint8_t [TOKEN_HASH_LEN], struct ws_auth *);
int	 state_token_issue(const char *, const uint8_t [TOKEN_HASH_LEN],
	    uint64_t, uint32_t, int, uid_t, char *, size_t);
int	 state_ws_revoke(const char *, uid_t, char *, size_t);
int	 state_ws_list(int (*)(const struct ws_entry *, void *), void *);
int	 state_ws_quota(int64_t, struct limits *);
int	 state_ws_quota_set(const char *, uint32_t, const struct limits *,
	    uid_t, char *, size_t);
int	 state_audit(const char *, const char *, const char *);

struct vm_row {
	char		 id[ID_MAX + 1];
	int64_t		 ws_id;
	char		 ws[WS_NAME_MAX + 1];
	char		 name[OBJ_NAME_MAX + 1];
	char		 state[16];
	char		 intent[16];
	uint32_t	 slot;
	uint32_t	 uid;
	uint32_t	 memory_mib;
	uint32_t	 vcpus;
	uint32_t	 network;
	char		 image[OBJ_NAME_MAX + 1];
	int64_t		 created;
	char		 reason[256];
	uint32_t	 idle_seconds;
	uint32_t	 idle_mode;
	uint64_t	 disk_bytes;
	uint32_t	 display;	/* 1: VGA, keyboard, tablet, mouse */
	/* A VM from its workspace's own disks: disks is not "". */
	char		 disks[VM_DISKS_MAX * (OBJ_NAME_MAX + 1)];
					/* image names, joined by ',' */
	char		 iso[OBJ_NAME_MAX + 1];	/* install CD, or "" */
	uint32_t	 firmware;	/* enum vm_firmware */
	uint32_t	 machine;	/* enum vm_machine */
	uint32_t	 persistent;	/* 1: the images are its disks */
	int64_t		 updated;	/* its state's last change */
	uint64_t	 checkpoint_bytes;	/* hibernated: its checkpoint */
	char		 checkpoint_profile[VM_PROFILE_MAX];
	uint32_t	 install;	/* enum vm_install */
	/* A VM the operator attached: attach_qmp is not "". */
	char		 attach_qmp[CTL_SOCK_PATH_MAX + 1];
	char		 attach_qga[CTL_SOCK_PATH_MAX + 1];	/* or "" */
	uint32_t	 attach_pid;
};

/* Where a VM with an install CD is. */
enum vm_install {
	VM_INSTALL_NONE = 0,	/* no CD */
	VM_INSTALL_PENDING,	/* it boots the CD (first) */
	VM_INSTALL_DONE,	/* the guest reset or powered off once */
};

enum receipt_state {
	RECEIPT_ERROR = -1,
	RECEIPT_NEW = 0,	/* recorded as pending: go ahead */
	RECEIPT_DONE,		/* replay the result */
	RECEIPT_FAILED,		/* replay the error */
	RECEIPT_PENDING,	/* still running in this mcvmd */
	RECEIPT_UNKNOWN,	/* mcvmd died while it ran: never again */
	RECEIPT_CONFLICT,	/* same id, other tool or arguments */
};

int	 state_vm_insert(const struct vm_row *);
int	 state_vm_set(const char *, const char *, const char *, const char *);
int	 state_vm_delete(const char *);
int	 state_vm_attach_pid(const char *, uint32_t);
int	 state_ws_id(const char *, int64_t *, int *);
int	 state_vm_install_done(const char *);
int	 state_vm_checkpoint(const char *, uint64_t, const char *);
int	 state_vm_disk_bytes_set(const char *, uint64_t);
void	 state_vm_destroyed_detail(const char *, int64_t, char *, size_t);
int	 state_vm_destroyed(const char *, int64_t);
int	 state_vm_each(int (*)(const struct vm_row *, void *), void *);
int	 state_job_start(const char *, const char *, uint32_t, const char *,
	    int64_t, const char *, const char *);
int	 state_job_lookup(const char *, const char *, uint32_t *);
int	 state_jobs_forget(const char *);
int	 state_jobs_copy(const char *, const char *);
#define STATE_JOBS_MAX	1024	/* job rows state.db keeps per VM */
int	 state_job_each(const char *, unsigned int, int (*)(const char *,
	    uint32_t, const char *, int64_t, void *), void *);
enum receipt_state state_receipt_begin(int64_t, const char *, const char *,
	    const uint8_t [SHA256_LEN], const char *, char *, size_t);
int	 state_receipt_end(int64_t, const char *, int, const char *,
	    const char *);
int	 state_receipt_forget(int64_t, const char *);
int	 state_receipts_orphan(void);
int	 state_ws_image_bytes_set(int64_t, uint64_t);
int	 state_ws_image_bytes(int64_t, uint64_t *);
int	 state_usage(int64_t, uint32_t *, uint64_t *, uint64_t *,
	    uint64_t *);
int	 state_snapshot_insert(const char *, const char *, uint64_t,
	    int64_t);
int	 state_snapshot_find(const char *, const char *, uint64_t *,
	    int64_t *);
int	 state_snapshot_delete(const char *, const char *);
int	 state_snapshot_each(const char *, int (*)(const char *, uint64_t,
	    int64_t, void *), void *);
int	 state_jobs_forget_since(const char *, int64_t);

/* front.c */
void	 front_imsg(struct imsgev *, struct imsg *);
int	 front_flush_room(void);
void	 front_flush(const struct ctl_ticket *, const char *);
void	 front_flush_lost(void);

#endif
