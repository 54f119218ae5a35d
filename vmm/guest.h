/*
 * The monitor's guest side, an interface: the session with an agent in
 * the guest, and the requests mcvmd makes of it.  guest_agent.c speaks
 * mcvm-guestd's agent protocol (agent_proto.h) over the virtio-serial
 * port, guest_qga.c qemu-guest-agent's (qga.h), for guests that run no
 * mcvm agent (-a qga).
 *
 * The session: init takes the port, the start mode and the VM's identity
 * (kept, as it is given again to each session); once the agent is
 * up the implementation calls vmm_guest_up() (the monitor then reports
 * READY or GUEST_BACK), and when it loses the agent it fails the guest's
 * requests in flight (vmm_req_fail_all) and reports VMM_EV_GUEST_LOST.
 *
 * A request: the op table's entry has read its fields with the message's
 * codec, checked that the session is up and armed the deadline; the
 * implementation sends it and answers r once, with the reply type
 * imsg_reply_type() gives for the request, or with vmm_fail().
 * What the guest sends back is untrusted: an answer that does not fit
 * costs that request, never the monitor.
 */
#ifndef MCVM_VMM_GUEST_H
#define MCVM_VMM_GUEST_H

#include <stdint.h>

#include "agent_proto.h"
#include "msg_vmm.h"
#include "vmm.h"

/* What the VM is to its guest: set at each session's start. */
struct vmm_identity {
	char		 hostname[AGENT_HOSTNAME_MAX + 1];
	char		 machine_id[AGENT_MACHINE_ID_LEN + 1];
};

struct vmm_guest {
	const char	*name;

	/* The session. */
	void	(*init)(int, enum vmm_mode, const struct vmm_identity *);
	int	(*up)(const char **);		/* 1, or 0 and why not */
	void	(*reset)(const char *);		/* the guest was reset */

	/* Requests: each answers r, or fails it. */
	void	(*exec)(struct vmm_req *, const struct msg_vmm_exec *);
	void	(*job_status)(struct vmm_req *, uint32_t);
	void	(*job_cancel)(struct vmm_req *, uint32_t);
	void	(*job_read)(struct vmm_req *,
		    const struct msg_vmm_job_read *);
	void	(*file_read)(struct vmm_req *,
		    const struct msg_vmm_file_read *);
	void	(*file_write)(struct vmm_req *,
		    const struct msg_vmm_file_write *);
	void	(*file_list)(struct vmm_req *,
		    const struct msg_vmm_file_list *);
	void	(*info)(struct vmm_req *);
	void	(*freeze)(struct vmm_req *);
	void	(*thaw)(struct vmm_req *);
	void	(*set_time)(struct vmm_req *,
		    const struct msg_vmm_set_time *);
	void	(*identity)(struct vmm_req *,
		    const struct msg_vmm_identity *);
	void	(*poweroff)(struct vmm_req *);
	void	(*net_config)(struct vmm_req *,
		    const struct msg_vmm_net_config *);

	/* r ends (answered, timed out): forget it, unsend its bytes. */
	void	(*forget)(struct vmm_req *);
};

extern const struct vmm_guest	 vmm_guest_agent;
extern const struct vmm_guest	 vmm_guest_qga;
extern const struct vmm_guest	*vmm_guest;

/*
 * An answer in the mcvm agent's terms (AGENT_REPLY | r->g_kind, or
 * AGENT_ERROR) to r, relayed by agent_relay.c, which checks its bounds:
 * the other guest sides answer through it too.
 */
void	 vmm_guest_answer(struct vmm_req *, const struct agent_msg *);

#endif
