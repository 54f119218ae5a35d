/*
 * mcvm-netd: see netd.c for the design.  The pure parts (address
 * arithmetic, forward specs, the auto-port allocator, nftables rule text)
 * live in addr.c and rules.c, so the unit tests reach them.
 */
#ifndef MCVM_NETD_H
#define MCVM_NETD_H

#include <stddef.h>
#include <stdint.h>

#include "msg_net.h"
#include "netslot.h"

struct cidr;
struct mcvm_config;

#define NETD_FWD_MAX		NET_FWD_MAX	/* port forwards per VM */
#define NETD_AUTO_PORT_FIRST	40000	/* auto host ports */
#define NETD_AUTO_PORT_LAST	40999
#define NETD_IFPREFIX		"mcvm"	/* every link netd makes */
#define NETD_TABLE_PREFIX	"mcvm_"	/* every nftables table netd makes */
#define NETD_IFNAME_MAX		16	/* IFNAMSIZ */
#define NETD_TABLE_MAX		32
#define NETD_ADDR_MAX		20	/* "255.255.255.255/32" */
#define NETD_MAC_MAX		18
#define NETD_RULES_MAX		16384	/* one table's text */

/* Link kinds: the host end of the veth, its VM end, the tap, the bridge. */
#define NETD_IF_HOST		'h'
#define NETD_IF_VM		'g'
#define NETD_IF_TAP		't'
#define NETD_IF_BRIDGE		'b'

void	 netd_ifname(uint32_t, int, char *, size_t);
int	 netd_ifname_slot(const char *, int, uint32_t *);
void	 netd_table_name(uint32_t, char *, size_t);
int	 netd_table_slot(const char *, uint32_t *);
int	 netd_cidr_overlap(uint32_t, unsigned int, uint32_t, unsigned int);

/* Host ports netd holds; auto ports come round-robin from their range. */
struct port_alloc {
	uint8_t		 used[(PORT_MAX + 1) / 8];
	uint16_t	 next;
};
void	 port_alloc_init(struct port_alloc *);
int	 port_alloc_take(struct port_alloc *, uint16_t);
void	 port_alloc_release(struct port_alloc *, uint16_t);
int	 port_alloc_used(const struct port_alloc *, uint16_t);
int	 port_alloc_next(struct port_alloc *, uint16_t *);

/* What one VM's table says; inbound, only slot and addr count. */
struct netd_rules {
	uint32_t		 slot;
	int			 inbound;	/* NET_INBOUND */
	const char		*uplink;
	struct slot_addr	 addr;
	const struct cidr	*pool;
	const struct cidr	*resolver;	/* NULL: no DNS */
	const struct cidr	*blocked;	/* the config's, any family */
	size_t			 nblocked;
};
int	 netd_rules_text(const struct netd_rules *, char *, size_t);
int	 netd_cidr_text(const struct cidr *, char *, size_t);

void	 netd_sandbox(int);

#endif
