/*
 * mcvm-vmm, the VM monitor: one per VM, as the VM's own uid, chrooted to
 * the empty directory, no capabilities, seccomp.  It is the only process
 * that reads bytes from QEMU (QMP, qmp.h) or from the guest (the agent
 * protocol, agent_proto.h), and it relays typed results to mcvmd.
 *
 * The conversions between mcvmd's imsg fields (proto.h, IMSG_VMM_*) and
 * agent messages live in vmm_relay.c, shared with the tests; mcvmd may
 * use the reply readers too.
 */
#ifndef MCVM_VMM_H
#define MCVM_VMM_H

#include <stdint.h>

#include "agent_proto.h"
#include "imsg.h"
#include "msg.h"

/* The fds mcvmd gives the monitor, beside its imsg socket on fd 3. */
#define VMM_QMP_FILENO		4	/* to QEMU's QMP monitor */
#define VMM_AGENT_FILENO	5	/* connected to the agent chardev */

#define VMM_REQ_MAX		32	/* in flight, then VMM_ERR_BUSY */
#define VMM_REQ_TIMEOUT_MS	30000	/* -> VMM_ERR_TIMEOUT */
#define VMM_HELLO_RETRY_MS	100	/* while the guest boots */
#define VMM_READ_MAX		(16 * 1024)	/* bytes per read(2) */
#define VMM_AGENT_WQ_MAX	(4 * AGENT_FRAME_MAX)	/* unsent bytes */
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

/* The seccomp policy (vmm_sandbox.c). */
void	 vmm_sandbox(int);

#endif
