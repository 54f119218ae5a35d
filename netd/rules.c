/*
 * One VM's nftables table, as text for libnftables.  It lives in the
 * netns netd runs in, on the host end of the VM's veth, where the guest
 * cannot reach it:
 *
 *	from the guest, forwarded:  IPv4 only, from the guest's address only;
 *	    DNS only to the resolver; never to the denied ranges; out of the
 *	    uplink only (so never to another VM); NATed there.
 *	to the guest, forwarded:    replies only (no inbound connections).
 *	from the guest, to the host itself: replies (port forwards) and DNS
 *	    to the resolver only.
 *
 * Inbound only (network off with port forwards), the guest starts
 * nothing: what it sends is either a reply to a connection netd's relay
 * opened to it, or refused, to the host as much as beyond it.  Nothing is
 * routed from it or to it and nothing is NATed; no uplink is needed.  A
 * refusal rather than a silent drop, so that the guest's connect fails
 * at once instead of timing out: a TCP reset, which no rate limit holds
 * back, or an ICMP error (which the kernel's ICMP rate limit may drop).
 *
 * One rule per denied range rather than an interval set, so that ranges
 * that overlap (the defaults, the pool, the config's) never conflict.
 */
#include <sys/types.h>
#include <sys/socket.h>

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "netd.h"

/* Always denied: RFC 1918, loopback, link-local (and so the metadata
 * address), CGNAT, multicast, "this network", reserved and broadcast. */
static const char *const netd_denied[] = {
	"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8",
	"169.254.0.0/16", "169.254.169.254/32", "172.16.0.0/12",
	"192.168.0.0/16", "224.0.0.0/4", "240.0.0.0/4",
};

struct textbuf {
	char	*p;
	size_t	 len;
	size_t	 off;
	int	 overflow;
};

static void __attribute__((format(printf, 2, 3)))
tb_add(struct textbuf *tb, const char *fmt, ...)
{
	va_list	 ap;
	int	 n;

	if (tb->overflow)
		return;
	va_start(ap, fmt);
	n = vsnprintf(tb->p + tb->off, tb->len - tb->off, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= tb->len - tb->off) {
		tb->overflow = 1;
		return;
	}
	tb->off += (size_t)n;
}

int
netd_cidr_text(const struct cidr *c, char *buf, size_t len)
{
	char	 a[INET6_ADDRSTRLEN];

	if (inet_ntop(c->family, c->addr, a, sizeof(a)) == NULL)
		return -1;
	if (snprintf(buf, len, "%s/%u", a, c->prefixlen) >= (int)len)
		return -1;
	return 0;
}

/* Inbound only: see the top of the file. */
static void
rules_inbound(struct textbuf *tb, const char *host, const char *guest)
{
	tb_add(tb, "\tchain fwd_hook {\n"
	    "\t\ttype filter hook forward priority -1; policy accept;\n"
	    "\t\tiifname \"%s\" jump refuse\n"
	    "\t\toifname \"%s\" drop\n\t}\n", host, host);
	tb_add(tb, "\tchain input_hook {\n"
	    "\t\ttype filter hook input priority -1; policy accept;\n"
	    "\t\tiifname \"%s\" jump to_host\n\t}\n", host);
	tb_add(tb, "\tchain to_host {\n"
	    "\t\tmeta nfproto != ipv4 drop\n"
	    "\t\tip saddr != %s drop\n"
	    "\t\tct state established,related accept\n"
	    "\t\tjump refuse\n\t}\n", guest);
	tb_add(tb, "\tchain refuse {\n"
	    "\t\tmeta l4proto tcp reject with tcp reset\n"
	    "\t\treject with icmpx type admin-prohibited\n\t}\n}\n");
}

int
netd_rules_text(const struct netd_rules *r, char *buf, size_t len)
{
	struct textbuf	 tb = { buf, len, 0, 0 };
	char		 table[NETD_TABLE_MAX], host[NETD_IFNAME_MAX];
	char		 guest[NETD_ADDR_MAX], res[NETD_ADDR_MAX];
	char		 c[INET6_ADDRSTRLEN + 4];
	size_t		 i;
	int		 dns;

	if (len == 0)
		return -1;
	netd_table_name(r->slot, table, sizeof(table));
	netd_ifname(r->slot, NETD_IF_HOST, host, sizeof(host));
	ip4_text(r->addr.guest, guest, sizeof(guest));
	dns = r->resolver != NULL && r->resolver->family == AF_INET &&
	    inet_ntop(AF_INET, r->resolver->addr, res, sizeof(res)) != NULL;

	tb_add(&tb, "table inet %s {\n", table);
	if (r->inbound) {
		rules_inbound(&tb, host, guest);
		return tb.overflow ? -1 : 0;
	}
	tb_add(&tb, "\tchain fwd_hook {\n"
	    "\t\ttype filter hook forward priority -1; policy accept;\n"
	    "\t\tiifname \"%s\" jump from_guest\n"
	    "\t\toifname \"%s\" jump to_guest\n\t}\n", host, host);
	tb_add(&tb, "\tchain input_hook {\n"
	    "\t\ttype filter hook input priority -1; policy accept;\n"
	    "\t\tiifname \"%s\" jump to_host\n\t}\n", host);
	tb_add(&tb, "\tchain nat_hook {\n"
	    "\t\ttype nat hook postrouting priority srcnat; policy accept;\n"
	    "\t\toifname \"%s\" ip saddr %s masquerade\n\t}\n",
	    r->uplink, guest);

	tb_add(&tb, "\tchain from_guest {\n"
	    "\t\tmeta nfproto != ipv4 drop\n"
	    "\t\tip saddr != %s drop\n", guest);
	if (dns)
		tb_add(&tb, "\t\tip daddr %s udp dport 53 accept\n"
		    "\t\tip daddr %s tcp dport 53 accept\n", res, res);
	tb_add(&tb, "\t\tudp dport 53 drop\n\t\ttcp dport 53 drop\n");
	for (i = 0; i < sizeof(netd_denied) / sizeof(netd_denied[0]); i++)
		tb_add(&tb, "\t\tip daddr %s drop\n", netd_denied[i]);
	if (r->pool != NULL && netd_cidr_text(r->pool, c, sizeof(c)) == 0)
		tb_add(&tb, "\t\tip daddr %s drop\n", c);
	for (i = 0; i < r->nblocked; i++) {
		if (r->blocked[i].family != AF_INET)
			continue;	/* IPv6 never leaves */
		if (netd_cidr_text(&r->blocked[i], c, sizeof(c)) == -1)
			return -1;
		tb_add(&tb, "\t\tip daddr %s drop\n", c);
	}
	tb_add(&tb, "\t\toifname != \"%s\" drop\n\t\taccept\n\t}\n",
	    r->uplink);

	tb_add(&tb, "\tchain to_guest {\n"
	    "\t\tmeta nfproto != ipv4 drop\n"
	    "\t\tct state established,related accept\n"
	    "\t\tdrop\n\t}\n");

	tb_add(&tb, "\tchain to_host {\n"
	    "\t\tmeta nfproto != ipv4 drop\n"
	    "\t\tip saddr != %s drop\n"
	    "\t\tct state established,related accept\n", guest);
	if (dns)
		tb_add(&tb, "\t\tip daddr %s udp dport 53 accept\n"
		    "\t\tip daddr %s tcp dport 53 accept\n", res, res);
	tb_add(&tb, "\t\tdrop\n\t}\n}\n");
	return tb.overflow ? -1 : 0;
}
