/*
 * mcvm-netd's pure parts: a slot's addresses and names, port forward
 * specs, the auto-port allocator and the nftables rule text.
 */
#include <sys/socket.h>

#include <criterion/criterion.h>
#include <string.h>

#include "config.h"
#include "netd.h"

static struct cidr
cidr(const char *s)
{
	struct cidr	 c;

	cr_assert_eq(cidr_parse(s, &c), 0, "%s", s);
	return c;
}

Test(netd, slot_addresses)
{
	struct cidr		 pool = cidr("10.231.0.0/24");
	struct slot_addr	 a;
	char			 ip[NETD_ADDR_MAX];

	cr_assert_eq(slot_addr(&pool, 0, &a), 0);
	ip4_text(a.gateway, ip, sizeof(ip));
	cr_assert_str_eq(ip, "10.231.0.1");
	ip4_text(a.guest, ip, sizeof(ip));
	cr_assert_str_eq(ip, "10.231.0.2");
	cr_assert_eq(slot_addr(&pool, 5, &a), 0);
	ip4_text(a.guest, ip, sizeof(ip));
	cr_assert_str_eq(ip, "10.231.0.22");
	cr_assert_eq(slot_addr(&pool, 63, &a), 0);
	ip4_text(a.gateway, ip, sizeof(ip));
	cr_assert_str_eq(ip, "10.231.0.253");
	cr_assert_eq(slot_addr(&pool, 64, &a), -1);
}

Test(netd, slots_never_overlap)
{
	struct cidr		 pool = cidr("10.231.0.0/22");
	struct slot_addr	 a, b;
	uint32_t		 i;

	for (i = 0; i + 1 < 256; i++) {
		cr_assert_eq(slot_addr(&pool, i, &a), 0);
		cr_assert_eq(slot_addr(&pool, i + 1, &b), 0);
		cr_assert_eq(b.net - a.net, 4u);
		cr_assert(!netd_cidr_overlap(a.net, 30, b.net, 30));
	}
	cr_assert_eq(slot_addr(&pool, 256, &a), -1);
}

Test(netd, nslots)
{
	struct mcvm_config	 conf;

	config_defaults(&conf);
	conf.pool = cidr("10.0.0.0/24");
	conf.pool_set = 1;
	cr_assert_eq(slot_count(&conf), 64u);
	conf.pool = cidr("10.0.0.0/16");
	cr_assert_eq(slot_count(&conf), (uint32_t)SLOTS_MAX);
	conf.pool_set = 0;
	cr_assert_eq(slot_count(&conf), (uint32_t)SLOTS_MAX);
}

Test(netd, names_and_mac)
{
	char		 buf[32];
	uint32_t	 slot;

	netd_ifname(12, NETD_IF_HOST, buf, sizeof(buf));
	cr_assert_str_eq(buf, "mcvm12h");
	cr_assert_eq(netd_ifname_slot("mcvm12h", NETD_IF_HOST, &slot), 0);
	cr_assert_eq(slot, 12u);
	cr_assert_eq(netd_ifname_slot("mcvm12g", NETD_IF_HOST, &slot), -1);
	cr_assert_eq(netd_ifname_slot("mcvm012h", NETD_IF_HOST, &slot), -1);
	cr_assert_eq(netd_ifname_slot("mcvmh", NETD_IF_HOST, &slot), -1);
	cr_assert_eq(netd_ifname_slot("eth0", NETD_IF_HOST, &slot), -1);
	cr_assert_eq(netd_ifname_slot("mcvm99999h", NETD_IF_HOST, &slot),
	    -1);
	netd_table_name(7, buf, sizeof(buf));
	cr_assert_str_eq(buf, "mcvm_7");
	cr_assert_eq(netd_table_slot("mcvm_7", &slot), 0);
	cr_assert_eq(slot, 7u);
	cr_assert_eq(netd_table_slot("mcvm_x", &slot), -1);
	cr_assert_eq(netd_table_slot("filter", &slot), -1);
	slot_mac(0x1a2, buf, sizeof(buf));
	cr_assert_str_eq(buf, "52:54:00:6d:01:a2");
}

Test(netd, overlap)
{
	cr_assert(netd_cidr_overlap(0x0ae70000, 16, 0x0ae70040, 26));
	cr_assert(netd_cidr_overlap(0x0a000000, 8, 0x0ae70000, 24));
	cr_assert(!netd_cidr_overlap(0x0ae70000, 24, 0x0ae70100, 24));
}

