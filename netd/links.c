/*
 * mcvm-netd's kernel side: network namespaces, links, addresses (libnl-3
 * route), the tap, and nftables tables (libnftables).
 *
 * A VM's netns is made with unshare(CLONE_NEWNET) on netd's own thread;
 * its fd comes from SIOCGSKNS on a socket made inside it, so no file is
 * opened for it, and netd returns to the netns it runs in (its fd got the
 * same way at start-up) before anything else happens.  A failure to
 * return is fatal: netd never acts in the wrong namespace.
 */
#include <sys/types.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <linux/sockios.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/bridge.h>
#include <netlink/route/link/veth.h>
#include <netlink/route/netconf.h>
#include <netlink/route/route.h>
#include <nftables/libnftables.h>

#include "config.h"
#include "log.h"
#include "netd.h"
#include "links.h"

static int		 host_ns = -1;	/* the netns netd runs in */
static struct nl_sock	*host_sk;
static struct nft_ctx	*nft;

/* Before the chroot and the sandbox: the host netns, netlink, nftables. */
void
netd_links_init(void)
{
	int	 s;

	if ((s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC,
	    NETLINK_ROUTE)) == -1)
		fatal("%s: socket", __func__);
	if ((host_ns = ioctl(s, SIOCGSKNS)) == -1)
		fatal("%s: SIOCGSKNS", __func__);
	close(s);
	if (fcntl(host_ns, F_SETFD, FD_CLOEXEC) == -1)
		fatal("%s: fcntl", __func__);
	if ((host_sk = nl_socket_alloc()) == NULL ||
	    nl_connect(host_sk, NETLINK_ROUTE) < 0)
		fatalx("%s: netlink", __func__);
	if ((nft = nft_ctx_new(NFT_CTX_DEFAULT)) == NULL)
		fatalx("%s: nft_ctx_new", __func__);
	if (nft_ctx_buffer_output(nft) != 0 || nft_ctx_buffer_error(nft) != 0)
		fatalx("%s: nft buffers", __func__);
}

static void
host_ns_return(void)
{
	if (setns(host_ns, CLONE_NEWNET) == -1)
		fatal("%s: setns", __func__);
}

/* Runs a command with libnftables; its error text goes to err. */
int
netd_nft_run(const char *cmd, char *err, size_t errlen, char *out,
    size_t outlen)
{
	const char	*e, *o;
	int		 rc;

	rc = nft_run_cmd_from_buffer(nft, cmd);
	e = nft_ctx_get_error_buffer(nft);
	o = nft_ctx_get_output_buffer(nft);
	if (err != NULL)
		(void)snprintf(err, errlen, "%s", e != NULL ? e : "");
	if (out != NULL)
		(void)snprintf(out, outlen, "%s", o != NULL ? o : "");
	return rc == 0 ? 0 : -1;
}

int
netd_table_delete(uint32_t slot)
{
	char	 table[NETD_TABLE_MAX], cmd[2 * NETD_TABLE_MAX + 64], err[256];

	netd_table_name(slot, table, sizeof(table));
	/* "destroy" is newer than nftables 1.0.6: add-then-delete instead. */
	(void)snprintf(cmd, sizeof(cmd), "add table inet %s\n"
	    "delete table inet %s\n", table, table);
	if (netd_nft_run(cmd, err, sizeof(err), NULL, 0) == -1) {
		log_warnx("delete table %s: %s", table, err);
		return -1;
	}
	return 0;
}

/* Calls cb with the slot of every table of ours. */
int
netd_tables_list(void (*cb)(uint32_t, void *), void *arg)
{
	static char	 out[NETD_RULES_MAX];
	char		 err[256], *line, *save, name[NETD_TABLE_MAX + 1];
	uint32_t	 slot;

	if (netd_nft_run("list tables inet", err, sizeof(err), out,
	    sizeof(out)) == -1) {
		log_warnx("list tables: %s", err);
		return -1;
	}
	for (line = strtok_r(out, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "table inet %32s", name) == 1 &&
		    netd_table_slot(name, &slot) == 0)
			cb(slot, arg);
	}
	return 0;
}

static int
link_index(struct nl_sock *sk, const char *name)
{
	struct rtnl_link	*l;
	int			 idx;

	if (rtnl_link_get_kernel(sk, 0, name, &l) < 0)
		return -1;
	idx = rtnl_link_get_ifindex(l);
	rtnl_link_put(l);
	return idx;
}

