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
 * tool-file.c).  TOOL_IMPLS lists them, one entry per tool:
 *	X(tool id, run, cancel or NULL, check or NULL, receipt or NULL,
 *	    request_id's parameter index or -1)
 * receipt names what shows an interrupted call's outcome; a tool with one
 * takes a request_id, the parameter of the last column.  A tool without
 * an entry is unavailable, and says so; tests/unit/test_dispatch.c lists
 * which.
 */
#ifndef MCVMD_DISPATCH_H
#define MCVMD_DISPATCH_H

#include <jansson.h>

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

#define TOOL_IMPLS(X)							\
	X(TOOL_VM_CREATE, tool_vm_create, tool_vm_create_cancel,	\
	    tool_vm_create_check, "vm_list", P_VM_CREATE_REQUEST_ID)	\
	X(TOOL_VM_LIST, tool_vm_list, NULL, NULL, NULL, -1)		\
	X(TOOL_VM_STATUS, tool_vm_status, NULL, NULL, NULL, -1)		\
	X(TOOL_VM_STOP, tool_vm_stop, NULL, NULL, NULL, -1)		\
	X(TOOL_VM_START, tool_vm_start, NULL, NULL, NULL, -1)		\
	X(TOOL_VM_SUSPEND, tool_vm_suspend, NULL, NULL, NULL, -1)	\
	X(TOOL_VM_RESUME, tool_vm_resume, NULL, NULL, NULL, -1)		\
	X(TOOL_VM_DESTROY, tool_vm_destroy, NULL, NULL, NULL, -1)	\
	X(TOOL_VM_EXEC, tool_vm_exec, NULL, tool_vm_exec_check,		\
	    "vm_status's jobs", P_VM_EXEC_REQUEST_ID)			\
	X(TOOL_VM_JOB_STATUS, tool_vm_job_status, NULL, NULL, NULL, -1)	\
	X(TOOL_VM_JOB_OUTPUT, tool_vm_job_output, NULL, NULL, NULL, -1)	\
	X(TOOL_VM_JOB_CANCEL, tool_vm_job_cancel, NULL, NULL, NULL, -1)	\
	X(TOOL_VM_READ_FILE, tool_vm_read_file, NULL, tool_file_check,	\
	    NULL, -1)							\
	X(TOOL_VM_WRITE_FILE, tool_vm_write_file, NULL,		\
	    tool_file_check, NULL, -1)

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
void		 call_refuse_state(uint64_t, const struct vm *);
void		 vm_front_lost(void);
struct req	*call_req(struct tool_call *, uint32_t,
		    void (*)(struct req *, struct imsg *));
void		 call_req_fail(struct req *, const char *);
void		 call_req_cancel(struct req *, enum req_end, const char *);

/* tool-vm.c */
void	 tool_vm_create(struct tool_call *);
void	 tool_vm_create_cancel(uint64_t);
int	 tool_vm_create_check(struct tool_call *);
void	 tool_vm_create_lost(void);
void	 tool_vm_list(struct tool_call *);
void	 tool_vm_status(struct tool_call *);
void	 tool_vm_stop(struct tool_call *);
void	 tool_vm_start(struct tool_call *);
void	 tool_vm_suspend(struct tool_call *);
void	 tool_vm_resume(struct tool_call *);
void	 tool_vm_destroy(struct tool_call *);

/* tool-job.c */
void	 tool_vm_exec(struct tool_call *);
int	 tool_vm_exec_check(struct tool_call *);
void	 tool_vm_job_status(struct tool_call *);
void	 tool_vm_job_output(struct tool_call *);
void	 tool_vm_job_cancel(struct tool_call *);

/* tool-file.c */
int	 tool_file_check(struct tool_call *);
void	 tool_vm_read_file(struct tool_call *);
void	 tool_vm_write_file(struct tool_call *);

#endif
