/*
 * Large results by descriptor, from their producer (a VM monitor,
 * stored) to frontd: mcvmd checks the header and passes the descriptor
 * on as it came, without reading it, so that a result's bytes never go
 * through mcvmd's heap.  frontd checks the descriptor itself and streams
 * it to the client (frontd/payload.c).
 */
#include <sys/stat.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "mcvmd.h"
#include "fdreply.h"
#include "tools.h"

/*
 * Answers frontd's call (frontd's instance in the high 32 bits, its
 * request id in the low; see vm_front_call) with a result whose bytes
 * are in fd, which this takes: it is closed once sent, or at once when
 * the call's frontd is gone.  Returns 0 when sent or dropped for a gone
 * caller, -1 when m or fd would not make a well-formed message (nothing
 * is sent: the caller answers the call with an error).
 */
int
front_reply_fd(uint64_t call, const struct msg_front_tool_result_fd *m,
    int fd)
{
	struct child	*c = child_by_id(PROC_FRONTD);
	struct ibuf	*b;
	struct stat	 st;

	if (fd == -1 || fstat(fd, &st) == -1 ||
	    !(S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode)) ||
	    m->status != TOOL_OK || m->json == NULL ||
	    strlen(m->json) > TOOL_RESULT_MAX || m->mime == NULL ||
	    !payload_mime_valid(m->mime, m->kind) || m->size == 0) {
		log_warnx("call %u: a result by descriptor refused: %s",
		    (uint32_t)call, fd == -1 ? "no descriptor" :
		    "a bad header or descriptor");
		if (fd != -1)
			close(fd);
		errno = EINVAL;
		return -1;
	}
	if (call == 0 || call >> 32 != c->gen || !c->iev_live ||
	    c->state != CHILD_RUNNING) {
		log_debug("answer to call %u of frontd instance %u dropped",
		    (uint32_t)call, (uint32_t)(call >> 32));
		close(fd);
		return 0;
	}
	if ((b = imsg_create(&c->iev.ibuf, IMSG_FRONT_TOOL_RESULT_FD,
	    (uint32_t)call, 0, strlen(m->json) + 64)) == NULL)
		fatal("%s", __func__);
	msg_front_tool_result_fd_put(b, m);
	imsg_set_fd(b, fd);
	if (imsgev_close(&c->iev, b) == -1)
		fatal("%s", __func__);
	return 0;
}
