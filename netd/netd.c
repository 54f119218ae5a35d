/*
 * mcvm-netd: VM network namespaces, links and nftables tables.  It keeps
 * uid 0 but only CAP_NET_ADMIN and CAP_SYS_ADMIN (for setns and unshare),
 * in a kill-by-default seccomp filter.  Its one peer is mcvmd.
 *
 * Per VM slot n (a /30 of the pool at pool + 4n: gateway +1, guest +2):
 *
 *   netns netd runs in                 the VM's netns (an fd, no name)
 *   mcvm<n>h  gateway/30  <-- veth -->  mcvm<n>g --+
 *   table inet mcvm_<n>                            +-- bridge mcvm<n>b
 *   listeners for port forwards        mcvm<n>t  --+   (the tap: QEMU)
 *
 * The VM's netns always exists; with the network off it holds only lo.
 * Inbound only (network off with port forwards) it has the same links as
 * with the network on, but its table lets the guest answer the forwarded
 * connections and do nothing else, and it gets no gateway or resolver.
 * Its fd, and the tap's, go to mcvmd and netd keeps neither, so the netns
 * and everything in it live exactly as long as the VM's QEMU (or mcvmd)
 * holds them.  Only the host end of the veth, the table and the forward
 * listeners live in netd's netns, all named with the mcvm prefix; netd
 * never touches a link or table without it.  The host end carries the VM
 * id as its alias, which is how IMSG_NET_LIST finds a VM's leftovers after
 * a restart.  Routing and NAT happen in netd's netns: IPv4 forwarding
 * must be on there (the preflight says so; netd changes no sysctl).
 *
 * The tap needs a fresh open of /dev/net/tun per VM.  netd runs in a
 * private mount namespace of its own: before dropping privileges it
 * mounts a tiny read-only tmpfs over <rundir>/empty holding only a bind
 * of /dev/net/tun, and chroots there.  The sandbox allows open only with
 * O_RDWR|O_CLOEXEC, and the chroot holds nothing else to open.
 *
 * A setup for a vm id or slot that has state tears that state down first,
 * so a setup is idempotent; a failed setup leaves nothing behind.
 */
#include <sys/types.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "msg.h"
#include "msg_net.h"
#include "netd.h"
#include "links.h"
#include "forward.h"
#include "privdrop.h"
#include "proc.h"
#include "proto.h"
#include "validate.h"

#define NETD_USAGE	"mcvm-netd [-dhnSv] [-D macro=value] [-f file]"
#define NETD_TEXT_MAX	1024	/* a result's text */
#define NETD_CHROOT_OPTS "size=16k,nr_inodes=8,mode=0755"

struct vmnet {
	int		 active;
	int		 network;
	char		 id[ID_MAX + 1];
};

static struct mcvm_config	 conf;
static struct imsgev		 iev_parent;
static struct vmnet		 vms[SLOTS_MAX];
static int			 fwd_ready;

/*
 * A private mount namespace whose <rundir>/empty is a read-only tmpfs
 * with a bind of /dev/net/tun: the chroot netd opens taps in.
 */
static void
netd_chroot_prepare(const char *empty)
{
	char	 tun[PATH_MAX];
	int	 fd;

	if (snprintf(tun, sizeof(tun), "%s/%s", empty, NETD_TUN_NAME) >=
	    (int)sizeof(tun))
		fatalx("run directory path too long");
	if (unshare(CLONE_NEWNS) == -1)
		fatal("unshare(CLONE_NEWNS)");
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1)
		fatal("mount private");
	if (mount("mcvm-netd", empty, "tmpfs", MS_NOSUID | MS_NOEXEC,
	    NETD_CHROOT_OPTS) == -1)
		fatal("mount tmpfs on %s", empty);
	if ((fd = open(tun, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
	    0600)) == -1)
		fatal("%s", tun);
	close(fd);
	if (mount(NETD_TUN_DEV, tun, NULL, MS_BIND, NULL) == -1)
		fatal("bind %s", NETD_TUN_DEV);
	if (mount(NULL, empty, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY |
	    MS_NOSUID | MS_NOEXEC, NULL) == -1)
		fatal("remount %s read-only", empty);
}

