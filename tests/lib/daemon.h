#ifndef MCVM_TEST_DAEMON_H
#define MCVM_TEST_DAEMON_H

#include <sys/types.h>
#include <stdint.h>

#include "imsg.h"

pid_t	 test_daemon_start(const char *, const char *const [], int *);
pid_t	 test_daemon_run(int, char *[], const char *, void (*)(void), int *,
	    int *);
void	 test_daemon_reap(pid_t);
int	 test_daemon_fds(pid_t);
int	 test_daemon_next(struct imsgbuf *, pid_t, int, struct imsg *);
const char *test_errname(uint32_t);

#endif