/* Sets IFF_UP and, if given, the alias. */
static int
link_up(struct nl_sock *sk, const char *name, const char *alias)
{
	struct rtnl_link	*l, *c;
	int			 rc;

	if ((rc = rtnl_link_get_kernel(sk, 0, name, &l)) < 0)
		return rc;
	if ((c = rtnl_link_alloc()) == NULL) {
		rtnl_link_put(l);
		return -NLE_NOMEM;
	}
	rtnl_link_set_flags(c, IFF_UP);
	if (alias != NULL)
		rtnl_link_set_ifalias(c, alias);
	rc = rtnl_link_change(sk, l, c, 0);
	rtnl_link_put(c);
	rtnl_link_put(l);
	return rc;
}

static int
addr_add(struct nl_sock *sk, int ifindex, uint32_t ip, unsigned int plen)
{
	struct rtnl_addr	*a;
	struct nl_addr		*local;
	uint32_t		 be = htonl(ip);
	int			 rc;

	if ((a = rtnl_addr_alloc()) == NULL)
		return -NLE_NOMEM;
	if ((local = nl_addr_build(AF_INET, &be, sizeof(be))) == NULL) {
		rtnl_addr_put(a);
		return -NLE_NOMEM;
	}
	nl_addr_set_prefixlen(local, (int)plen);
	rtnl_addr_set_ifindex(a, ifindex);
	rc = rtnl_addr_set_local(a, local);
	if (rc == 0)
		rc = rtnl_addr_add(sk, a, 0);
	nl_addr_put(local);
	rtnl_addr_put(a);
	return rc;
}

static int
tap_open(uint32_t slot, int *tapfd)
{
	struct ifreq	 ifr;
	int		 fd;

	if ((fd = open(NETD_TUN_PATH, O_RDWR | O_CLOEXEC)) == -1)
		return -1;
	memset(&ifr, 0, sizeof(ifr));
	netd_ifname(slot, NETD_IF_TAP, ifr.ifr_name, sizeof(ifr.ifr_name));
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
	if (ioctl(fd, TUNSETIFF, &ifr) == -1) {
		close(fd);
		return -1;
	}
	*tapfd = fd;
	return 0;
}

/* Inside the VM's netns: the tap, the bridge, and the veth to the host. */
static int
vm_links(struct nl_sock *sk, uint32_t slot, int tapfd_ok, char *err,
    size_t errlen)
{
	struct rtnl_link	*br = NULL, *veth = NULL, *peer;
	char			 bname[NETD_IFNAME_MAX], gname[NETD_IFNAME_MAX];
	char			 hname[NETD_IFNAME_MAX], tname[NETD_IFNAME_MAX];
	int			 rc, bidx, gidx, tidx;

	netd_ifname(slot, NETD_IF_BRIDGE, bname, sizeof(bname));
	netd_ifname(slot, NETD_IF_VM, gname, sizeof(gname));
	netd_ifname(slot, NETD_IF_HOST, hname, sizeof(hname));
	netd_ifname(slot, NETD_IF_TAP, tname, sizeof(tname));
	(void)tapfd_ok;

	if ((br = rtnl_link_bridge_alloc()) == NULL ||
	    (veth = rtnl_link_veth_alloc()) == NULL) {
		rc = -NLE_NOMEM;
		goto fail;
	}
	rtnl_link_set_name(br, bname);
	if ((rc = rtnl_link_add(sk, br, NLM_F_CREATE | NLM_F_EXCL)) < 0) {
		(void)snprintf(err, errlen, "bridge: %s", nl_geterror(rc));
		goto fail;
	}
	rtnl_link_set_name(veth, gname);
	peer = rtnl_link_veth_get_peer(veth);
	rtnl_link_set_name(peer, hname);
	rtnl_link_set_ns_fd(peer, host_ns);
	rtnl_link_put(peer);
	if ((rc = rtnl_link_add(sk, veth, NLM_F_CREATE | NLM_F_EXCL)) < 0) {
		(void)snprintf(err, errlen, "veth %s: %s", hname,
		    nl_geterror(rc));
		goto fail;
	}
	if ((bidx = link_index(sk, bname)) == -1 ||
	    (gidx = link_index(sk, gname)) == -1 ||
	    (tidx = link_index(sk, tname)) == -1) {
		rc = -NLE_OBJ_NOTFOUND;
		(void)snprintf(err, errlen, "links vanished");
		goto fail;
	}
	if ((rc = rtnl_link_enslave_ifindex(sk, bidx, gidx)) < 0 ||
	    (rc = rtnl_link_enslave_ifindex(sk, bidx, tidx)) < 0 ||
	    (rc = link_up(sk, bname, NULL)) < 0 ||
	    (rc = link_up(sk, gname, NULL)) < 0 ||
	    (rc = link_up(sk, tname, NULL)) < 0) {
		(void)snprintf(err, errlen, "bridge ports: %s",
		    nl_geterror(rc));
		goto fail;
	}
	rc = 0;
 fail:
	if (br != NULL)
		rtnl_link_put(br);
	if (veth != NULL)
		rtnl_link_put(veth);
	return rc < 0 ? -1 : 0;
}