Test(netd, forward_specs)
{
	struct fwd_spec	 f;

	cr_assert_eq(fwd_spec_parse("2222:22", &f), 0);
	cr_assert_eq(f.host, 2222);
	cr_assert_eq(f.guest, 22);
	cr_assert_eq(fwd_spec_parse("auto:22", &f), 0);
	cr_assert_eq(f.host, 0);
	cr_assert_eq(f.guest, 22);
	cr_assert_eq(fwd_spec_parse("22", &f), 0);
	cr_assert_eq(f.host, 0);
	cr_assert_eq(f.guest, 22);
	cr_assert_eq(fwd_spec_parse("65535:65535", &f), 0);
	cr_assert_eq(fwd_spec_parse("0:22", &f), -1);
	cr_assert_eq(fwd_spec_parse("22:0", &f), -1);
	cr_assert_eq(fwd_spec_parse("65536:22", &f), -1);
	cr_assert_eq(fwd_spec_parse("022", &f), -1);
	cr_assert_eq(fwd_spec_parse("-1:22", &f), -1);
	cr_assert_eq(fwd_spec_parse("+22", &f), -1);
	cr_assert_eq(fwd_spec_parse("22:", &f), -1);
	cr_assert_eq(fwd_spec_parse(":22", &f), -1);
	cr_assert_eq(fwd_spec_parse("auto", &f), -1);
	cr_assert_eq(fwd_spec_parse("1:2:3", &f), -1);
	cr_assert_eq(fwd_spec_parse("", &f), -1);
	cr_assert_eq(fwd_spec_parse("22 ", &f), -1);
	cr_assert_eq(fwd_spec_parse("123456789012345678:1", &f), -1);
}

Test(netd, auto_ports_never_collide)
{
	static struct port_alloc pa;
	static uint8_t		 seen[PORT_MAX + 1];
	unsigned int		 n = NETD_AUTO_PORT_LAST -
				    NETD_AUTO_PORT_FIRST + 1, i;
	uint16_t		 p;

	port_alloc_init(&pa);
	/* An explicit port inside the range is skipped. */
	cr_assert_eq(port_alloc_take(&pa, NETD_AUTO_PORT_FIRST + 1), 0);
	cr_assert_eq(port_alloc_take(&pa, NETD_AUTO_PORT_FIRST + 1), -1);
	seen[NETD_AUTO_PORT_FIRST + 1] = 1;
	for (i = 0; i + 1 < n; i++) {
		cr_assert_eq(port_alloc_next(&pa, &p), 0);
		cr_assert(p >= NETD_AUTO_PORT_FIRST &&
		    p <= NETD_AUTO_PORT_LAST);
		cr_assert_eq(seen[p], 0, "port %u twice", p);
		seen[p] = 1;
		cr_assert_eq(port_alloc_take(&pa, p), 0);
	}
	cr_assert_eq(port_alloc_next(&pa, &p), -1, "the range is full");
	/* A released port comes back; only it. */
	port_alloc_release(&pa, NETD_AUTO_PORT_FIRST + 7);
	cr_assert_eq(port_alloc_next(&pa, &p), 0);
	cr_assert_eq(p, NETD_AUTO_PORT_FIRST + 7);
}

Test(netd, released_ports_come_back_last)
{
	static struct port_alloc pa;
	uint16_t		 a, b;

	port_alloc_init(&pa);
	cr_assert_eq(port_alloc_next(&pa, &a), 0);
	cr_assert_eq(port_alloc_take(&pa, a), 0);
	port_alloc_release(&pa, a);
	cr_assert_eq(port_alloc_next(&pa, &b), 0);
	cr_assert_neq(a, b);
	cr_assert_eq(b, a + 1);
}

