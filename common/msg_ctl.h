/*
 * The codecs of the control socket's messages (IMSG_CTL_*), called by
 * mcvmctl and mcvmd; the rules are msg_vmm.h's.  Every request ends with
 * CTL_OK or CTL_FAIL, or, for STATUS, WS_LIST and VM_LIST, their rows and
 * CTL_END.
 */
#ifndef MCVM_MSG_CTL_H
#define MCVM_MSG_CTL_H

#include <stdint.h>

#include "imsg.h"
#include "proto.h"

#define CTL_TEXT_MAX		1024	/* OK and FAIL messages */
#define CTL_TITLE_MAX		32	/* a process's title and state */
#define CTL_NOTE_MAX		4096	/* one status note */
#define CTL_STATE_MAX		16	/* a VM's state's name */

/* IMSG_CTL_OK and CTL_FAIL */
struct msg_ctl_ok {
	const char	*message;	/* CTL_TEXT_MAX */
};

struct msg_ctl_fail {
	const char	*message;	/* CTL_TEXT_MAX */
};

/*
 * IMSG_CTL_STATUS -> STATUS_PROC per process, STATUS_WS per workspace,
 * STATUS_NOTE..., END
 */
struct msg_ctl_status_proc {
	const char	*title;		/* CTL_TITLE_MAX */
	uint32_t	 pid;
	uint32_t	 uid;
	uint64_t	 capeff;
	uint64_t	 capprm;
	uint32_t	 seccomp;
	uint32_t	 nonewprivs;
	uint32_t	 restarts;
	const char	*state;		/* CTL_TITLE_MAX */
};

struct msg_ctl_status_note {
	const char	*topic;		/* CTL_TITLE_MAX */
	const char	*text;		/* CTL_NOTE_MAX */
};

/* A workspace's use against its limits; quota: which set-quota set. */
struct msg_ctl_status_ws {
	const char	*workspace;	/* WS_NAME_MAX */
	uint32_t	 quota;		/* QUOTA_* */
	uint32_t	 vms;
	uint32_t	 max_vms;
	uint64_t	 memory;	/* bytes */
	uint64_t	 max_memory;
	uint32_t	 vcpus;
	uint32_t	 max_vcpus;
	uint64_t	 storage;	/* bytes */
	uint64_t	 max_storage;
};

/* IMSG_CTL_TOKEN_ISSUE -> OK; mcvmd checks the values and says why */
struct msg_ctl_token_issue {
	const char	*workspace;	/* WS_NAME_MAX */
	uint8_t		 hash[TOKEN_HASH_LEN];
	uint64_t	 ttl;		/* seconds, 0 none; TOKEN_TTL_MAX */
	uint32_t	 flags;		/* WS_* */
	uint32_t	 rotate;	/* 0 or 1 */
};

/* IMSG_CTL_WS_REVOKE -> OK; vms says what becomes of its VMs */
#define CTL_REVOKE_KEEP		0	/* they run on */
#define CTL_REVOKE_STOP		1	/* they are powered off */
#define CTL_REVOKE_HIBERNATE	2	/* they hibernate, or power off */
struct msg_ctl_ws_revoke {
	const char	*workspace;	/* WS_NAME_MAX */
	uint32_t	 vms;		/* CTL_REVOKE_* */
};

/* IMSG_CTL_WS_LIST -> WS_ENTRY per workspace, END */
struct msg_ctl_ws_entry {
	const char	*workspace;	/* WS_NAME_MAX */
	uint32_t	 flags;
	uint64_t	 created;
	uint64_t	 revoked;	/* 0 not */
	uint32_t	 live_tokens;
	uint64_t	 next_expiry;	/* 0 none */
};

/* IMSG_CTL_VM_LIST -> VM_ENTRY per VM of every workspace, END */
struct msg_ctl_vm_entry {
	const char	*id;		/* ID_MAX */
	const char	*name;		/* OBJ_NAME_MAX */
	const char	*workspace;	/* WS_NAME_MAX */
	const char	*state;		/* CTL_STATE_MAX */
	uint32_t	 uid;
	uint32_t	 qemu_pid;	/* 0: none */
	uint32_t	 memory_mib;
	uint32_t	 vcpus;
	uint64_t	 uptime;	/* s since QEMU started, 0: none */
};

/* IMSG_CTL_VM_STOP -> OK once the stop began */
struct msg_ctl_vm_stop {
	const char	*id;		/* ID_MAX */
	uint32_t	 force;		/* 0 or 1 */
};

/* IMSG_CTL_VM_DESTROY -> OK once the destroy began */
struct msg_ctl_vm_destroy {
	const char	*id;		/* ID_MAX */
};

