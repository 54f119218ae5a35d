/*
 * The codecs of frontd's messages (IMSG_FRONT_*), called by frontd and
 * mcvmd; the rules are msg_vmm.h's.  A call is the imsg's peerid.
 */
#ifndef MCVM_MSG_FRONT_H
#define MCVM_MSG_FRONT_H

#include <stdint.h>

#include "imsg.h"
#include "proto.h"
#include "tools.h"

/* IMSG_FRONT_AUTH -> AUTH_RESULT */
struct msg_front_auth {
	uint8_t		 hash[TOKEN_HASH_LEN];	/* the token's */
};

struct msg_front_auth_result {
	uint32_t	 status;	/* enum auth_status */
	const char	*workspace;	/* TOOL_WS_NAME_MAX; "" unless OK */
	uint32_t	 expires_in;	/* seconds the token has left; 0: no
					   end (or not OK) */
};

/*
 * IMSG_FRONT_AUTH_FLUSH -> AUTH_FLUSHED, both empty: frontd forgets every
 * token it accepted (a workspace was revoked, or its tokens rotated) and
 * says so, echoing the peerid.
 */

/*
 * IMSG_FRONT_TOOL -> TOOL_RESULT, PROGRESS before it.  The getter finds
 * the tool by id and reads its arguments with tool_args_decode(), which
 * checks them as frontd did; args.tool is the tool.  The putter writes
 * args as args.tool's, under the id in tool.
 */
struct msg_front_tool {
	uint8_t		 hash[TOKEN_HASH_LEN];
	uint32_t	 tool;		/* enum tool_id */
	struct tool_args args;
};

struct msg_front_tool_result {
	uint32_t	 status;	/* enum tool_status */
	const char	*json;		/* TOOL_RESULT_MAX */
};

/* IMSG_FRONT_PROGRESS: a step of the call */
struct msg_front_progress {
	uint64_t	 progress;
	uint64_t	 total;		/* 0 unknown */
	const char	*message;	/* TOOL_PROGRESS_MAX */
};

void	 msg_front_auth_put(struct ibuf *, const struct msg_front_auth *);
int	 msg_front_auth_get(struct imsg *, struct msg_front_auth *);
void	 msg_front_auth_result_put(struct ibuf *,
	    const struct msg_front_auth_result *);
int	 msg_front_auth_result_get(struct imsg *,
	    struct msg_front_auth_result *);
void	 msg_front_tool_put(struct ibuf *, const struct msg_front_tool *);
int	 msg_front_tool_get(struct imsg *, struct msg_front_tool *);
/*
 * IMSG_FRONT_IMAGE -> IMAGE_FD (upload: a pipe to write the body into;
 * download: the image, read-only), then TOOL_RESULT: a PUT or GET of
 * /v1/images/{name}.  An error answers with the TOOL_RESULT alone.
 */
#define FRONT_UPLOAD_MAX	(16ULL << 40)	/* bytes of one upload */
#define IMAGE_TICKET_LEN	64		/* hex: a URL's permission */
#define IMAGE_TICKET_SECS	600		/* an image URL's life */
struct msg_front_image {
	uint8_t		 hash[TOKEN_HASH_LEN];	/* unless ticket */
	const char	*ticket;	/* "" or IMAGE_TICKET_LEN hex */
	const char	*name;		/* an object name */
	uint32_t	 write;		/* 0 or 1 */
	uint32_t	 overwrite;	/* 0 or 1 */
	uint64_t	 bytes;		/* write: 1..FRONT_UPLOAD_MAX */
};

void	 msg_front_image_put(struct ibuf *, const struct msg_front_image *);
int	 msg_front_image_get(struct imsg *, struct msg_front_image *);
int	 msg_front_image_fd_get(struct imsg *);
int	 image_ticket_valid(const char *);
void	 msg_front_tool_result_put(struct ibuf *,
	    const struct msg_front_tool_result *);
int	 msg_front_tool_result_get(struct imsg *,
	    struct msg_front_tool_result *);