static const char *
net_mode_name(uint32_t network)
{
	switch (network) {
	case NET_ON:
		return "network on";
	case NET_INBOUND:
		return "inbound only";
	default:
		return "network off";
	}
}

static void
send_text_result(uint32_t id, uint32_t status, const char *text)
{
	struct msg_net_result	 m;
	struct ibuf		*b;

	memset(&m, 0, sizeof(m));
	m.status = status;
	m.text = text;
	if ((b = imsg_create(&iev_parent.ibuf, IMSG_NET_RESULT, id, 0,
	    64 + strlen(text))) == NULL)
		fatal("%s", __func__);
	msg_net_result_put(b, &m);
	if (imsgev_close(&iev_parent, b) == -1)
		fatal("%s", __func__);
}


/* Everything a slot has, gone; quiet when there was nothing. */
static void
netd_teardown_slot(uint32_t slot)
{
	netd_fwd_close_slot(slot);
	(void)netd_table_delete(slot);
	(void)netd_host_link_delete(slot);
	memset(&vms[slot], 0, sizeof(vms[slot]));
}

static void
netd_setup(struct imsg *imsg)
{
	struct msg_net_setup	 m;
	struct msg_net_result	 res_m;
	struct slot_addr	 a;
	struct netd_rules	 rules;
	static char		 text[NETD_RULES_MAX];
	const char		*id;
	char			 err[NETD_TEXT_MAX], guest[NETD_ADDR_MAX];
	char			 gw[NETD_ADDR_MAX], res[NETD_ADDR_MAX];
	char			 mac[NETD_MAC_MAX];
	uint32_t		 slot, network, nfwd, i, j;
	int			 nic;
	uint16_t		 hostp[NETD_FWD_MAX], guestp[NETD_FWD_MAX];
	uint16_t		 chosen[NETD_FWD_MAX];
	struct ibuf		*b;
	int			 nsfd = -1, tapfd = -1, e = 0;

	if (msg_net_setup_get(imsg, &m) == -1 || m.slot >= slot_count(&conf))
		fatalx("bad IMSG_NET_SETUP");
	id = m.vm_id;
	slot = m.slot;
	network = m.network;
	nic = network != NET_OFF;
	nfwd = m.nforwards;
	for (i = 0; i < nfwd; i++) {
		hostp[i] = (uint16_t)m.fwd[i].host;
		guestp[i] = (uint16_t)m.fwd[i].guest;
	}
	if (imsg->fd != -1)
		fatalx("IMSG_NET_SETUP with an fd");

	err[0] = '\0';
	if (network == NET_ON && conf.uplink[0] == '\0') {
		(void)snprintf(err, sizeof(err), "no uplink configured: this "
		    "host offers no outbound network; create the VM with "
		    "network off (port forwards work without it)");
		e = ENETUNREACH;
	} else if (nic && !conf.pool_set) {
		(void)snprintf(err, sizeof(err), "no pool configured: this "
		    "host has no addresses for VM NICs; create the VM with "
		    "network off and no port forwards");
		e = ENETUNREACH;
	} else if (!nic && nfwd > 0) {
		(void)snprintf(err, sizeof(err), "port forwards need a NIC: "
		    "network on or inbound only");
		e = EINVAL;
	}
	for (i = 0; e == 0 && i < nfwd; i++)
		for (j = i + 1; j < nfwd; j++)
			if (hostp[i] != 0 && hostp[i] == hostp[j]) {
				(void)snprintf(err, sizeof(err), "port %u is "
				    "given twice", hostp[i]);
				e = EINVAL;
				break;
			}
	if (e != 0) {
		send_text_result(imsg->hdr.peerid, (uint32_t)e, err);
		return;
	}

	/* Whatever this VM or this slot had goes first. */
	for (i = 0; i < SLOTS_MAX; i++)
		if (vms[i].active && strcmp(vms[i].id, id) == 0)
			netd_teardown_slot(i);
	netd_teardown_slot(slot);

	memset(&a, 0, sizeof(a));
	if (nic && slot_addr(&conf.pool, slot, &a) == -1)
		fatalx("slot %u outside the pool", slot);
	if ((e = -netd_vm_netns(slot, nic, &nsfd, &tapfd, err,
	    sizeof(err))) != 0)
		goto fail;
	if (nic) {
		if (netd_host_link_setup(slot, id, a.gateway, err,
		    sizeof(err)) == -1) {
			e = EIO;
			goto fail;
		}
		memset(&rules, 0, sizeof(rules));
		rules.slot = slot;
		rules.inbound = network == NET_INBOUND;
		rules.uplink = conf.uplink;
		rules.addr = a;
		rules.pool = &conf.pool;
		rules.resolver = conf.resolver_set ? &conf.resolver : NULL;
		rules.blocked = conf.blocked;
		rules.nblocked = conf.nblocked;
		if (netd_rules_text(&rules, text, sizeof(text)) == -1) {
			(void)snprintf(err, sizeof(err), "rule set too long");
			e = E2BIG;
			goto fail;
		}
		if (netd_nft_run(text, err, sizeof(err), NULL, 0) == -1) {
			e = EIO;
			goto fail;
		}
		if (!fwd_ready) {
			netd_fwd_init(event_get_base(&iev_parent.ev), &conf);
			fwd_ready = 1;
		}
		for (i = 0; i < nfwd; i++)
			if ((e = netd_fwd_open(slot, a.guest, hostp[i],
			    guestp[i], &chosen[i], err, sizeof(err))) != 0)
				goto fail;
	}

	vms[slot].active = 1;
	vms[slot].network = (int)network;
	(void)snprintf(vms[slot].id, sizeof(vms[slot].id), "%s", id);
	guest[0] = gw[0] = res[0] = mac[0] = '\0';
	if (nic) {
		ip4_text(a.guest, guest, sizeof(guest));
		(void)snprintf(guest + strlen(guest),
		    sizeof(guest) - strlen(guest), "/%d", SLOT_PREFIX);
		slot_mac(slot, mac, sizeof(mac));
	}
	/* Inbound only, the guest has nowhere to route to or ask. */
	if (network == NET_ON) {
		ip4_text(a.gateway, gw, sizeof(gw));
		if (conf.resolver_set && conf.resolver.family == AF_INET)
			(void)inet_ntop(AF_INET, conf.resolver.addr, res,
			    sizeof(res));
	}
	imsgev_send_fd(&iev_parent, IMSG_NET_FD, imsg->hdr.peerid,
	    NET_FD_NETNS, nsfd);
	if (tapfd != -1)
		imsgev_send_fd(&iev_parent, IMSG_NET_FD,
		    imsg->hdr.peerid, NET_FD_TAP, tapfd);
	if ((b = imsg_create(&iev_parent.ibuf, IMSG_NET_RESULT,
	    imsg->hdr.peerid, 0, 256)) == NULL)
		fatal("%s", __func__);
	memset(&res_m, 0, sizeof(res_m));
	res_m.address = guest;
	res_m.gateway = gw;
	res_m.resolver = res;
	res_m.mac = mac;
	res_m.nforwards = nfwd;
	for (i = 0; i < nfwd; i++) {
		res_m.fwd[i].host = chosen[i];
		res_m.fwd[i].guest = guestp[i];
	}
	res_m.text = net_mode_name(network);
	msg_net_result_put(b, &res_m);
	if (imsgev_close(&iev_parent, b) == -1)
		fatal("%s", __func__);
	log_debug("%s: slot %u, %s", id, slot, net_mode_name(network));
	return;
 fail:
	if (nsfd != -1)
		close(nsfd);
	if (tapfd != -1)
		close(tapfd);
	netd_teardown_slot(slot);
	log_warnx("%s: setup failed: %s", id, err);
	send_text_result(imsg->hdr.peerid, (uint32_t)(e != 0 ? e : EIO), err);
}