/*
 * A new netns for a VM, with lo up and, with the network on, a tap (its
 * fd in *tapfd), a bridge and a veth whose other end lands in netd's own
 * netns as NETD_IFPREFIX<slot>h.  Nothing is left behind on failure.
 */
int
netd_vm_netns(uint32_t slot, int network, int *nsfd, int *tapfd, char *err,
    size_t errlen)
{
	struct nl_sock	*sk = NULL;
	int		 s, rc = -1, saved = EIO;

	*nsfd = *tapfd = -1;
	if (unshare(CLONE_NEWNET) == -1) {
		saved = errno;
		(void)snprintf(err, errlen, "unshare: %s", strerror(errno));
		return -saved;
	}
	if ((s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC,
	    NETLINK_ROUTE)) == -1)
		fatal("%s: socket", __func__);
	*nsfd = ioctl(s, SIOCGSKNS);
	saved = errno;
	close(s);
	if (*nsfd == -1) {
		host_ns_return();
		(void)snprintf(err, errlen, "SIOCGSKNS: %s", strerror(saved));
		return -saved;
	}
	(void)fcntl(*nsfd, F_SETFD, FD_CLOEXEC);
	if ((sk = nl_socket_alloc()) == NULL ||
	    nl_connect(sk, NETLINK_ROUTE) < 0) {
		(void)snprintf(err, errlen, "netlink in the VM netns");
		goto out;
	}
	if (link_up(sk, "lo", NULL) < 0) {
		(void)snprintf(err, errlen, "lo up failed");
		goto out;
	}
	if (network) {
		if (tap_open(slot, tapfd) == -1) {
			saved = errno;
			(void)snprintf(err, errlen, "tap: %s",
			    strerror(errno));
			goto out;
		}
		if (vm_links(sk, slot, 1, err, errlen) == -1)
			goto out;
	}
	rc = 0;
 out:
	if (sk != NULL)
		nl_socket_free(sk);
	host_ns_return();
	if (rc == -1) {
		/* The VM end goes with the netns; the host end may not. */
		if (*tapfd != -1)
			close(*tapfd);
		close(*nsfd);
		*nsfd = *tapfd = -1;
		if (network)
			(void)netd_host_link_delete(slot);
		return -saved;
	}
	return 0;
}

/* The host end of the veth: the gateway address, the VM id as alias, up. */
int
netd_host_link_setup(uint32_t slot, const char *vmid, uint32_t gateway,
    char *err, size_t errlen)
{
	char	 name[NETD_IFNAME_MAX];
	int	 idx, rc;

	netd_ifname(slot, NETD_IF_HOST, name, sizeof(name));
	if ((idx = link_index(host_sk, name)) == -1) {
		(void)snprintf(err, errlen, "%s is missing", name);
		return -1;
	}
	if ((rc = addr_add(host_sk, idx, gateway, SLOT_PREFIX)) < 0 ||
	    (rc = link_up(host_sk, name, vmid)) < 0) {
		(void)snprintf(err, errlen, "%s: %s", name, nl_geterror(rc));
		return -1;
	}
	return 0;
}

/* Deletes the host end (and so the pair); 0 also when there was none. */
int
netd_host_link_delete(uint32_t slot)
{
	struct rtnl_link	*l;
	char			 name[NETD_IFNAME_MAX];
	int			 rc;

	netd_ifname(slot, NETD_IF_HOST, name, sizeof(name));
	if ((l = rtnl_link_alloc()) == NULL)
		return -1;
	rtnl_link_set_name(l, name);
	rc = rtnl_link_delete(host_sk, l);
	rtnl_link_put(l);
	if (rc < 0 && rc != -NLE_OBJ_NOTFOUND && rc != -NLE_NODEV) {
		log_warnx("delete %s: %s", name, nl_geterror(rc));
		return -1;
	}
	return 0;
}

