/* HELLO and VERBOSE: see msg_proc.h and, for the rules, msg_vmm.h. */
#include <string.h>

#include "msg.h"
#include "msg_proc.h"
#include "proto.h"

void
msg_hello_put(struct ibuf *b, const struct msg_hello *m)
{
	m_add_u32(b, m->version);
}

/* Any version is read; the caller refuses another than its own. */
int
msg_hello_get(struct imsg *imsg, struct msg_hello *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_HELLO) == -1 ||
	    m_get_u32(&r, &m->version) == -1)
		return -1;
	return m_end(&r);
}

void
msg_verbose_put(struct ibuf *b, const struct msg_verbose *m)
{
	m_add_u32(b, m->level);
}

int
msg_verbose_get(struct imsg *imsg, struct msg_verbose *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_VERBOSE) == -1 ||
	    m_get_u32(&r, &m->level) == -1)
		return -1;
	return m_end(&r);
}
