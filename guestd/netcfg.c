/*
 * AGENT_NET_CONFIG in the guest: the host (mcvm-netd, through mcvmd and
 * the VM monitor) names the NIC by its MAC and gives its address, the
 * gateway and the resolver.  The values are checked here again; the NIC
 * gets the address with ioctls, the default route goes through the
 * gateway, and /etc/resolv.conf is written only when there is a resolver.
 * An empty gateway (a NIC for port forwards only, which can reach nothing)
 * means no default route: a connection out fails at once in the guest
 * ("Network is unreachable") instead of at the host's rules.
 *
 * A guest restored from another VM's state (a fork's) has that VM's NIC,
 * with its MAC, address and route: when no NIC has the MAC asked for and
 * the guest has exactly one Ethernet NIC, that one takes the MAC, and the
 * default route is replaced rather than added.
 */
#include <sys/types.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <net/if_arp.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <net/route.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "netcfg.h"
#include "rdfile.h"

static int
ipv4_parse(const char *s, struct in_addr *a)
{
	return inet_pton(AF_INET, s, a) == 1 ? 0 : -1;
}

static int
mac_parse(const char *s, char *out)
{
	size_t	 i;

	if (strlen(s) != NETCFG_MAC_LEN)
		return -1;
	for (i = 0; i < NETCFG_MAC_LEN; i++) {
		if (i % 3 == 2) {
			if (s[i] != ':')
				return -1;
		} else if (!isxdigit((unsigned char)s[i]))
			return -1;
		out[i] = (char)tolower((unsigned char)s[i]);
	}
	out[NETCFG_MAC_LEN] = '\0';
	return 0;
}

/* 0, or -1 when a value is not what it must be. */
int
netcfg_parse(const char *address, const char *gateway, const char *resolver,
    const char *mac, struct netcfg *nc)
{
	char		 a[INET_ADDRSTRLEN + 4], *slash, *ep;
	unsigned long	 plen;
	uint32_t	 mask, ip, gw;

	memset(nc, 0, sizeof(*nc));
	if (strlen(address) >= sizeof(a))
		return -1;
	memcpy(a, address, strlen(address) + 1);
	if ((slash = strchr(a, '/')) == NULL)
		return -1;
	*slash++ = '\0';
	if (!isdigit((unsigned char)slash[0]))
		return -1;
	errno = 0;
	plen = strtoul(slash, &ep, 10);
	if (errno != 0 || *ep != '\0' || plen < 1 || plen > 30 ||
	    ipv4_parse(a, &nc->addr) == -1 ||
	    mac_parse(mac, nc->mac) == -1)
		return -1;
	nc->prefixlen = (unsigned int)plen;
	mask = 0xffffffffU << (32 - plen);
	ip = ntohl(nc->addr.s_addr);
	if ((ip & ~mask) == 0 || (ip & ~mask) == ~mask)
		return -1;
	if (gateway[0] != '\0') {
		/* The gateway is on the guest's subnet and is not the guest. */
		if (ipv4_parse(gateway, &nc->gateway) == -1)
			return -1;
		gw = ntohl(nc->gateway.s_addr);
		if ((ip & mask) != (gw & mask) || ip == gw)
			return -1;
		nc->has_gateway = 1;
	}
	if (resolver[0] != '\0') {
		if (ipv4_parse(resolver, &nc->resolver) == -1)
			return -1;
		nc->has_resolver = 1;
	}
	return 0;
}

/* The name of the NIC with this MAC, from sysfs. */
static int
nic_find(const char *mac, char *name, size_t len)
{
	char		 path[300], buf[NETCFG_MAC_LEN + 2];
	struct dirent	*de;
	DIR		*d;
	int		 found = -1;

	if ((d = opendir(NETCFG_SYSNET)) == NULL)
		return -1;
	while (found == -1 && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || strlen(de->d_name) >= len ||
		    snprintf(path, sizeof(path), "%s/%s/address",
		    NETCFG_SYSNET, de->d_name) >= (int)sizeof(path))
			continue;
		if (read_small_file(path, buf, sizeof(buf)) < NETCFG_MAC_LEN)
			continue;
		buf[NETCFG_MAC_LEN] = '\0';
		if (strcasecmp(buf, mac) == 0) {
			memcpy(name, de->d_name, strlen(de->d_name) + 1);
			found = 0;
		}
	}
	closedir(d);
	return found;
}

/* The name of the guest's one Ethernet NIC, from sysfs: 0, or -1. */
static int
nic_only(char *name, size_t len)
{
	char		 path[300], buf[16];
	struct dirent	*de;
	DIR		*d;
	int		 n = 0;

	if ((d = opendir(NETCFG_SYSNET)) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || strlen(de->d_name) >= len ||
		    snprintf(path, sizeof(path), "%s/%s/type", NETCFG_SYSNET,
		    de->d_name) >= (int)sizeof(path) ||
		    read_small_file(path, buf, sizeof(buf)) <= 0 ||
		    atoi(buf) != ARPHRD_ETHER)
			continue;
		memcpy(name, de->d_name, strlen(de->d_name) + 1);
		n++;
	}
	closedir(d);
	return n == 1 ? 0 : -1;
}

