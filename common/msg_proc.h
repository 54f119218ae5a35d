/*
 * The codecs of what every child and mcvmd exchange: IMSG_HELLO, the
 * child's first message, and IMSG_VERBOSE.  The rules are msg_vmm.h's.
 */
#ifndef MCVM_MSG_PROC_H
#define MCVM_MSG_PROC_H

#include <stdint.h>

#include "imsg.h"

struct msg_hello {
	uint32_t	 version;	/* MCVM_PROTO_VERSION */
};

struct msg_verbose {
	uint32_t	 level;
};

void	 msg_hello_put(struct ibuf *, const struct msg_hello *);
int	 msg_hello_get(struct imsg *, struct msg_hello *);
void	 msg_verbose_put(struct ibuf *, const struct msg_verbose *);
int	 msg_verbose_get(struct imsg *, struct msg_verbose *);

#endif
