/*
 * What every part of stored answers mcvmd with: see stored.h.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "msg_store.h"
#include "proc.h"
#include "stored.h"

static struct imsgev	*parent;

/* The channel to mcvmd the answers go on. */
void
stored_reply_init(struct imsgev *iev)
{
	parent = iev;
}

/* Truncation is acceptable in a message meant for people. */
void
textf(char *buf, size_t len, const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	(void)vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

/* The RESULT that ends request id. */
void
stored_result(uint32_t id, int status, enum disk_format fmt, uint64_t bytes,
    const char *text)
{
	struct msg_store_result	 m;
	struct ibuf		*b;

	m.status = (uint32_t)status;
	m.format = fmt;
	m.disk_bytes = bytes;
	m.text = text;
	if ((b = imsg_create(&parent->ibuf, IMSG_STORE_RESULT, id, 0,
	    64 + strlen(text))) == NULL)
		fatal("%s", __func__);
	msg_store_result_put(b, &m);
	if (imsgev_close(parent, b) == -1)
		fatal("%s", __func__);
	if (status != 0)
		log_debug("request %u: %s", id, text);
}
