/* The guest's NIC configuration from AGENT_NET_CONFIG; see netcfg.c. */
#ifndef MCVM_GUESTD_NETCFG_H
#define MCVM_GUESTD_NETCFG_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#define NETCFG_RESOLV		"/etc/resolv.conf"
#define NETCFG_SYSNET		"/sys/class/net"
#define NETCFG_MAC_LEN		17	/* "52:54:00:00:00:00" */
#define NETCFG_ERR_MAX		256

struct netcfg {
	struct in_addr	 addr;
	unsigned int	 prefixlen;
	int		 has_gateway;	/* 0: no default route */
	struct in_addr	 gateway;
	int		 has_resolver;
	struct in_addr	 resolver;
	char		 mac[NETCFG_MAC_LEN + 1];	/* lower case */
};

int	 netcfg_parse(const char *, const char *, const char *, const char *,
	    struct netcfg *);
int	 netcfg_apply(const struct netcfg *, char *, size_t);
int	 guest_file_replace(const char *, const char *);

#endif
