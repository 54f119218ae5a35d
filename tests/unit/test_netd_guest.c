/*
 * The guest's side of VM networking: the checks guestd applies to
 * AGENT_NET_CONFIG before it touches the NIC.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <string.h>

#include "netcfg.h"

static int
parse(const char *a, const char *g, const char *r, const char *m)
{
	struct netcfg	 nc;

	return netcfg_parse(a, g, r, m, &nc);
}

Test(netd_guest, good)
{
	struct netcfg	 nc;
	char		 ip[INET_ADDRSTRLEN];

	cr_assert_eq(netcfg_parse("10.231.0.22/30", "10.231.0.21", "",
	    "52:54:00:6D:00:05", &nc), 0);
	cr_assert_eq(nc.prefixlen, 30u);
	cr_assert_eq(nc.has_resolver, 0);
	cr_assert_eq(nc.has_gateway, 1);
	cr_assert_str_eq(nc.mac, "52:54:00:6d:00:05");
	inet_ntop(AF_INET, &nc.gateway, ip, sizeof(ip));
	cr_assert_str_eq(ip, "10.231.0.21");
	cr_assert_eq(netcfg_parse("10.231.0.22/30", "10.231.0.21",
	    "192.0.2.53", "52:54:00:6d:00:05", &nc), 0);
	cr_assert_eq(nc.has_resolver, 1);
	cr_assert_eq(parse("192.168.1.10/24", "192.168.1.1", "",
	    "52:54:00:00:00:01"), 0);
}

/* Inbound only: an address and no gateway, so no default route. */
Test(netd_guest, no_gateway)
{
	struct netcfg	 nc;

	cr_assert_eq(netcfg_parse("10.231.0.22/30", "", "",
	    "52:54:00:6d:00:05", &nc), 0);
	cr_assert_eq(nc.has_gateway, 0);
	cr_assert_eq(nc.has_resolver, 0);
	cr_assert_eq(nc.prefixlen, 30u);
	cr_assert_eq(parse("10.231.0.23/30", "", "", "52:54:00:6d:00:05"), -1,
	    "a broadcast address without a gateway");
	cr_assert_eq(parse("10.231.0.20/30", "", "", "52:54:00:6d:00:05"), -1,
	    "a network address without a gateway");
	cr_assert_eq(parse("10.231.0.22", "", "", "52:54:00:6d:00:05"), -1);
	cr_assert_eq(parse("10.231.0.22/30", "", "", ""), -1);
}

Test(netd_guest, bad)
{
	const char	*mac = "52:54:00:6d:00:05";

	cr_assert_eq(parse("10.231.0.22", "10.231.0.21", "", mac), -1);
	cr_assert_eq(parse("10.231.0.22/31", "10.231.0.23", "", mac), -1);
	cr_assert_eq(parse("10.231.0.22/0", "10.231.0.21", "", mac), -1);
	cr_assert_eq(parse("10.231.0.22/+30", "10.231.0.21", "", mac), -1);
	cr_assert_eq(parse("10.231.0.22/30x", "10.231.0.21", "", mac), -1);
	cr_assert_eq(parse("10.231.0.300/30", "10.231.0.21", "", mac), -1);
	/* gateway off the subnet, equal to the guest, or a broadcast */
	cr_assert_eq(parse("10.231.0.22/30", "10.231.0.25", "", mac), -1);
	cr_assert_eq(parse("10.231.0.22/30", "10.231.0.22", "", mac), -1);
	cr_assert_eq(parse("10.231.0.23/30", "10.231.0.21", "", mac), -1);
	cr_assert_eq(parse("10.231.0.20/30", "10.231.0.21", "", mac), -1);
	cr_assert_eq(parse("10.231.0.22/30", " ", "", mac), -1);
	cr_assert_eq(parse("10.231.0.22/30", "10.231.0.21x", "", mac), -1);
	cr_assert_eq(parse("10.231.0.22/30", "10.231.0.21", "x", mac), -1);
	cr_assert_eq(parse("10.231.0.22/30", "10.231.0.21", "::1", mac), -1);
	cr_assert_eq(parse("10.231.0.22/30", "10.231.0.21", "",
	    "52:54:00:6d:00"), -1);
	cr_assert_eq(parse("10.231.0.22/30", "10.231.0.21", "",
	    "52-54-00-6d-00-05"), -1);
	cr_assert_eq(parse("10.231.0.22/30", "10.231.0.21", "",
	    "52:54:00:6d:00:0g"), -1);
	cr_assert_eq(parse("10.231.0.22/30", "10.231.0.21", "", ""), -1);
}
