/*
 * mcvmd's relay of large results by descriptor (see msg_front.h).
 */
#ifndef MCVMD_FDREPLY_H
#define MCVMD_FDREPLY_H

#include <stdint.h>

#include "msg_front.h"

int	 front_reply_fd(uint64_t, const struct msg_front_tool_result_fd *,
	    int);

#endif
