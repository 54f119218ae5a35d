/*
 * mcvmd's side of frontd: authentication, and tool calls and their
 * cancellation, which go to the dispatcher (dispatch.c).  frontd is
 * inside the suite, so a malformed message from it is fatal here.
 */
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "mcvmd.h"
#include "dispatch.h"
#include "vm.h"
#include "msg_front.h"
#include "task.h"
#include "tools.h"

static void
front_auth(struct imsgev *iev, struct imsg *imsg)
{
	struct msg_front_auth		 m;
	struct msg_front_auth_result	 res;
	struct ws_auth			 auth;
	struct ibuf			*b;

	if (msg_front_auth_get(imsg, &m) == -1)
		fatalx("frontd: malformed %s", imsg_type_name(imsg->hdr.type));
	if (state_token_auth(m.hash, &auth) == -1) {
		/* A database error denies; it never grants. */
		auth.status = AUTH_UNAVAILABLE;
		auth.name[0] = '\0';
	}
	if (auth.status != AUTH_OK)
		auth.name[0] = '\0';
	if ((b = imsg_create(&iev->ibuf, IMSG_FRONT_AUTH_RESULT,
	    imsg->hdr.peerid, 0, 64)) == NULL)
		fatal("%s", __func__);
	res.status = auth.status;
	res.workspace = auth.name;
	msg_front_auth_result_put(b, &res);
	if (imsgev_close(iev, b) == -1)
		fatal("%s", __func__);
}

static void
front_cancel(struct imsgev *iev, struct imsg *imsg)
{
	if (msg_front_cancel_get(imsg) == -1)
		fatalx("frontd: malformed %s", imsg_type_name(imsg->hdr.type));
	log_debug("%s: cancel of request %u", __func__, imsg->hdr.peerid);
	dispatch_cancel(call_id(imsg->hdr.peerid));
}

void
front_imsg(struct imsgev *iev, struct imsg *imsg)
{
	switch (imsg->hdr.type) {
	case IMSG_FRONT_AUTH:
		front_auth(iev, imsg);
		break;
	case IMSG_FRONT_TOOL:
		dispatch_tool(iev, imsg);
		break;
	case IMSG_FRONT_CANCEL:
		front_cancel(iev, imsg);
		break;
	case IMSG_FRONT_IMAGE:
		image_front(imsg);
		break;
	case IMSG_FRONT_TASK:
	case IMSG_FRONT_TASK_STATUS:
	case IMSG_FRONT_TASK_CANCEL:
		task_front(iev, imsg);
		break;
	default:
		fatalx("frontd: unexpected %s",
		    imsg_type_name(imsg->hdr.type));
	}
}
