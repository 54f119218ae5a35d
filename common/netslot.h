/*
 * VM slots and port forward specs, shared by mcvmd and mcvm-netd: see
 * netslot.c.
 */
#ifndef MCVM_NETSLOT_H
#define MCVM_NETSLOT_H

#include <stddef.h>
#include <stdint.h>

struct cidr;
struct mcvm_config;

#define SLOTS_MAX		1024	/* VM slots, whatever the pool */
#define SLOT_BITS		2	/* one /30 per slot */
#define SLOT_PREFIX		30
#define PORT_MAX		65535
#define FWD_SPEC_MAX		16	/* "65535:65535" */

/* A slot's /30, host byte order. */
struct slot_addr {
	uint32_t	 net;
	uint32_t	 gateway;	/* the host end of the veth */
	uint32_t	 guest;
};

uint32_t slot_count(const struct mcvm_config *);
int	 slot_addr(const struct cidr *, uint32_t, struct slot_addr *);
void	 ip4_text(uint32_t, char *, size_t);
void	 slot_mac(uint32_t, char *, size_t);

/* "2222:22", "auto:22", "22" (host port chosen, as "auto:22"). */
struct fwd_spec {
	uint16_t	 host;		/* 0: auto */
	uint16_t	 guest;
};
int	 fwd_spec_parse(const char *, struct fwd_spec *);

#endif