/* The VM id a slot's host link carries, for the owner check. */
struct alias_find {
	uint32_t	 slot;
	char		 alias[ID_MAX + 1];
};

static void
alias_find_cb(uint32_t slot, const char *alias, void *arg)
{
	struct alias_find	*af = arg;

	if (slot == af->slot)
		(void)snprintf(af->alias, sizeof(af->alias), "%s", alias);
}

static void
netd_teardown(struct imsg *imsg)
{
	struct msg_net_teardown	 m;
	struct alias_find	 af;
	const char		*id;
	char			 text[NETD_TEXT_MAX];
	uint32_t		 slot;

	if (msg_net_teardown_get(imsg, &m) == -1 ||
	    m.slot >= slot_count(&conf) || imsg->fd != -1)
		fatalx("bad IMSG_NET_TEARDOWN");
	id = m.vm_id;
	slot = m.slot;
	memset(&af, 0, sizeof(af));
	af.slot = slot;
	if (vms[slot].active)
		(void)snprintf(af.alias, sizeof(af.alias), "%s", vms[slot].id);
	else
		(void)netd_host_links_list(alias_find_cb, &af);
	if (af.alias[0] != '\0' && strcmp(af.alias, id) != 0) {
		(void)snprintf(text, sizeof(text), "slot %u belongs to %s, "
		    "not %s", slot, af.alias, id);
		send_text_result(imsg->hdr.peerid, EBUSY, text);
		return;
	}
	netd_teardown_slot(slot);
	log_debug("%s: slot %u torn down", id, slot);
	send_text_result(imsg->hdr.peerid, 0, "torn down");
}

