/*
 * The conversions of the mcvm agent's implementation of the guest side
 * (guest_agent.c): the monitor's requests (msg_vmm.h) as agent requests
 * (agent_proto.h), and agent replies as the monitor's answers.  Pure code,
 * so that unit tests drive it without a guest.
 *
 * What the guest sends is untrusted: every string it gave goes to mcvmd as
 * valid UTF-8 within its bound, and a reply that cannot be relayed is
 * refused (-1) rather than cut.
 */
#ifndef MCVM_VMM_AGENT_RELAY_H
#define MCVM_VMM_AGENT_RELAY_H

#include <stddef.h>
#include <stdint.h>

#include "agent_proto.h"
#include "imsg.h"
#include "msg_vmm.h"

/* Requests: the fields the codec checked, pointers kept. */
void	 agent_req_exec(const struct msg_vmm_exec *, struct agent_msg *);
void	 agent_req_job_read(const struct msg_vmm_job_read *,
	    struct agent_msg *);
void	 agent_req_file_read(const struct msg_vmm_file_read *,
	    struct agent_msg *);
void	 agent_req_file_write(const struct msg_vmm_file_write *,
	    struct agent_msg *);
void	 agent_req_file_list(const struct msg_vmm_file_list *,
	    struct agent_msg *);
void	 agent_req_set_time(const struct msg_vmm_set_time *,
	    struct agent_msg *);
void	 agent_req_net_config(const struct msg_vmm_net_config *,
	    struct agent_msg *);

/*
 * Replies: m, the reply to an agent request (or AGENT_ERROR), written as
 * the fields of the monitor's answer of the given type (IMSG_VMM_ERROR
 * for an error), JOB_READ's pages decoded into the request's encoding
 * (VMM_ENC_*), FILE_READ's bytes marked as text when they are and UTF-8
 * was asked, FILE_LIST's names decoded as text.  Returns 0, or -1 if it
 * does not fit that answer.
 */
int	 agent_reply_put(struct ibuf *, uint32_t, const struct agent_msg *,
	    uint32_t);

#endif
