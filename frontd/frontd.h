/*
 * mcvm-frontd: the network-facing process.  It speaks HTTP, MCP and the
 * JSON tool API to clients and typed imsg fields to mcvmd, its only peer.
 */
#ifndef MCVM_FRONTD_H
#define MCVM_FRONTD_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "config.h"
#include "http.h"
#include "msg_front.h"
#include "payload.h"
#include "peer.h"
#include "proc.h"
#include "proto.h"
#include "tools.h"
#include "validate.h"

#define FRONTD_NAME		"mcvm"
#define FRONTD_VERSION		"0.1"

#define BEARER_TOKEN_MIN	16	/* characters */
#define BEARER_TOKEN_MAX	512
#define BATCH_MAX		32	/* messages in a JSON-RPC batch */
#define SESSION_ID_BYTES	16	/* from getrandom(2), sent as hex */
#define SESSION_ID_LEN		(2 * SESSION_ID_BYTES)
#define SESSIONS_MAX		4096
#define SESSIONS_PER_WS		64	/* the oldest is ended beyond this */
#define SESSION_IDLE_MAX	(24 * 3600)	/* seconds */
#define SESSION_SWEEP_INTERVAL	60	/* seconds */
#define RATE_TABLE_MAX		1024	/* workspaces tracked at once */
#define PROGRESS_INTERVAL	5	/* seconds between progress events */
#define AUTH_NEG_TTL		5	/* seconds a refused token is known */
#define AUTH_GOOD_TTL		60	/* seconds a good one is kept */
#define PROTO_VERSION_MAX	16
#define RPC_ID_MAX		128	/* bytes of a string id or token */
#define RPC_ID_MAX_TEXT		"128"
#define SHOWN_MAX		64	/* bytes of a client's name in errors */

/* Routes. */
enum route {
	ROUTE_NONE = 0,
	ROUTE_MCP,		/* /mcp */
	ROUTE_TOOLS,		/* /v1/tools */
	ROUTE_TOOL,		/* /v1/tools/{name} */
	ROUTE_IMAGE,		/* /v1/images/{name} */
};

/* JSON-RPC error codes. */
#define JSONRPC_PARSE_ERROR	-32700
#define JSONRPC_INVALID_REQUEST	-32600
#define JSONRPC_METHOD_NOT_FOUND -32601
#define JSONRPC_INVALID_PARAMS	-32602
#define JSONRPC_INTERNAL_ERROR	-32603
#define JSONRPC_SERVER_ERROR	-32000	/* transport-level refusal */
#define JSONRPC_NO_SESSION	-32001	/* unknown or ended session */
#define JSONRPC_CANCELLED	-32800	/* request cancelled */
/* Revision 2026-07-28's codes (the range it reserves, -32020 to -32099). */
#define MCP_HEADER_MISMATCH	-32020
#define MCP_MISSING_CLIENT_CAPABILITY -32021
#define MCP_UNSUPPORTED_VERSION	-32022

/* MCP message kinds (msg_classify). */
enum msg_kind {
	MK_INVALID = 0,
	MK_REQUEST,
	MK_NOTIFICATION,
	MK_RESPONSE,
};

struct session;
struct freq;

/*
 * One call into mcvmd: an authentication or a tool call, identified by the
 * imsg peerid.  Its request may already be gone (client closed), in which
 * case the answer is dropped.
 */
struct fop {
	struct fop		*next;		/* in the request's list */
	struct fop		*hnext;		/* in the pending table */
	uint32_t		 peerid;
	struct freq		*req;		/* NULL: orphaned */
	const struct tool_desc	*tool;
	json_t			*rpc_id;	/* MCP request id */
	json_t			*progress;	/* progress token, or NULL */
	size_t			 slot;		/* index in the batch reply */
	int			 cancelled;
	int			 task;		/* enum fop_task */
};