/* Calls cb with the slot and alias (the VM id) of every host end. */
int
netd_host_links_list(void (*cb)(uint32_t, const char *, void *), void *arg)
{
	struct nl_cache		*cache;
	struct nl_object	*o;
	const char		*alias;
	uint32_t		 slot;

	if (rtnl_link_alloc_cache(host_sk, AF_UNSPEC, &cache) < 0)
		return -1;
	for (o = nl_cache_get_first(cache); o != NULL;
	    o = nl_cache_get_next(o)) {
		struct rtnl_link *l = (struct rtnl_link *)o;

		if (netd_ifname_slot(rtnl_link_get_name(l), NETD_IF_HOST,
		    &slot) == -1)
			continue;
		alias = rtnl_link_get_ifalias(l);
		cb(slot, alias != NULL ? alias : "", arg);
	}
	nl_cache_free(cache);
	return 0;
}

/* 1 on, 0 off, -1 unknown. */
int
netd_ipv4_forwarding(void)
{
	struct nl_cache		*cache;
	struct rtnl_netconf	*nc;
	int			 v = -1;

	if (rtnl_netconf_alloc_cache(host_sk, &cache) < 0)
		return -1;
	if ((nc = rtnl_netconf_get_all(cache, AF_INET)) != NULL) {
		if (rtnl_netconf_get_forwarding(nc, &v) < 0)
			v = -1;
		rtnl_netconf_put(nc);
	}
	nl_cache_free(cache);
	return v == -1 ? -1 : v != 0;
}

int
netd_link_exists(const char *name)
{
	return link_index(host_sk, name) != -1;
}

/*
 * Appends to buf one line per route (not through a link of ours, not a
 * default route) that overlaps the pool; returns their number.
 */
int
netd_pool_overlaps(const struct cidr *pool, char *buf, size_t len)
{
	struct nl_cache		*routes, *links;
	struct nl_object	*o;
	struct nl_addr		*dst;
	struct rtnl_nexthop	*nh;
	char			 d[INET6_ADDRSTRLEN + 4], dev[NETD_IFNAME_MAX];
	char			 ifn[NETD_IFNAME_MAX];
	uint32_t		 p, a, slot;
	unsigned int		 plen;
	int			 n = 0;
	size_t			 off;

	memcpy(&p, pool->addr, sizeof(p));
	p = ntohl(p);
	if (rtnl_route_alloc_cache(host_sk, AF_INET, 0, &routes) < 0)
		return -1;
	if (rtnl_link_alloc_cache(host_sk, AF_UNSPEC, &links) < 0) {
		nl_cache_free(routes);
		return -1;
	}
	for (o = nl_cache_get_first(routes); o != NULL;
	    o = nl_cache_get_next(o)) {
		struct rtnl_route *r = (struct rtnl_route *)o;

		dst = rtnl_route_get_dst(r);
		if (dst == NULL || nl_addr_get_family(dst) != AF_INET ||
		    (plen = nl_addr_get_prefixlen(dst)) == 0)
			continue;
		memcpy(&a, nl_addr_get_binary_addr(dst), sizeof(a));
		a = ntohl(a);
		if (!netd_cidr_overlap(p, pool->prefixlen, a, plen))
			continue;
		dev[0] = '\0';
		if (rtnl_route_get_nnexthops(r) > 0 &&
		    (nh = rtnl_route_nexthop_n(r, 0)) != NULL &&
		    rtnl_link_i2name(links, rtnl_route_nh_get_ifindex(nh),
		    ifn, sizeof(ifn)) != NULL) {
			if (netd_ifname_slot(ifn, NETD_IF_HOST, &slot) == 0)
				continue;
			(void)snprintf(dev, sizeof(dev), "%s", ifn);
		}
		(void)nl_addr2str(dst, d, sizeof(d));
		off = strlen(buf);
		(void)snprintf(buf + off, len - off,
		    "pool overlaps the route to %s%s%s\n", d,
		    dev[0] != '\0' ? " dev " : "", dev);
		n++;
	}
	nl_cache_free(links);
	nl_cache_free(routes);
	return n;
}