struct list_state {
	uint32_t	 id;
	uint8_t		 seen[SLOTS_MAX];
};

static void
list_entry(struct list_state *ls, uint32_t slot, const char *vmid)
{
	struct msg_net_entry	 m;
	struct ibuf		*b;

	if (slot >= SLOTS_MAX || ls->seen[slot])
		return;
	ls->seen[slot] = 1;
	m.vm_id = vmid;
	m.slot = slot;
	if ((b = imsg_create(&iev_parent.ibuf, IMSG_NET_ENTRY, ls->id, 0,
	    64)) == NULL)
		fatal("%s", __func__);
	msg_net_entry_put(b, &m);
	if (imsgev_close(&iev_parent, b) == -1)
		fatal("%s", __func__);
}

static void
list_link_cb(uint32_t slot, const char *alias, void *arg)
{
	struct list_state	*ls = arg;

	/* A link of ours whose owner is unknown cannot be reported. */
	if (!valid_id(alias, "vm-") || slot >= slot_count(&conf)) {
		log_warnx("slot %u: leftover link without a VM id, deleted",
		    slot);
		(void)netd_host_link_delete(slot);
		return;
	}
	list_entry(ls, slot, alias);
}

static void
list_table_cb(uint32_t slot, void *arg)
{
	struct list_state	*ls = arg;

	/* Links go after tables, so a table alone is a leftover. */
	if (!ls->seen[slot]) {
		log_warnx("slot %u: leftover table without a link, deleted",
		    slot);
		(void)netd_table_delete(slot);
	}
}

static void
netd_list(struct imsg *imsg)
{
	static struct list_state ls;
	uint32_t		 i;

	if (msg_net_list_get(imsg) == -1 || imsg->fd != -1)
		fatalx("bad IMSG_NET_LIST");
	memset(&ls, 0, sizeof(ls));
	ls.id = imsg->hdr.peerid;
	for (i = 0; i < SLOTS_MAX; i++)
		if (vms[i].active)
			list_entry(&ls, i, vms[i].id);
	(void)netd_host_links_list(list_link_cb, &ls);
	(void)netd_tables_list(list_table_cb, &ls);
	send_text_result(imsg->hdr.peerid, 0, "listed");
}

