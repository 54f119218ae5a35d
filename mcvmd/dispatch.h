/*
 * The dispatcher: the one way a frontd tool call reaches its
 * implementation (dispatch.c).
 *
 * For each call it authenticates the token, resolves the tool's target
 * (tool_desc.target) with its owner (a foreign id answers as a missing
 * one), runs the tool's own argument checks, begins the receipt of a tool
 * that has one, checks the state the target must be in, and only then
 * runs the implementation.  It enforces the result budget
 * (tool_desc.budget) on every answer, and routes a client's cancellation
 * to the tool's cancel, if it has one; otherwise a cancelled call only
 * loses its caller.
 *
 * The implementations live in files by family (tool-vm.c, tool-job.c,
 * tool-file.c), each file ending with its tools' entries, one per tool:
 *	TOOL_IMPL(tool id, run, cancel or NULL, check or NULL,
 *	    receipt or NULL, request_id's parameter index or -1);
 * receipt names what shows an interrupted call's outcome; a tool with one
 * takes a request_id, the parameter of the last column.  The entries
 * form one table, a linker set (common/linkset.h), so a new family is a
 * new file and nothing else.  A tool without an entry is unavailable, and
 * says so; tests/unit/test_dispatch.c lists which, and that no tool has
 * two entries.
 */
#ifndef MCVMD_DISPATCH_H
#define MCVMD_DISPATCH_H

#include <jansson.h>

#include "linkset.h"
#include "mcvmd.h"
#include "msg_front.h"
#include "tools.h"

struct vm;
struct req;
enum req_end;

/* A call while the dispatcher hands it to its implementation. */
struct tool_call {
	uint64_t		 id;		/* see call_id() */
	const struct tool_impl	*impl;
	const struct ws_auth	*auth;
	const struct tool_args	*args;
	struct vm		*vm;		/* TT_VM ... TT_JOB */
	uint32_t		 job;		/* TT_JOB: the guest's number */
	char			 job_id[ID_MAX + 1];
	const char		*rid;		/* the receipt's, or NULL */
};

/* check: 0 to go on; otherwise the call was answered (or is held). */
typedef int	(*tool_check_fn)(struct tool_call *);
typedef void	(*tool_run_fn)(struct tool_call *);
typedef void	(*tool_cancel_fn)(uint64_t);

struct tool_impl {
	enum tool_id	 id;
	tool_run_fn	 run;
	tool_cancel_fn	 cancel;
	tool_check_fn	 check;
	const char	*receipt;
	int		 rid;		/* request_id's index, or -1 */
};

#define TOOL_IMPL(tid, run, cancel, check, receipt, rid)		\
	static const struct tool_impl impl_##tid = {			\
		tid, run, cancel, check, receipt, rid			\
	};								\
	LINKSET_ADD(tool_impls, const struct tool_impl, impl_##tid)
LINKSET_DECLARE(tool_impls, const struct tool_impl);

/* dispatch.c */
void		 dispatch_tool(struct imsgev *, struct imsg *);
int		 dispatch_run(uint64_t, const struct ws_auth *,
		    const struct tool_args *);
void		 dispatch_cancel(uint64_t);
const struct tool_impl *dispatch_impl(enum tool_id);
uint64_t	 call_id(uint32_t);
void		 call_begin(uint64_t, enum tool_id);
void		 call_reply(uint64_t, enum tool_status, const char *);
void		 call_reply_json(uint64_t, json_t *);
int		 call_reply_fd(uint64_t,
		    const struct msg_front_tool_result_fd *, int);
void		 call_progress(uint64_t, uint64_t, uint64_t, const char *);
void		 call_args_free(struct tool_args *);
int		 call_args_copy(struct tool_args *, const struct tool_args *);
void		 call_send_fd(uint64_t, uint32_t, int);
void		 call_refuse_state(uint64_t, const struct vm *);
void		 vm_front_lost(void);
struct req	*call_req(struct tool_call *, uint32_t,
		    void (*)(struct req *, struct imsg *));
void		 call_req_fail(struct req *, const char *);
void		 call_req_cancel(struct req *, enum req_end, const char *);

/* tool-vm.c */
void	 tool_vm_create_lost(void);

#endif
