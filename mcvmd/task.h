/*
 * MCP tasks (task.c): a long tool call answered at once with a task,
 * run on under a call id of its own, its end kept in state.db for the
 * workspace that made it to fetch until the task expires.
 */
#ifndef MCVMD_TASK_H
#define MCVMD_TASK_H

#include <stdint.h>

#include "imsg.h"
#include "proto.h"

/*
 * A task's call id has this in its high 32 bits, where a frontd call
 * has frontd's start count, which never gets there: an answer to it is
 * the task's, never a frontd request's.
 */
#define TASK_CALL_GEN		0xffffffffU
#define TASK_PER_WS_MAX		64	/* unexpired tasks of a workspace */
#define TASK_STORED_MAX		(TOOL_RESULT_MAX / 4)	/* a result's bytes */
#define TASK_SWEEP_SECS		10
#define TASK_EXEC_GRACE_MS	10000	/* a vm_exec task past its job's
					   timeout, for the kill to show */

#include <jansson.h>

#include "msg_front.h"

int	 task_call(uint64_t);
uint64_t task_add(int64_t, const char *, uint64_t, char [TASK_ID_LEN + 1]);
json_t	*task_json(int64_t, const char *, int *);
int	 task_count(int64_t);
void	 task_finish(uint64_t, enum tool_status, const char *);
void	 task_front(struct imsgev *, struct imsg *);
int	 task_recover(void);
void	 task_sweep(void);

#endif
