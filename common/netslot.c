/*
 * VM slots and port forward specs, as mcvmd and mcvm-netd both read them:
 * a slot's /30, its guest's MAC, and "2222:22"-style forwards.  No system
 * calls here.
 */
#include <sys/types.h>
#include <sys/socket.h>

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "netslot.h"

static uint32_t
cidr_v4(const struct cidr *c)
{
	return (uint32_t)c->addr[0] << 24 | (uint32_t)c->addr[1] << 16 |
	    (uint32_t)c->addr[2] << 8 | c->addr[3];
}

/* The slots a pool holds, at most SLOTS_MAX; all of them without one. */
uint32_t
slot_count(const struct mcvm_config *conf)
{
	unsigned int	 bits;

	if (!conf->pool_set || conf->pool.family != AF_INET)
		return SLOTS_MAX;
	if (conf->pool.prefixlen > SLOT_PREFIX)
		return 0;
	bits = SLOT_PREFIX - conf->pool.prefixlen;
	if (bits >= 31 || (1U << bits) > SLOTS_MAX)
		return SLOTS_MAX;
	return 1U << bits;
}

/* Slot n owns pool + 4n: network, gateway (+1), guest (+2), broadcast. */
int
slot_addr(const struct cidr *pool, uint32_t slot,
    struct slot_addr *a)
{
	unsigned int	 bits;

	if (pool->family != AF_INET || pool->prefixlen > SLOT_PREFIX ||
	    slot >= SLOTS_MAX)
		return -1;
	bits = SLOT_PREFIX - pool->prefixlen;
	if (bits < 31 && slot >= (1U << bits))
		return -1;
	a->net = cidr_v4(pool) + (slot << SLOT_BITS);
	a->gateway = a->net + 1;
	a->guest = a->net + 2;
	return 0;
}

void
ip4_text(uint32_t ip, char *buf, size_t len)
{
	(void)snprintf(buf, len, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 0xff,
	    (ip >> 8) & 0xff, ip & 0xff);
}

/* QEMU's locally administered prefix, then "m" and the slot. */
void
slot_mac(uint32_t slot, char *buf, size_t len)
{
	(void)snprintf(buf, len, "52:54:00:6d:%02x:%02x",
	    (slot >> 8) & 0xff, slot & 0xff);
}

static int
port_parse(const char *s, uint16_t *port)
{
	unsigned long	 v;
	char		*ep;

	if (!isdigit((unsigned char)s[0]) || s[0] == '0')
		return -1;
	errno = 0;
	v = strtoul(s, &ep, 10);
	if (errno != 0 || *ep != '\0' || v < 1 || v > PORT_MAX)
		return -1;
	*port = (uint16_t)v;
	return 0;
}

int
fwd_spec_parse(const char *s, struct fwd_spec *f)
{
	char		 buf[FWD_SPEC_MAX], *colon;

	if (strlen(s) >= sizeof(buf))
		return -1;
	memcpy(buf, s, strlen(s) + 1);
	if ((colon = strchr(buf, ':')) == NULL) {
		f->host = 0;
		return port_parse(buf, &f->guest);
	}
	*colon++ = '\0';
	if (port_parse(colon, &f->guest) == -1)
		return -1;
	if (strcmp(buf, "auto") == 0) {
		f->host = 0;
		return 0;
	}
	return port_parse(buf, &f->host);
}

