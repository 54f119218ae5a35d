/*
 * mcvm-vmm, the VM monitor: one per VM, as the VM's own uid, chrooted to
 * the empty directory, no capabilities, seccomp.  It is the only process
 * that reads bytes from QEMU (QMP, qmp.h) or from the guest (the agent
 * protocol, agent_proto.h), and it relays typed results to mcvmd.
 *
 * The conversions between mcvmd's imsg fields (proto.h, IMSG_VMM_*) and
 * agent messages live in common/vmm_relay.c, which mcvmd and the tests
 * share.
 */
#ifndef MCVM_VMM_H
#define MCVM_VMM_H

#include <stdint.h>

#include "agent_proto.h"

/* The fds mcvmd gives the monitor, beside its imsg socket on fd 3. */
#define VMM_QMP_FILENO		4	/* to QEMU's QMP monitor */
#define VMM_AGENT_FILENO	5	/* connected to the agent chardev */

#define VMM_REQ_MAX		32	/* in flight, then VMM_ERR_BUSY */
#define VMM_REQ_TIMEOUT_MS	30000	/* -> VMM_ERR_TIMEOUT */
#define VMM_HELLO_RETRY_MS	100	/* while the guest boots */
#define VMM_READ_MAX		(16 * 1024)	/* bytes per read(2) */
#define VMM_AGENT_WQ_MAX	(4 * AGENT_FRAME_MAX)	/* unsent bytes */

/* The seccomp policy (vmm_sandbox.c). */
void	 vmm_sandbox(int);

#endif
