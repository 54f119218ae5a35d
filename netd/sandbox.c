/*
 * mcvm-netd's seccomp policy: kill by default.  Beyond the common set it
 * may open netlink sockets only, and enter or create network namespaces.
 */
#include <sys/socket.h>

#include <sched.h>

#include "netd.h"
#include "sandbox.h"

static const char *const netd_allow[] = {
	"bind", "getsockname", "getsockopt", "setsockopt", "fcntl", "dup",
};

void
netd_sandbox(int debug)
{
	scmp_filter_ctx	 ctx = sandbox_new(debug);

	sandbox_allow_common(ctx);
	sandbox_allow(ctx, netd_allow, SANDBOX_N(netd_allow));
	sandbox_rule(ctx, "socket", 1, (struct scmp_arg_cmp[]){
	    SCMP_A0(SCMP_CMP_EQ, AF_NETLINK) });
	sandbox_rule(ctx, "setns", 1, (struct scmp_arg_cmp[]){
	    SCMP_A1(SCMP_CMP_EQ, CLONE_NEWNET) });
	sandbox_rule(ctx, "unshare", 1, (struct scmp_arg_cmp[]){
	    SCMP_A0(SCMP_CMP_EQ, CLONE_NEWNET) });
	sandbox_load(ctx);
}
