/*
 * A real state.db in a temporary directory for the unit tests of state.c
 * and the stores on it (tests/unit/statedb.c).
 */
#ifndef UNIT_STATEDB_H
#define UNIT_STATEDB_H

#include <stdint.h>

extern char	 statedb_dir[64];	/* the directory state_open took */

void	 statedb_setup(void);
void	 statedb_teardown(void);
int64_t	 statedb_workspace(const char *, uint8_t);

#endif