/* Gives NIC name the MAC mac ("52:54:00:..."), down while it changes. */
static int
nic_set_mac(int s, const char *name, const char *mac)
{
	struct ifreq	 ifr;
	unsigned int	 b[6];
	short		 flags;
	int		 i, rc;

	if (sscanf(mac, "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3],
	    &b[4], &b[5]) != 6) {
		errno = EINVAL;
		return -1;
	}
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, name, strlen(name) + 1);
	if (ioctl(s, SIOCGIFFLAGS, &ifr) == -1)
		return -1;
	flags = ifr.ifr_flags;
	ifr.ifr_flags = (short)(flags & ~IFF_UP);
	if ((flags & IFF_UP) && ioctl(s, SIOCSIFFLAGS, &ifr) == -1)
		return -1;
	ifr.ifr_hwaddr.sa_family = ARPHRD_ETHER;
	for (i = 0; i < 6; i++)
		ifr.ifr_hwaddr.sa_data[i] = (char)b[i];
	rc = ioctl(s, SIOCSIFHWADDR, &ifr);
	ifr.ifr_flags = flags;
	if ((flags & IFF_UP) && ioctl(s, SIOCSIFFLAGS, &ifr) == -1)
		rc = -1;
	return rc;
}

static void
sin_set(struct sockaddr *sa, struct in_addr a)
{
	struct sockaddr_in	*sin = (struct sockaddr_in *)sa;

	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_addr = a;
}

/*
 * Replaces a small system file with text: written beside it, then renamed
 * over it.  0, or -1 with errno set and the file as it was.
 */
int
guest_file_replace(const char *path, const char *text)
{
	char	 tmp[PATH_MAX];
	size_t	 len = strlen(text);
	ssize_t	 w;
	int	 fd, saved, closed;

	if (snprintf(tmp, sizeof(tmp), "%s.new", path) >= (int)sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
	    O_NOFOLLOW, 0644)) == -1)
		return -1;
	w = write(fd, text, len);
	saved = errno;
	closed = close(fd);
	if (w != (ssize_t)len || closed == -1 || rename(tmp, path) == -1) {
		if (w == -1)
			errno = saved;
		else if (w != (ssize_t)len)
			errno = EIO;
		saved = errno;
		(void)unlink(tmp);
		errno = saved;
		return -1;
	}
	return 0;
}

static int
resolv_write(struct in_addr a)
{
	char	 ip[INET_ADDRSTRLEN], text[INET_ADDRSTRLEN + 64];

	if (inet_ntop(AF_INET, &a, ip, sizeof(ip)) == NULL)
		return -1;
	(void)snprintf(text, sizeof(text), "# written by mcvm-guestd\n"
	    "nameserver %s\n", ip);
	return guest_file_replace(NETCFG_RESOLV, text);
}

/* 0, or -1 with errno and err saying what failed. */
int
netcfg_apply(const struct netcfg *nc, char *err, size_t errlen)
{
	struct ifreq	 ifr;
	struct rtentry	 rt, del;
	struct in_addr	 mask;
	char		 name[IFNAMSIZ];
	int		 s, e, rc;

	if ((s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1) {
		(void)snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	if (nic_find(nc->mac, name, sizeof(name)) == -1) {
		if (nic_only(name, sizeof(name)) == -1) {
			(void)snprintf(err, errlen, "no NIC has MAC %s",
			    nc->mac);
			errno = ENODEV;
			goto fail;
		}
		if (nic_set_mac(s, name, nc->mac) == -1) {
			(void)snprintf(err, errlen, "MAC %s on %s: %s",
			    nc->mac, name, strerror(errno));
			goto fail;
		}
	}
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, name, strlen(name) + 1);
	sin_set(&ifr.ifr_addr, nc->addr);
	if (ioctl(s, SIOCSIFADDR, &ifr) == -1) {
		(void)snprintf(err, errlen, "address on %s: %s", name,
		    strerror(errno));
		goto fail;
	}
	mask.s_addr = htonl(0xffffffffU << (32 - nc->prefixlen));
	sin_set(&ifr.ifr_netmask, mask);
	if (ioctl(s, SIOCSIFNETMASK, &ifr) == -1) {
		(void)snprintf(err, errlen, "netmask on %s: %s", name,
		    strerror(errno));
		goto fail;
	}
	if (ioctl(s, SIOCGIFFLAGS, &ifr) == -1 ||
	    (ifr.ifr_flags |= IFF_UP, ioctl(s, SIOCSIFFLAGS, &ifr)) == -1) {
		(void)snprintf(err, errlen, "%s up: %s", name,
		    strerror(errno));
		goto fail;
	}
	if (!nc->has_gateway)
		goto done;
	memset(&rt, 0, sizeof(rt));
	sin_set(&rt.rt_dst, (struct in_addr){ 0 });
	sin_set(&rt.rt_genmask, (struct in_addr){ 0 });
	sin_set(&rt.rt_gateway, nc->gateway);
	rt.rt_flags = RTF_UP | RTF_GATEWAY;
	rt.rt_dev = name;
	/* The same route again, or a restored guest's old one: replaced. */
	if ((rc = ioctl(s, SIOCADDRT, &rt)) == -1 && errno == EEXIST) {
		del = rt;
		sin_set(&del.rt_gateway, (struct in_addr){ 0 });
		del.rt_flags = RTF_UP;
		(void)ioctl(s, SIOCDELRT, &del);
		rc = ioctl(s, SIOCADDRT, &rt);
	}
	if (rc == -1) {
		(void)snprintf(err, errlen, "default route: %s",
		    strerror(errno));
		goto fail;
	}
 done:
	close(s);
	if (nc->has_resolver && resolv_write(nc->resolver) == -1) {
		(void)snprintf(err, errlen, "%s: %s", NETCFG_RESOLV,
		    strerror(errno));
		return -1;
	}
	return 0;
 fail:
	e = errno;
	close(s);
	errno = e;
	return -1;
}