static void
netd_preflight(struct imsg *imsg)
{
	struct msg_net_preflight_result	 m;
	struct ibuf			*b;
	static char			 text[NET_PREFLIGHT_TEXT_MAX + 1];
	char				 pool[INET6_ADDRSTRLEN + 4];
	size_t				 off;
	int				 n = 0, fw, ov;

	if (msg_net_preflight_get(imsg) == -1 || imsg->fd != -1)
		fatalx("bad IMSG_NET_PREFLIGHT");
	text[0] = '\0';
#define ADD(...) do {							\
	off = strlen(text);						\
	(void)snprintf(text + off, sizeof(text) - off, __VA_ARGS__);	\
	n++;								\
} while (0)
	if (conf.uplink[0] == '\0')
		ADD("no uplink configured: network on is not available "
		    "(network off is, with port forwards too)\n");
	else if (!netd_link_exists(conf.uplink))
		ADD("uplink %s does not exist\n", conf.uplink);
	if ((fw = netd_ipv4_forwarding()) == 0)
		ADD("IPv4 forwarding is off (sysctl net.ipv4.ip_forward=1)\n");
	else if (fw == -1)
		ADD("IPv4 forwarding: cannot tell\n");
	pool[0] = '\0';
	if (!conf.pool_set)
		ADD("no pool configured\n");
	else {
		(void)netd_cidr_text(&conf.pool, pool, sizeof(pool));
		off = strlen(text);
		if ((ov = netd_pool_overlaps(&conf.pool, text + off,
		    sizeof(text) - off)) == -1)
			ADD("routes: cannot list them\n");
		else
			n += ov;
	}
#undef ADD
	if (n == 0)
		(void)snprintf(text, sizeof(text), "network ready: uplink %s, "
		    "pool %s", conf.uplink, pool);
	else if ((off = strlen(text)) > 0 && text[off - 1] == '\n')
		text[off - 1] = '\0';
	if ((b = imsg_create(&iev_parent.ibuf, IMSG_NET_PREFLIGHT_RESULT,
	    imsg->hdr.peerid, 0, 16 + strlen(text))) == NULL)
		fatal("%s", __func__);
	m.problems = (uint32_t)n;
	m.text = text;
	msg_net_preflight_result_put(b, &m);
	if (imsgev_close(&iev_parent, b) == -1)
		fatal("%s", __func__);
}

/* Everything comes from mcvmd; anything unexpected means it is broken. */
static void
netd_imsg(struct imsg *imsg)
{
	switch (imsg->hdr.type) {
	case IMSG_NET_PREFLIGHT:
		netd_preflight(imsg);
		break;
	case IMSG_NET_SETUP:
		netd_setup(imsg);
		break;
	case IMSG_NET_TEARDOWN:
		netd_teardown(imsg);
		break;
	case IMSG_NET_LIST:
		netd_list(imsg);
		break;
	default:
		fatalx("unexpected %s from mcvmd",
		    imsg_type_name(imsg->hdr.type));
	}
}

static void
netd_dispatch(int fd, short event, void *arg)
{
	proc_child_dispatch(arg, event, netd_imsg);
}

int
main(int argc, char *argv[])
{
	static const int	 caps[] = { CAP_NET_ADMIN, CAP_SYS_ADMIN };
	struct proc_opts	 opts;
	char			 empty[PATH_MAX];

	proc_child_setup(argc, argv, "netd", NETD_USAGE, &opts, &conf);
	if (snprintf(empty, sizeof(empty), "%s/%s", conf.rundir,
	    MCVM_EMPTY_DIR) >= (int)sizeof(empty))
		fatalx("run directory path too long");

	netd_links_init();
	netd_chroot_prepare(empty);
	privdrop(&(struct privdrop){
		.chroot = empty,
		.caps = caps,
		.ncaps = sizeof(caps) / sizeof(caps[0]),
	});
	netd_sandbox(opts.sandbox_debug);
	proc_child_run(&iev_parent, netd_dispatch);
	return 1;
}
