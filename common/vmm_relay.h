/*
 * The former codec of the monitor's agent messages: IMSG_VMM_* fields to
 * and from agent messages (agent_proto.h), one to one.  The monitor and
 * its driver no longer use it: they read and write with msg_vmm.h, and
 * the agent's conversions are the monitor's own (vmm/agent_relay.c).
 * What is left is for mcvmd's readers (vmm_status_get) and goes once
 * mcvmd reads with msg_vmm.h too.
 */
#ifndef MCVM_VMM_RELAY_H
#define MCVM_VMM_RELAY_H

#include <stdint.h>

#include "agent_proto.h"
#include "imsg.h"
#include "msg.h"

#define VMM_ERRTEXT_IN_MAX	1024	/* error text bytes looked at */

/*
 * Requests: vmm_req_get reads an IMSG_VMM_* agent request (EXEC ...
 * GUEST_POWEROFF) into an agent request, checking every bound; strings
 * point into the imsg.  vmm_req_put writes one (mcvmd's side, and tests).
 */
int	 vmm_req_agent_type(uint32_t);
uint32_t vmm_req_imsg_type(uint16_t);
int	 vmm_req_get(uint32_t, struct mreader *, struct agent_msg *,
	    uint32_t *);
int	 vmm_req_put(struct ibuf *, const struct agent_msg *, uint32_t);

/*
 * Replies: vmm_reply_put writes an agent reply (or AGENT_ERROR) as the
 * fields of vmm_reply_imsg_type(); vmm_reply_get reads them back for a
 * request of the given agent type, checking every bound again.  The
 * output of JOB_READ travels as text in the request's encoding
 * (VMM_ENC_*), decoded here: mcvmd never sees the guest's raw bytes.
 */
uint32_t vmm_reply_imsg_type(uint16_t);
int	 vmm_reply_put(struct ibuf *, const struct agent_msg *, uint32_t);
int	 vmm_reply_get(uint16_t, uint32_t, struct mreader *,
	    struct agent_msg *);

/* Job status fields, as IMSG_VMM_JOB_STATE and JOB_OUTPUT carry them. */
void	 vmm_status_put(struct ibuf *, const struct agent_job_status *);
int	 vmm_status_get(struct mreader *, struct agent_job_status *);

/* IMSG_VMM_ERROR fields. */
void	 vmm_error_put(struct ibuf *, uint32_t, uint32_t, const char *);
void	 vmm_error_text(const char *, char *, size_t);
int	 vmm_error_valid(uint32_t);

#endif
