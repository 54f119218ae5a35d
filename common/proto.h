/*
 * Every message exchanged between mcvm's processes, grouped per peer.
 * mcvmd is the hub: each child talks to it alone.  mcvmctl speaks the
 * control group over the control socket.
 *
 * Field layouts are given beside each type, in the order written with
 * msg.h's typed fields.  The version is checked at startup: a child whose
 * IMSG_HELLO carries another version is refused.
 */
#ifndef MCVM_PROTO_H
#define MCVM_PROTO_H

#include <stdint.h>

#define MCVM_PROTO_VERSION	1

/* The fd on which every child finds its socket to mcvmd. */
#define PROC_PARENT_SOCK_FILENO	3

#define TOKEN_HASH_LEN		32	/* SHA-256 */

#define IMSG_TYPES(X)							\
	/* any child <-> mcvmd */					\
	X(IMSG_HELLO,		1)	/* u32 version */		\
	X(IMSG_VERBOSE,		2)	/* u32 level */			\
									\
	/* mcvmctl <-> mcvmd, over the control socket */		\
	X(IMSG_CTL_OK,		100)	/* str message */		\
	X(IMSG_CTL_FAIL,	101)	/* str message */		\
	X(IMSG_CTL_END,		102)	/* (none) */			\
	X(IMSG_CTL_STATUS,	103)	/* (none) */			\
	X(IMSG_CTL_STATUS_PROC,	104)	/* str title, u32 pid,		\
					   u32 uid, u64 capeff,		\
					   u64 capprm, u32 seccomp,	\
					   u32 nonewprivs,		\
					   u32 restarts, str state */	\
	X(IMSG_CTL_TOKEN_ISSUE,	105)	/* str workspace, bytes hash,	\
					   u64 ttl seconds (0 none),	\
					   u32 ws flags, u32 rotate */	\
	X(IMSG_CTL_WS_REVOKE,	106)	/* str workspace */		\
	X(IMSG_CTL_WS_LIST,	107)	/* (none) */			\
	X(IMSG_CTL_WS_ENTRY,	108)	/* str workspace, u32 flags,	\
					   u64 created, u64 revoked,	\
					   u32 live tokens,		\
					   u64 next expiry */		\
									\
	/* mcvm-frontd <-> mcvmd */					\
	X(IMSG_FRONT_AUTH,	200)	/* bytes hash */		\
	X(IMSG_FRONT_AUTH_RESULT, 201)	/* u32 auth status,		\
					   str workspace */		\
	X(IMSG_FRONT_TOOL,	202)	/* bytes hash, u32 tool id,	\
					   tool arguments */		\
	X(IMSG_FRONT_TOOL_RESULT, 203)	/* u32 tool status,		\
					   str json */			\
	X(IMSG_FRONT_CANCEL,	204)	/* (none): cancels peerid */	\
									\
	/* mcvm-netd <-> mcvmd */					\
	X(IMSG_NET_PREFLIGHT,	300)	/* (none) */			\
	X(IMSG_NET_PREFLIGHT_RESULT, 301) /* u32 problems, str text */	\
									\
	/* mcvm-stored <-> mcvmd */					\
	X(IMSG_STORE_PREFLIGHT,	400)	/* (none) */			\
	X(IMSG_STORE_PREFLIGHT_RESULT, 401) /* u32 reflink, str text */

enum imsg_type {
	IMSG_NONE = 0,
#define IMSG_ENUM(name, val)	name = val,
	IMSG_TYPES(IMSG_ENUM)
#undef IMSG_ENUM
};

const char	*imsg_type_name(uint32_t);

/* IMSG_FRONT_AUTH_RESULT status */
enum auth_status {
	AUTH_OK = 0,
	AUTH_UNKNOWN,		/* no such token: 401 */
	AUTH_EXPIRED,		/* 401 */
	AUTH_REVOKED,		/* 401 */
};

/* IMSG_FRONT_TOOL_RESULT status */
enum tool_status {
	TOOL_OK = 0,
	TOOL_ERROR,		/* a tool error: isError result, 4xx/5xx */
	TOOL_DENIED,		/* authentication failed: 401 */
	TOOL_NOT_FOUND,		/* unknown or foreign id: 404 */
	TOOL_UNAVAILABLE,	/* back end not built yet or down: 501/503 */
};

/* workspace flags */
#define WS_ALLOW_NETWORK	0x1

#endif