int	 msg_front_cancel_get(struct imsg *);
int	 msg_front_auth_flush_get(struct imsg *);
int	 msg_front_auth_flushed_get(struct imsg *);
void	 msg_front_progress_put(struct ibuf *,
	    const struct msg_front_progress *);
int	 msg_front_progress_get(struct imsg *, struct msg_front_progress *);


/*
 * Large results by descriptor.  A tool's result that is too large for
 * one message (a screenshot, an image's data) travels as a file
 * descriptor beside a small header, IMSG_FRONT_TOOL_RESULT_FD: from its
 * producer (a VM monitor, stored) through mcvmd, which passes the
 * descriptor on without reading it, to frontd, which streams it to the
 * client in bounded chunks.
 *
 * The descriptor is a memfd or regular file holding exactly size bytes
 * from offset 0, or the read end of a pipe that yields size bytes and
 * then end-of-file.  frontd checks both, and the tool's budget.
 *
 * The codec follows the rules of the other msg_*.h: the getter returns 0,
 * or -1 with errno EBADMSG when the imsg is of another type, a field is
 * missing or out of its bound, or bytes are left over; strings point into
 * the imsg.  The fd is not a field: the sender sets it with imsg_set_fd(),
 * the receiver takes it with imsg_get_fd().
 */
#define PAYLOAD_MIME_MAX	63	/* bytes of a media type */

/* IMSG_FRONT_TOOL_RESULT_FD: peerid is frontd's call */
struct msg_front_tool_result_fd {
	uint32_t	 status;	/* enum tool_status: TOOL_OK */
	const char	*json;		/* the result's structured part: a
					   JSON object, TOOL_RESULT_MAX */
	uint32_t	 kind;		/* enum tool_result: TR_IMAGE or
					   TR_TEXT */
	const char	*mime;		/* type/subtype, PAYLOAD_MIME_MAX;
					   image/... for TR_IMAGE */
	uint64_t	 size;		/* the descriptor's bytes, 1 or more */
};

void	 msg_front_tool_result_fd_put(struct ibuf *,
	    const struct msg_front_tool_result_fd *);
int	 msg_front_tool_result_fd_get(struct imsg *,
	    struct msg_front_tool_result_fd *);
int	 payload_mime_valid(const char *, uint32_t);

/*
 * MCP tasks.  IMSG_FRONT_TASK is IMSG_FRONT_TOOL with the task's asked
 * time to live before it: mcvmd answers at once with a TOOL_RESULT whose
 * JSON is the created task, and runs the call on.  TASK_GET and
 * TASK_CANCEL name a task of the token's workspace; their TOOL_RESULT's
 * JSON is the task as it stands (TOOL_NOT_FOUND: none of this
 * workspace's has that id).
 */
#define TASK_ID_LEN		32		/* hex */
#define TASK_TTL_DEFAULT_MS	(60ULL * 60 * 1000)
#define TASK_TTL_MAX_MS		(24ULL * 60 * 60 * 1000)
#define TASK_TTL_MIN_MS		1000ULL
#define TASK_POLL_MS		1000		/* pollIntervalMs */

struct msg_front_task {
	uint64_t		 ttl_ms;	/* 0: the default */
	struct msg_front_tool	 tool;
};

/* IMSG_FRONT_TASK_STATUS (tasks/get), IMSG_FRONT_TASK_CANCEL */
struct msg_front_task_status {
	uint8_t		 hash[TOKEN_HASH_LEN];
	const char	*id;		/* TASK_ID_LEN hex */
};
#define msg_front_task_cancel	msg_front_task_status

void	 msg_front_task_put(struct ibuf *, const struct msg_front_task *);
int	 msg_front_task_get(struct imsg *, struct msg_front_task *);
void	 msg_front_task_status_put(struct ibuf *,
	    const struct msg_front_task_status *);
int	 msg_front_task_status_get(struct imsg *,
	    struct msg_front_task_status *);
void	 msg_front_task_cancel_put(struct ibuf *,
	    const struct msg_front_task_cancel *);
int	 msg_front_task_cancel_get(struct imsg *,
	    struct msg_front_task_cancel *);
int	 task_id_valid(const char *);

#endif