/* What an MCP op's answer is: a tool's result, or a task's (task.c). */
enum fop_task {
	FOP_TOOL = 0,
	FOP_TASK_CREATE,	/* a tools/call made a task */
	FOP_TASK_CREATE_V1,	/* the same, 2025-11-25's form */
	FOP_TASK_GET,		/* tasks/get */
	FOP_TASK_GET_V1,	/* tasks/get, 2025-11-25's form */
	FOP_TASK_RESULT_V1,	/* tasks/result, 2025-11-25 */
	FOP_TASK_CANCEL,	/* tasks/cancel */
	FOP_TASK_CANCEL_V1,	/* tasks/cancel, 2025-11-25's form */
};

/* One HTTP request, from arrival to answer. */
struct freq {
	struct http_conn	*conn;		/* NULL once the client left */
	struct http_request	*http;
	enum route		 route;
	const char		*tool_name;	/* ROUTE_TOOL */
	uint8_t			 hash[TOKEN_HASH_LEN];
	struct peer_key		 peer;
	int			 charged;	/* against the peer's budget */
	char			 workspace[TOOL_WS_NAME_MAX + 1];

	/* MCP */
	char			 session[SESSION_ID_LEN + 1];
	int			 rev2026;	/* served statelessly */
	int			 caps_tasks;	/* its client has tasks */
	json_t			*body;		/* parsed request */
	json_t			*replies;	/* one slot per request */
	int			 batch;
	size_t			 waiting;	/* fops outstanding */
	struct fop		*ops;
	int			 sse;		/* answering over SSE */
	struct event		*progress_ev;
	unsigned int		 progress_n;	/* events sent */
	uint64_t		 progress_last;	/* last value sent */
	unsigned int		 progress_secs;	/* heartbeat clock */
	struct payload		*payload;	/* a result being streamed */

	/* ROUTE_IMAGE */
	int			 image_fd;	/* stored's, or -1 */
	int			 image_write;	/* an upload */
	int			 image_sunk;	/* its body is all sent on */
	char			 ticket[IMAGE_TICKET_LEN + 1]; /* or "" */
};

struct frontd {
	struct mcvm_config	 conf;
	struct proc_opts	 opts;
	struct event_base	*base;
	struct imsgev		 iev;
	json_t			*tools_list;	/* {"tools": [...]} */
	char			*tools_list_text;
	size_t			 tools_list_len;
};

extern struct frontd	*fenv;

/* frontd.c */
uint32_t	 front_peerid(void);
void		 front_send_auth(struct fop *);
int		 front_send_tool(struct fop *, const struct tool_args *);
void		 front_send_image(struct fop *, const struct msg_front_image *);
void		 front_send_cancel(uint32_t);
int		 front_send_task(struct fop *, const struct tool_args *,
		    uint64_t);
void		 front_send_task_ref(struct fop *, uint32_t, const char *);

/* request.c */
void	 req_handle(struct http_conn *, struct http_request *, void *);
void	 req_http_error(struct http_conn *, const char *, int, const char *,
	    void *);
void	 req_auth_result(uint32_t, uint32_t, const char *, uint32_t);
void	 req_tool_result(uint32_t, uint32_t, const char *);
void	 req_image_fd(uint32_t, int);
void	 req_progress(uint32_t, uint64_t, uint64_t, const char *);
void	 req_tool_result_fd(uint32_t, const struct msg_front_tool_result_fd *,
	    int);
json_t	*req_fd_result(const struct fop *,
	    const struct msg_front_tool_result_fd *, int, int *, char *, size_t);
void	 req_stream_fd(struct freq *, int, int, uint32_t, uint64_t,
	    const char *, size_t, const char *, size_t);
void	 req_reply_json(struct freq *, int, json_t *);
void	 req_reply_error(struct freq *, int, const char *, const char *);
void	 req_reply_text(struct freq *, int, const char *, const char *,
	    size_t, const char *);
void	 req_finish(struct freq *);
void	 req_op_link(struct freq *, struct fop *);
void	 req_op_free(struct fop *);
void	 req_op_unlink_free(struct fop *);
void	 req_op_cancel(struct fop *);
struct fop *req_find_op(const char *, json_t *);
int	 host_allowed(const struct mcvm_config *, const char *);
int	 origin_allowed(const struct mcvm_config *, const char *);
int	 query_has_token(const char *);
int	 bearer_parse(const char *, const char **, size_t *);

