/*
 * mcvmd's side of frontd: authentication and tool calls.  frontd is inside
 * the suite, so a malformed message from it is fatal here.
 *
 * Every tool call carries the token hash again and is authenticated
 * afresh: a token revoked between frontd's check and the call is refused.
 * The arguments are decoded with the shared catalogue (common/tools.c),
 * which re-applies every bound frontd applied.
 *
 * A call is known by its frontd instance and request id together (see
 * vm_front_call): when frontd restarts, the calls of the old one lose
 * their caller, and nothing meant for them reaches the new one.
 */
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "mcvmd.h"
#include "vm.h"
#include "msg.h"
#include "tools.h"

static void
front_auth(struct imsgev *iev, struct imsg *imsg)
{
	struct mreader	 r;
	struct ws_auth	 auth;
	struct ibuf	*b;
	uint8_t		 hash[TOKEN_HASH_LEN];

	m_init(&r, imsg);
	if (m_get_bytes_exact(&r, hash, sizeof(hash)) == -1 ||
	    m_end(&r) == -1)
		fatalx("frontd: malformed %s", imsg_type_name(imsg->hdr.type));
	if (state_token_auth(hash, &auth) == -1) {
		/* A database error denies; it never grants. */
		auth.status = AUTH_UNAVAILABLE;
		auth.name[0] = '\0';
	}
	if (auth.status != AUTH_OK)
		auth.name[0] = '\0';
	if ((b = imsg_create(&iev->ibuf, IMSG_FRONT_AUTH_RESULT,
	    imsg->hdr.peerid, 0, 64)) == NULL)
		fatal("%s", __func__);
	m_add_u32(b, auth.status);
	m_add_str(b, auth.name);
	if (imsgev_close(iev, b) == -1)
		fatal("%s", __func__);
}

static void
front_tool(struct imsgev *iev, struct imsg *imsg)
{
	const struct tool_desc	*tool;
	struct tool_args	 args;
	struct mreader		 r;
	struct ws_auth		 auth;
	uint8_t			 hash[TOKEN_HASH_LEN];
	uint64_t		 call = vm_front_call(imsg->hdr.peerid);
	uint32_t		 id;
	char			 err[TOOL_ERR_MAX], msg[TOOL_MESSAGE_MAX];

	m_init(&r, imsg);
	if (m_get_bytes_exact(&r, hash, sizeof(hash)) == -1 ||
	    m_get_u32(&r, &id) == -1)
		fatalx("frontd: malformed %s", imsg_type_name(imsg->hdr.type));
	if ((tool = tool_by_id(id)) == NULL)
		fatalx("frontd: unknown tool %u", id);
	if (tool_args_decode(&r, tool, &args, err, sizeof(err)) == -1)
		fatalx("frontd: %s: %s", tool->name, err);

	if (state_token_auth(hash, &auth) == -1) {
		vm_reply(call, TOOL_UNAVAILABLE,
		    "authentication is unavailable; retry later");
		return;
	}
	if (auth.status != AUTH_OK) {
		vm_reply(call, TOOL_DENIED,
		    "the token is not valid (unknown, expired or revoked)");
		return;
	}
	log_debug("%s: workspace %s: %s", __func__, auth.name, tool->name);

	if (vm_tool(call, &auth, &args))
		return;
	/* No back end for this tool yet: say so plainly, never fake one. */
	snprintf(msg, sizeof(msg), "%s is not available yet: this mcvm "
	    "build has no back end for it. Nothing was done.", tool->name);
	vm_reply(call, TOOL_UNAVAILABLE, msg);
}

static void
front_cancel(struct imsgev *iev, struct imsg *imsg)
{
	if (imsg->datalen != 0)
		fatalx("frontd: malformed %s", imsg_type_name(imsg->hdr.type));
	log_debug("%s: cancel of request %u", __func__, imsg->hdr.peerid);
	vm_cancel(vm_front_call(imsg->hdr.peerid));
}

void
front_imsg(struct imsgev *iev, struct imsg *imsg)
{
	switch (imsg->hdr.type) {
	case IMSG_FRONT_AUTH:
		front_auth(iev, imsg);
		break;
	case IMSG_FRONT_TOOL:
		front_tool(iev, imsg);
		break;
	case IMSG_FRONT_CANCEL:
		front_cancel(iev, imsg);
		break;
	default:
		fatalx("frontd: unexpected %s",
		    imsg_type_name(imsg->hdr.type));
	}
}
