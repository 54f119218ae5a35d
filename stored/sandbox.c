/*
 * mcvm-stored's seccomp policy: kill by default.  No sockets at all beyond
 * the one it inherited from mcvmd.
 */
#include "sandbox.h"
#include "stored.h"

static const char *const stored_allow[] = {
	"fcntl", "dup",
};

void
stored_sandbox(int debug)
{
	scmp_filter_ctx	 ctx = sandbox_new(debug);

	sandbox_allow_common(ctx);
	sandbox_allow(ctx, stored_allow, SANDBOX_N(stored_allow));
	sandbox_load(ctx);
}