/*
 * IMSG_CTL_VM_ATTACH -> OK once the VM's monitor speaks to that QEMU:
 * an externally started QEMU, by its QMP socket (and its
 * qemu-guest-agent's, or ""), into a workspace.  pid 0: the QEMU that
 * listens on the QMP socket.
 */
#define CTL_SOCK_PATH_MAX	107	/* sun_path, without its NUL */
struct msg_ctl_vm_attach {
	const char	*workspace;	/* WS_NAME_MAX */
	const char	*name;		/* OBJ_NAME_MAX */
	const char	*qmp;		/* CTL_SOCK_PATH_MAX, absolute */
	const char	*qga;		/* CTL_SOCK_PATH_MAX, absolute, or "" */
	uint32_t	 pid;
};

/* IMSG_CTL_VM_FORGET -> OK: an attached VM leaves the registry */
struct msg_ctl_vm_forget {
	const char	*id;		/* ID_MAX */
};

/*
 * IMSG_CTL_QUOTA_SET -> OK.  set names the limits to change; a value of
 * 0 among them gives that limit back to the config's workspace limits.
 */
struct msg_ctl_quota_set {
	const char	*workspace;	/* WS_NAME_MAX */
	uint32_t	 set;		/* QUOTA_* */
	uint32_t	 vms;
	uint64_t	 memory;	/* bytes */
	uint32_t	 vcpus;
	uint64_t	 storage;	/* bytes */
};

void	 msg_ctl_ok_put(struct ibuf *, const struct msg_ctl_ok *);
int	 msg_ctl_ok_get(struct imsg *, struct msg_ctl_ok *);
void	 msg_ctl_fail_put(struct ibuf *, const struct msg_ctl_fail *);
int	 msg_ctl_fail_get(struct imsg *, struct msg_ctl_fail *);
int	 msg_ctl_end_get(struct imsg *);
int	 msg_ctl_status_get(struct imsg *);
void	 msg_ctl_status_proc_put(struct ibuf *,
	    const struct msg_ctl_status_proc *);
int	 msg_ctl_status_proc_get(struct imsg *, struct msg_ctl_status_proc *);
void	 msg_ctl_status_note_put(struct ibuf *,
	    const struct msg_ctl_status_note *);
int	 msg_ctl_status_note_get(struct imsg *, struct msg_ctl_status_note *);
void	 msg_ctl_status_ws_put(struct ibuf *, const struct msg_ctl_status_ws *);
int	 msg_ctl_status_ws_get(struct imsg *, struct msg_ctl_status_ws *);
void	 msg_ctl_token_issue_put(struct ibuf *,
	    const struct msg_ctl_token_issue *);
int	 msg_ctl_token_issue_get(struct imsg *, struct msg_ctl_token_issue *);
void	 msg_ctl_ws_revoke_put(struct ibuf *,
	    const struct msg_ctl_ws_revoke *);
int	 msg_ctl_ws_revoke_get(struct imsg *, struct msg_ctl_ws_revoke *);
int	 msg_ctl_ws_list_get(struct imsg *);
void	 msg_ctl_ws_entry_put(struct ibuf *, const struct msg_ctl_ws_entry *);
int	 msg_ctl_ws_entry_get(struct imsg *, struct msg_ctl_ws_entry *);
int	 msg_ctl_vm_list_get(struct imsg *);
void	 msg_ctl_vm_entry_put(struct ibuf *, const struct msg_ctl_vm_entry *);
int	 msg_ctl_vm_entry_get(struct imsg *, struct msg_ctl_vm_entry *);
void	 msg_ctl_vm_stop_put(struct ibuf *, const struct msg_ctl_vm_stop *);
int	 msg_ctl_vm_stop_get(struct imsg *, struct msg_ctl_vm_stop *);
void	 msg_ctl_vm_destroy_put(struct ibuf *,
	    const struct msg_ctl_vm_destroy *);
int	 msg_ctl_vm_destroy_get(struct imsg *, struct msg_ctl_vm_destroy *);
void	 msg_ctl_quota_set_put(struct ibuf *, const struct msg_ctl_quota_set *);
void	 msg_ctl_vm_attach_put(struct ibuf *, const struct msg_ctl_vm_attach *);
int	 msg_ctl_vm_attach_get(struct imsg *, struct msg_ctl_vm_attach *);
void	 msg_ctl_vm_forget_put(struct ibuf *, const struct msg_ctl_vm_forget *);
int	 msg_ctl_vm_forget_get(struct imsg *, struct msg_ctl_vm_forget *);
int	 msg_ctl_quota_set_get(struct imsg *, struct msg_ctl_quota_set *);

#endif
