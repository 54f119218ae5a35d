#ifndef MCVM_TEST_DAEMON_H
#define MCVM_TEST_DAEMON_H

#include <sys/types.h>

pid_t	 test_daemon_start(const char *, const char *const [], int *);

#endif
