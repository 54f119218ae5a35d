/*
 * mcvmd's side of frontd: authentication, and tool calls and their
 * cancellation, which go to the dispatcher (dispatch.c).  frontd is
 * inside the suite, so a malformed message from it is fatal here.
 *
 * frontd keeps the tokens it was told are good for a while (its
 * authcache.c).  A revocation or rotation is answered to the operator
 * only once frontd has forgotten them (front_flush): it confirms within
 * FLUSH_TIMEOUT_SEC, or it is killed and started afresh, with nothing
 * kept.  A frontd that is not running keeps nothing either.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "mcvmd.h"
#include "dispatch.h"
#include "vm.h"
#include "msg_front.h"
#include "task.h"
#include "tools.h"

#define FLUSH_WAITS_MAX		CONTROL_MAX_CLIENTS
#define FLUSH_TIMEOUT_SEC	2

/* An operator's answer, held until frontd has forgotten the tokens. */
struct flush_wait {
	struct ctl_ticket	 t;		/* serial 0: a free slot */
	uint32_t		 turn;		/* its FLUSH's peerid */
	char			 text[CONTROL_MSG_MAX];
};

static struct flush_wait	 waits[FLUSH_WAITS_MAX];
static uint32_t			 flush_turn;
static struct event		 flush_ev;
static int			 flush_ev_init;

static void
front_auth(struct imsgev *iev, struct imsg *imsg)
{
	struct msg_front_auth		 m;
	struct msg_front_auth_result	 res;
	struct ws_auth			 auth;
	struct ibuf			*b;
	int64_t				 left;

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
	res.expires_in = 0;
	if (auth.status == AUTH_OK && auth.expires != 0) {
		left = auth.expires - (int64_t)time(NULL);
		res.expires_in = left > UINT32_MAX ? UINT32_MAX :
		    left > 1 ? (uint32_t)left : 1;
	}
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

/* Whether a revocation can be answered after a flush (else: retry). */
int
front_flush_room(void)
{
	size_t	 i;

	for (i = 0; i < FLUSH_WAITS_MAX; i++)
		if (waits[i].t.serial == 0)
			return 1;
	return 0;
}

/* Every held answer with turn up to last (all: UINT32_MAX) is given. */
static void
flush_settle(uint32_t last, const char *why)
{
	char	 text[CONTROL_MSG_MAX + 128];
	size_t	 i, pending = 0;

	for (i = 0; i < FLUSH_WAITS_MAX; i++) {
		if (waits[i].t.serial == 0)
			continue;
		if (waits[i].turn > last) {
			pending++;
			continue;
		}
		(void)snprintf(text, sizeof(text), "%s%s", waits[i].text,
		    why);
		control_settle(&waits[i].t, 1, text);
		memset(&waits[i], 0, sizeof(waits[i]));
	}
	if (pending == 0 && flush_ev_init)
		evtimer_del(&flush_ev);
}

/* frontd did not confirm in time: it is replaced, and keeps nothing. */
static void
flush_timeout(int fd, short event, void *arg)
{
	struct child	*c = child_by_id(PROC_FRONTD);

	log_warnx("frontd did not confirm within %d s that it forgot the "
	    "revoked tokens; killing it", FLUSH_TIMEOUT_SEC);
	if (c->pid > 0)
		(void)kill(c->pid, SIGKILL);
	flush_settle(UINT32_MAX, "; frontd did not confirm that it forgot "
	    "the tokens, and was restarted");
}

/*
 * Answers t with text once frontd has forgotten every token it accepted.
 * The caller made sure of front_flush_room().
 */
void
front_flush(const struct ctl_ticket *t, const char *text)
{
	struct child		*c = child_by_id(PROC_FRONTD);
	struct ctl_ticket	 held = *t;
	struct timeval		 tv = { FLUSH_TIMEOUT_SEC, 0 };
	size_t			 i;

	if (!c->iev_live || c->state != CHILD_RUNNING) {
		control_settle(&held, 1, text);
		return;
	}
	for (i = 0; i < FLUSH_WAITS_MAX && waits[i].t.serial != 0; i++)
		continue;
	if (i == FLUSH_WAITS_MAX)
		fatalx("%s: no room; front_flush_room was not asked",
		    __func__);
	waits[i].t = *t;
	waits[i].turn = ++flush_turn;
	(void)snprintf(waits[i].text, sizeof(waits[i].text), "%s", text);
	if (imsgev_compose(&c->iev, IMSG_FRONT_AUTH_FLUSH, waits[i].turn, 0,
	    -1, NULL, 0) == -1)
		fatal("%s", __func__);
	if (!flush_ev_init) {
		evtimer_set(&flush_ev, flush_timeout, NULL);
		flush_ev_init = 1;
	}
	if (!evtimer_pending(&flush_ev, NULL))
		evtimer_add(&flush_ev, &tv);
}

/* frontd exited: the one that starts next keeps nothing. */
void
front_flush_lost(void)
{
	flush_settle(UINT32_MAX, "");
}

static void
front_flushed(struct imsg *imsg)
{
	if (msg_front_auth_flushed_get(imsg) == -1 ||
	    imsg->hdr.peerid > flush_turn)
		fatalx("frontd: malformed %s", imsg_type_name(imsg->hdr.type));
	flush_settle(imsg->hdr.peerid, "");
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
	case IMSG_FRONT_AUTH_FLUSHED:
		front_flushed(imsg);
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
