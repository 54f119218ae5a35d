/*
 * The codecs of netd's messages (IMSG_NET_*), called by mcvmd and
 * mcvm-netd; the rules are msg_vmm.h's.  peerid is the request id.
 */
#ifndef MCVM_MSG_NET_H
#define MCVM_MSG_NET_H

#include <stdint.h>

#include "imsg.h"

#define NET_FWD_MAX		16	/* port forwards per VM */
#define NET_STR_MAX		63	/* an address, the MAC */
#define NET_TEXT_MAX		1023	/* a result's text */
#define NET_PREFLIGHT_TEXT_MAX	2047

struct msg_net_forward {
	uint32_t	 host;		/* PORT_MAX; 0 auto, in SETUP only */
	uint32_t	 guest;		/* 1..PORT_MAX */
};

/* IMSG_NET_PREFLIGHT -> PREFLIGHT_RESULT */
struct msg_net_preflight_result {
	uint32_t	 problems;	/* 0: ready */
	const char	*text;		/* NET_PREFLIGHT_TEXT_MAX */
};

/* msg_net_setup.network: what the VM's netns gets */
#define NET_OFF			0	/* lo only */
#define NET_ON			1	/* a NIC, NATed out of the uplink */
#define NET_INBOUND		2	/* a NIC for the port forwards only */

/* IMSG_NET_SETUP -> NET_FD (netns, tap), RESULT */
struct msg_net_setup {
	const char	*vm_id;		/* a VM id, ID_MAX */
	uint32_t	 slot;		/* < SLOTS_MAX */
	uint32_t	 network;	/* NET_OFF, NET_ON or NET_INBOUND */
	uint32_t	 nforwards;	/* NET_FWD_MAX */
	struct msg_net_forward fwd[NET_FWD_MAX];
};

/* IMSG_NET_TEARDOWN -> RESULT */
struct msg_net_teardown {
	const char	*vm_id;		/* a VM id, ID_MAX */
	uint32_t	 slot;		/* < SLOTS_MAX */
};

/* IMSG_NET_LIST -> ENTRY per slot in use, RESULT */
struct msg_net_entry {
	const char	*vm_id;		/* ID_MAX; what the slot's alias says */
	uint32_t	 slot;		/* < SLOTS_MAX */
};

/* IMSG_NET_FD; the fd travels with it */
struct msg_net_fd {
	uint32_t	 role;		/* enum net_fd_role */
};

/*
 * IMSG_NET_RESULT ends every request.  The addresses and the forwards,
 * with the host ports chosen (1..PORT_MAX), answer a SETUP; otherwise
 * they are "" and none.
 */
struct msg_net_result {
	uint32_t	 status;	/* 0 ok, else an errno value */
	const char	*address;	/* a.b.c.d/n, "" off; NET_STR_MAX */
	const char	*gateway;	/* "" unless on; NET_STR_MAX */
	const char	*resolver;	/* "" none; NET_STR_MAX */
	const char	*mac;		/* NET_STR_MAX */
	uint32_t	 nforwards;	/* NET_FWD_MAX */
	struct msg_net_forward fwd[NET_FWD_MAX];
	const char	*text;		/* NET_TEXT_MAX */
};

int	 msg_net_preflight_get(struct imsg *);
void	 msg_net_preflight_result_put(struct ibuf *,
	    const struct msg_net_preflight_result *);
int	 msg_net_preflight_result_get(struct imsg *,
	    struct msg_net_preflight_result *);
void	 msg_net_setup_put(struct ibuf *, const struct msg_net_setup *);
int	 msg_net_setup_get(struct imsg *, struct msg_net_setup *);
void	 msg_net_teardown_put(struct ibuf *, const struct msg_net_teardown *);
int	 msg_net_teardown_get(struct imsg *, struct msg_net_teardown *);
int	 msg_net_list_get(struct imsg *);
void	 msg_net_entry_put(struct ibuf *, const struct msg_net_entry *);
int	 msg_net_entry_get(struct imsg *, struct msg_net_entry *);
void	 msg_net_fd_put(struct ibuf *, const struct msg_net_fd *);
int	 msg_net_fd_get(struct imsg *, struct msg_net_fd *);
void	 msg_net_result_put(struct ibuf *, const struct msg_net_result *);
int	 msg_net_result_get(struct imsg *, struct msg_net_result *);

#endif