Test(netd, rule_text)
{
	static char		 buf[NETD_RULES_MAX];
	struct cidr		 pool = cidr("10.231.0.0/24");
	struct cidr		 res = cidr("192.0.2.53");
	struct cidr		 blocked[2] = { cidr("198.51.100.0/24"),
				    cidr("2001:db8::/32") };
	struct netd_rules	 r;

	memset(&r, 0, sizeof(r));
	r.slot = 3;
	r.uplink = "eth0";
	cr_assert_eq(slot_addr(&pool, 3, &r.addr), 0);
	r.pool = &pool;
	r.resolver = &res;
	r.blocked = blocked;
	r.nblocked = 2;
	cr_assert_eq(netd_rules_text(&r, buf, sizeof(buf)), 0);
	cr_assert(strncmp(buf, "table inet mcvm_3 {\n", 20) == 0);
	cr_assert_not_null(strstr(buf, "iifname \"mcvm3h\" jump from_guest"));
	cr_assert_not_null(strstr(buf, "oifname \"mcvm3h\" jump to_guest"));
	cr_assert_not_null(strstr(buf, "ip saddr != 10.231.0.14 drop"));
	cr_assert_not_null(strstr(buf,
	    "oifname \"eth0\" ip saddr 10.231.0.14 masquerade"));
	cr_assert_not_null(strstr(buf,
	    "ip daddr 192.0.2.53 udp dport 53 accept"));
	cr_assert_not_null(strstr(buf, "ip daddr 169.254.169.254/32 drop"));
	cr_assert_not_null(strstr(buf, "ip daddr 10.0.0.0/8 drop"));
	cr_assert_not_null(strstr(buf, "ip daddr 100.64.0.0/10 drop"));
	cr_assert_not_null(strstr(buf, "ip daddr 224.0.0.0/4 drop"));
	cr_assert_not_null(strstr(buf, "ip daddr 198.51.100.0/24 drop"));
	cr_assert_not_null(strstr(buf, "ip daddr 10.231.0.0/24 drop"));
	cr_assert_null(strstr(buf, "2001:db8"));
	cr_assert_not_null(strstr(buf, "oifname != \"eth0\" drop"));
	cr_assert_not_null(strstr(buf, "meta nfproto != ipv4 drop"));
	cr_assert_not_null(strstr(buf, "ct state established,related accept"));
	/* DNS to the resolver comes before the denied ranges. */
	cr_assert_lt(strstr(buf, "192.0.2.53 udp dport 53 accept"),
	    strstr(buf, "10.0.0.0/8 drop"));
}

/* Inbound only: replies to the host, nothing else, no NAT, no uplink. */
Test(netd, rule_text_inbound)
{
	static char		 buf[NETD_RULES_MAX];
	struct cidr		 pool = cidr("10.231.0.0/24");
	struct cidr		 res = cidr("192.0.2.53");
	struct netd_rules	 r;
	const char		*to_host;

	memset(&r, 0, sizeof(r));
	r.slot = 3;
	r.inbound = 1;
	r.uplink = "eth0";	/* ignored */
	r.pool = &pool;
	r.resolver = &res;	/* ignored */
	cr_assert_eq(slot_addr(&pool, 3, &r.addr), 0);
	cr_assert_eq(netd_rules_text(&r, buf, sizeof(buf)), 0);
	cr_assert(strncmp(buf, "table inet mcvm_3 {\n", 20) == 0);
	cr_assert_not_null(strstr(buf, "\t\tiifname \"mcvm3h\" jump refuse\n"),
	    "%s", buf);
	cr_assert_not_null(strstr(buf, "\t\toifname \"mcvm3h\" drop\n"));
	cr_assert_not_null(strstr(buf, "iifname \"mcvm3h\" jump to_host"));
	cr_assert_null(strstr(buf, "masquerade"));
	cr_assert_null(strstr(buf, "nat"));
	cr_assert_null(strstr(buf, "eth0"));
	cr_assert_null(strstr(buf, "dport 53"), "no DNS");
	cr_assert_null(strstr(buf, "accept\n\t}"), "no chain ends accepting");
	/* To the host: its own address only, replies only, the rest refused. */
	cr_assert_not_null(to_host = strstr(buf, "\tchain to_host {\n"));
	cr_assert_str_eq(to_host, "\tchain to_host {\n"
	    "\t\tmeta nfproto != ipv4 drop\n"
	    "\t\tip saddr != 10.231.0.14 drop\n"
	    "\t\tct state established,related accept\n"
	    "\t\tjump refuse\n\t}\n"
	    "\tchain refuse {\n"
	    "\t\tmeta l4proto tcp reject with tcp reset\n"
	    "\t\treject with icmpx type admin-prohibited\n\t}\n}\n");
	cr_assert_eq(netd_rules_text(&r, buf, 100), -1, "overflow is caught");
}

Test(netd, rule_text_without_resolver)
{
	static char		 buf[NETD_RULES_MAX];
	struct cidr		 pool = cidr("10.231.0.0/24");
	struct netd_rules	 r;

	memset(&r, 0, sizeof(r));
	r.slot = 0;
	r.uplink = "eth0";
	cr_assert_eq(slot_addr(&pool, 0, &r.addr), 0);
	cr_assert_eq(netd_rules_text(&r, buf, sizeof(buf)), 0);
	cr_assert_null(strstr(buf, "dport 53 accept"));
	cr_assert_not_null(strstr(buf, "udp dport 53 drop"));
	cr_assert_eq(netd_rules_text(&r, buf, 100), -1, "overflow is caught");
}
