/*
 * The codecs of the control socket's messages (IMSG_CTL_*), called by
 * mcvmctl and mcvmd; the rules are msg_vmm.h's.  Every request ends with
 * CTL_OK or CTL_FAIL, or, for STATUS and WS_LIST, their rows and CTL_END.
 */
#ifndef MCVM_MSG_CTL_H
#define MCVM_MSG_CTL_H

#include <stdint.h>

#include "imsg.h"
#include "proto.h"

#define CTL_TEXT_MAX		1024	/* OK and FAIL messages */
#define CTL_TITLE_MAX		32	/* a process's title and state */
#define CTL_NOTE_MAX		4096	/* one status note */

/* IMSG_CTL_OK and CTL_FAIL */
struct msg_ctl_ok {
	const char	*message;	/* CTL_TEXT_MAX */
};

struct msg_ctl_fail {
	const char	*message;	/* CTL_TEXT_MAX */
};

/* IMSG_CTL_STATUS -> STATUS_PROC per process, STATUS_NOTE..., END */
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

/* IMSG_CTL_TOKEN_ISSUE -> OK; mcvmd checks the values and says why */
struct msg_ctl_token_issue {
	const char	*workspace;	/* WS_NAME_MAX */
	uint8_t		 hash[TOKEN_HASH_LEN];
	uint64_t	 ttl;		/* seconds, 0 none; TOKEN_TTL_MAX */
	uint32_t	 flags;		/* WS_* */
	uint32_t	 rotate;	/* 0 or 1 */
};

/* IMSG_CTL_WS_REVOKE -> OK */
struct msg_ctl_ws_revoke {
	const char	*workspace;	/* WS_NAME_MAX */
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
void	 msg_ctl_token_issue_put(struct ibuf *,
	    const struct msg_ctl_token_issue *);
int	 msg_ctl_token_issue_get(struct imsg *, struct msg_ctl_token_issue *);
void	 msg_ctl_ws_revoke_put(struct ibuf *,
	    const struct msg_ctl_ws_revoke *);
int	 msg_ctl_ws_revoke_get(struct imsg *, struct msg_ctl_ws_revoke *);
int	 msg_ctl_ws_list_get(struct imsg *);
void	 msg_ctl_ws_entry_put(struct ibuf *, const struct msg_ctl_ws_entry *);
int	 msg_ctl_ws_entry_get(struct imsg *, struct msg_ctl_ws_entry *);

#endif
