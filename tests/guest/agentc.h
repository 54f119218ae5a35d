/*
 * A small synchronous client of the guest agent protocol, for the guest
 * tests and benchmarks: one request at a time over the unix socket that
 * QEMU connects to the agent's virtio-serial port.
 */
#ifndef MCVM_TESTS_AGENTC_H
#define MCVM_TESTS_AGENTC_H

#include <stddef.h>
#include <stdint.h>

#include "agent_proto.h"

struct agentc {
	int		 fd;
	uint32_t	 next_id;
	uint8_t		 rx[2 * AGENT_FRAME_MAX];
	size_t		 rx_len;
	uint8_t		 cur[AGENT_FRAME_MAX];	/* the last reply's frame */
	uint8_t		 tx[AGENT_FRAME_MAX];
};

int	 ac_connect(struct agentc *, const char *);
void	 ac_close(struct agentc *);
int	 ac_send(struct agentc *, struct agent_msg *);
int	 ac_send_raw(struct agentc *, const void *, size_t);
int	 ac_recv(struct agentc *, uint32_t, struct agent_msg *, int);
int	 ac_call(struct agentc *, struct agent_msg *, struct agent_msg *, int);
int	 ac_hello(struct agentc *, int, int);

#endif
