/*
 * mcvm-netd's arithmetic: a slot's addresses, MAC and link names, port
 * forward specs and the auto-port allocator.  No system calls here.
 */
#include <sys/types.h>
#include <sys/socket.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "netd.h"

void
netd_ifname(uint32_t slot, int kind, char *buf, size_t len)
{
	(void)snprintf(buf, len, NETD_IFPREFIX "%u%c", slot, kind);
}

/* Decimal digits without a leading zero, below SLOTS_MAX. */
static int
slot_parse(const char *s, size_t n, uint32_t *slot)
{
	uint32_t	 v = 0;
	size_t		 i;

	if (n == 0 || n > 5 || (n > 1 && s[0] == '0'))
		return -1;
	for (i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (uint32_t)(s[i] - '0');
	}
	if (v >= SLOTS_MAX)
		return -1;
	*slot = v;
	return 0;
}

/* The slot of a link netd names NETD_IFPREFIX<slot><kind>, or -1. */
int
netd_ifname_slot(const char *name, int kind, uint32_t *slot)
{
	size_t	 plen = strlen(NETD_IFPREFIX), n = strlen(name);

	if (n < plen + 2 || strncmp(name, NETD_IFPREFIX, plen) != 0 ||
	    name[n - 1] != kind)
		return -1;
	return slot_parse(name + plen, n - plen - 1, slot);
}

void
netd_table_name(uint32_t slot, char *buf, size_t len)
{
	(void)snprintf(buf, len, NETD_TABLE_PREFIX "%u", slot);
}

int
netd_table_slot(const char *name, uint32_t *slot)
{
	size_t	 plen = strlen(NETD_TABLE_PREFIX);

	if (strncmp(name, NETD_TABLE_PREFIX, plen) != 0)
		return -1;
	return slot_parse(name + plen, strlen(name + plen), slot);
}

static uint32_t
prefix_mask(unsigned int len)
{
	return len == 0 ? 0 : 0xffffffffU << (32 - len);
}

/* Whether two IPv4 prefixes share an address. */
int
netd_cidr_overlap(uint32_t a, unsigned int alen, uint32_t b,
    unsigned int blen)
{
	uint32_t	 m = prefix_mask(alen < blen ? alen : blen);

	return (a & m) == (b & m);
}

void
port_alloc_init(struct port_alloc *pa)
{
	memset(pa, 0, sizeof(*pa));
	pa->next = NETD_AUTO_PORT_FIRST;
}

int
port_alloc_used(const struct port_alloc *pa, uint16_t port)
{
	return (pa->used[port / 8] >> (port % 8)) & 1;
}

/* Marks a port held; -1 if netd holds it already. */
int
port_alloc_take(struct port_alloc *pa, uint16_t port)
{
	if (port == 0 || port_alloc_used(pa, port))
		return -1;
	pa->used[port / 8] |= 1U << (port % 8);
	return 0;
}

void
port_alloc_release(struct port_alloc *pa, uint16_t port)
{
	pa->used[port / 8] &= ~(1U << (port % 8));
}

/*
 * The next auto port netd does not hold, going round the range from where
 * the last one was found, so a port just released is the last to come
 * back.  The caller takes it once it could bind it.  -1: all are held.
 */
int
port_alloc_next(struct port_alloc *pa, uint16_t *port)
{
	unsigned int	 i, n = NETD_AUTO_PORT_LAST - NETD_AUTO_PORT_FIRST + 1;
	uint16_t	 p;

	for (i = 0; i < n; i++) {
		p = pa->next;
		pa->next = p >= NETD_AUTO_PORT_LAST ? NETD_AUTO_PORT_FIRST :
		    p + 1;
		if (p < NETD_AUTO_PORT_FIRST || p > NETD_AUTO_PORT_LAST)
			continue;
		if (!port_alloc_used(pa, p)) {
			*port = p;
			return 0;
		}
	}
	return -1;
}
