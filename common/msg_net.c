/* netd's messages: see msg_net.h and, for the rules, msg_vmm.h. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "msg.h"
#include "msg_net.h"
#include "netslot.h"
#include "proto.h"
#include "tools.h"
#include "validate.h"

static void
put_forwards(struct ibuf *b, uint32_t n, const struct msg_net_forward *fwd)
{
	uint32_t	 i;

	if (n > NET_FWD_MAX) {
		b->err = EMSGSIZE;
		return;
	}
	m_add_u32(b, n);
	for (i = 0; i < n; i++) {
		m_add_u32(b, fwd[i].host);
		m_add_u32(b, fwd[i].guest);
	}
}

/* Host ports from min up; guest ports from 1. */
static int
get_forwards(struct mreader *r, uint32_t *n, struct msg_net_forward *fwd,
    uint32_t min)
{
	uint32_t	 i;

	if (m_get_u32(r, n) == -1)
		return -1;
	if (*n > NET_FWD_MAX)
		return m_fail();
	for (i = 0; i < *n; i++) {
		if (m_get_u32(r, &fwd[i].host) == -1 ||
		    m_get_u32(r, &fwd[i].guest) == -1)
			return -1;
		if (fwd[i].host < min || fwd[i].host > PORT_MAX ||
		    fwd[i].guest == 0 || fwd[i].guest > PORT_MAX)
			return m_fail();
	}
	return 0;
}

int
msg_net_preflight_get(struct imsg *imsg)
{
	return m_empty(imsg, IMSG_NET_PREFLIGHT);
}

void
msg_net_preflight_result_put(struct ibuf *b,
    const struct msg_net_preflight_result *m)
{
	m_add_u32(b, m->problems);
	m_add_str(b, m->text);
}

int
msg_net_preflight_result_get(struct imsg *imsg,
    struct msg_net_preflight_result *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_NET_PREFLIGHT_RESULT) == -1 ||
	    m_get_u32(&r, &m->problems) == -1 ||
	    m_get_str(&r, &m->text, NET_PREFLIGHT_TEXT_MAX) == -1)
		return -1;
	return m_end(&r);
}

void
msg_net_setup_put(struct ibuf *b, const struct msg_net_setup *m)
{
	m_add_str(b, m->vm_id);
	m_add_u32(b, m->slot);
	m_add_u32(b, m->network);
	put_forwards(b, m->nforwards, m->fwd);
}

int
msg_net_setup_get(struct imsg *imsg, struct msg_net_setup *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_NET_SETUP) == -1 ||
	    m_get_vm_id(&r, &m->vm_id) == -1 ||
	    m_get_u32(&r, &m->slot) == -1 ||
	    m_get_u32(&r, &m->network) == -1 ||
	    get_forwards(&r, &m->nforwards, m->fwd, 0) == -1)
		return -1;
	if (m->slot >= SLOTS_MAX || m->network > NET_INBOUND)
		return m_fail();
	return m_end(&r);
}

void
msg_net_teardown_put(struct ibuf *b, const struct msg_net_teardown *m)
{
	m_add_str(b, m->vm_id);
	m_add_u32(b, m->slot);
}

int
msg_net_teardown_get(struct imsg *imsg, struct msg_net_teardown *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_NET_TEARDOWN) == -1 ||
	    m_get_vm_id(&r, &m->vm_id) == -1 ||
	    m_get_u32(&r, &m->slot) == -1)
		return -1;
	if (m->slot >= SLOTS_MAX)
		return m_fail();
	return m_end(&r);
}

int
msg_net_list_get(struct imsg *imsg)
{
	return m_empty(imsg, IMSG_NET_LIST);
}

void
msg_net_entry_put(struct ibuf *b, const struct msg_net_entry *m)
{
	m_add_str(b, m->vm_id);
	m_add_u32(b, m->slot);
}

int
msg_net_entry_get(struct imsg *imsg, struct msg_net_entry *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_NET_ENTRY) == -1 ||
	    m_get_str(&r, &m->vm_id, ID_MAX) == -1 ||
	    m_get_u32(&r, &m->slot) == -1)
		return -1;
	if (m->slot >= SLOTS_MAX)
		return m_fail();
	return m_end(&r);
}

void
msg_net_fd_put(struct ibuf *b, const struct msg_net_fd *m)
{
	m_add_u32(b, m->role);
}

int
msg_net_fd_get(struct imsg *imsg, struct msg_net_fd *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_NET_FD) == -1 ||
	    m_get_u32(&r, &m->role) == -1)
		return -1;
	if (m->role < NET_FD_NETNS || m->role > NET_FD_TAP)
		return m_fail();
	return m_end(&r);
}

void
msg_net_result_put(struct ibuf *b, const struct msg_net_result *m)
{
	m_add_u32(b, m->status);
	m_add_str(b, m->address);
	m_add_str(b, m->gateway);
	m_add_str(b, m->resolver);
	m_add_str(b, m->mac);
	put_forwards(b, m->nforwards, m->fwd);
	m_add_str(b, m->text);
}

int
msg_net_result_get(struct imsg *imsg, struct msg_net_result *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_NET_RESULT) == -1 ||
	    m_get_u32(&r, &m->status) == -1 ||
	    m_get_str(&r, &m->address, NET_STR_MAX) == -1 ||
	    m_get_str(&r, &m->gateway, NET_STR_MAX) == -1 ||
	    m_get_str(&r, &m->resolver, NET_STR_MAX) == -1 ||
	    m_get_str(&r, &m->mac, NET_STR_MAX) == -1 ||
	    get_forwards(&r, &m->nforwards, m->fwd, 1) == -1 ||
	    m_get_str(&r, &m->text, NET_TEXT_MAX) == -1)
		return -1;
	return m_end(&r);
}