/* image.c */
int	 image_streams(const struct http_request *);
const char *image_route_name(const char *);
int	 image_query_ok(const char *, int *, char *);
void	 image_route(struct freq *);
void	 image_op_fd(struct fop *, int);
void	 image_op_done(struct fop *, uint32_t, const char *);

/* api.c */
void	 api_call(struct freq *);
void	 api_op_done(struct fop *, uint32_t, const char *);
void	 api_op_done_fd(struct fop *, const struct msg_front_tool_result_fd *,
	    int);

/* mcp.c */
void	 mcp_post(struct freq *);
void	 mcp_delete(struct freq *);
void	 mcp_op_done(struct fop *, uint32_t, const char *);
void	 mcp_op_done_fd(struct fop *, const struct msg_front_tool_result_fd *,
	    int);
void	 mcp_op_progress(struct fop *, uint64_t, uint64_t, const char *);
void	 mcp_cancel_request(struct freq *);
json_t	*mcp_error(json_t *, int, const char *);
json_t	*mcp_result(json_t *, json_t *);
json_t	*mcp_request(struct freq *, json_t *, const char *, json_t *, size_t);
void	 mcp_send(struct freq *);
enum msg_kind msg_classify(json_t *, json_t **, const char **, json_t **,
	    const char **);
json_t	*mcp_readable_id(json_t *);
json_t	*mcp_body_id(struct freq *);
int	 mcp_version_supported(const char *);
const char *mcp_version(size_t);
const char *mcp_instructions(void);
void	 mcp_sessions_init(void);

/*
 * stateless.c: revision 2026-07-28.  For the request being served, the
 * rest of frontd learns from struct freq whether it is one of this
 * revision's (fr->rev2026) and whether the client declared the tasks
 * extension in that request's _meta (fr->caps_tasks); both are set
 * before any method is dispatched and hold for that request alone.
 *
 * STATELESS_TASKS_OFFERED is the one switch for advertising tasks:
 * server/discover lists the io.modelcontextprotocol/tasks extension in
 * its capabilities only when it is 1, which it may be once tasks/get
 * and the rest of the extension are served.
 */
#define STATELESS_VERSION	"2026-07-28"
#define STATELESS_TASKS_OFFERED	1
#define STATELESS_EXT_TASKS	"io.modelcontextprotocol/tasks"
#define STATELESS_META_CAPS	"io.modelcontextprotocol/clientCapabilities"

int	 stateless_caps_tasks(json_t *);
int	 stateless_wanted(const struct http_request *, json_t *);
void	 stateless_post(struct freq *);
int	 stateless_delete(struct freq *);
int	 stateless_finish(json_t *);
const char *stateless_result_members(void);

/* session.c */
struct session *session_new(const char *, const char *);
struct session *session_find(const char *, const char *);
void	 session_end(struct session *);
const char *session_id(const struct session *);
const char *session_version(const struct session *);
void	 session_touch(struct session *);
void	 session_sweep(time_t);
size_t	 session_count(void);
int	 rate_allow(const char *, uint32_t, uint32_t, const struct timespec *);

/* authcache.c */
int	 authcache_get(const uint8_t *, time_t, char [TOOL_WS_NAME_MAX + 1]);
void	 authcache_put(const uint8_t *, uint32_t, const char *, uint32_t,
	    time_t);
void	 authcache_flush(void);
void	 authcache_clear(void);

/* catalog.c */
int	 catalog_init(void);
json_t	*catalog_tools(void);
int	 catalog_args(const struct tool_desc *, json_t *, struct tool_args *,
	    void **, char *, size_t);
json_t	*catalog_result(uint32_t, const char *);

/* task.c */
int	 task_wanted(struct freq *, json_t *);
int	 task_send(struct fop *, json_t *, const struct tool_args *);
json_t	*task_request(struct freq *, json_t *, const char *, json_t *,
	    size_t);
json_t	*task_result(struct fop *, uint32_t, const char *);

/* sandbox.c */
void	 frontd_sandbox(int);

#endif
