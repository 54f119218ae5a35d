/* A real state.db in a temporary directory (statedb.h). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcvmd.h"
#include "statedb.h"

char	 statedb_dir[64];

void
statedb_setup(void)
{
	/* tmpfs where there is one: every transaction is synced. */
	(void)snprintf(statedb_dir, sizeof(statedb_dir),
	    "%s/state-unit.XXXXXX",
	    access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	cr_assert_not_null(mkdtemp(statedb_dir));
	cr_assert_eq(state_open(statedb_dir), 0);
}

void
statedb_teardown(void)
{
	char	 cmd[128];

	state_close();
	(void)snprintf(cmd, sizeof(cmd), "rm -rf '%s'", statedb_dir);
	if (system(cmd) != 0)
		cr_log_warn("cannot remove %s", statedb_dir);
}

/* A new workspace with one token made of seed; returns its id. */
int64_t
statedb_workspace(const char *name, uint8_t seed)
{
	uint8_t		 hash[TOKEN_HASH_LEN];
	struct ws_auth	 auth;
	char		 msg[256];

	memset(hash, seed, sizeof(hash));
	cr_assert_eq(state_token_issue(name, hash, 0, 0, 0, 0, msg,
	    sizeof(msg)), 0);
	cr_assert_eq(state_token_auth(hash, &auth), 0);
	cr_assert_eq(auth.status, AUTH_OK);
	return auth.id;
}
