/*
 * mcvm-netd's seccomp policy: kill by default.  Beyond the common set it
 * may open netlink sockets, TCP sockets for port forwards (IPv4 and IPv6,
 * stream only), create and enter network namespaces only, open a file
 * only read-write and close-on-exec (its chroot holds just /tun), and
 * call three ioctls: TUNSETIFF, SIOCGSKNS and FIONREAD.
 */
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <fcntl.h>
#include <linux/if_tun.h>
#include <linux/sockios.h>
#include <sched.h>

#include "netd.h"
#include "sandbox.h"

#define NETD_SOCK_TYPE_MASK	0xf	/* SOCK_STREAM without the flags */

static const char *const netd_allow[] = {
	"accept4", "bind", "connect", "dup", "fcntl", "getsockname",
	"pselect6", "ppoll", "poll",
	"getsockopt", "listen", "setsockopt", "shutdown",
};

void
netd_sandbox(int debug)
{
	scmp_filter_ctx	 ctx = sandbox_new(debug);
	static const int inet[] = { AF_INET, AF_INET6 };
	static const unsigned long ioctls[] = { TUNSETIFF, SIOCGSKNS,
	    FIONREAD };
	size_t		 i;

	sandbox_allow_common(ctx);
	sandbox_allow(ctx, netd_allow, SANDBOX_N(netd_allow));
	sandbox_rule(ctx, "socket", 1, (struct scmp_arg_cmp[]){
	    SCMP_A0(SCMP_CMP_EQ, AF_NETLINK) });
	for (i = 0; i < SANDBOX_N(inet); i++)
		sandbox_rule(ctx, "socket", 2, (struct scmp_arg_cmp[]){
		    SCMP_A0(SCMP_CMP_EQ, inet[i]),
		    SCMP_A1(SCMP_CMP_MASKED_EQ, NETD_SOCK_TYPE_MASK,
		    SOCK_STREAM) });
	for (i = 0; i < SANDBOX_N(ioctls); i++)
		sandbox_rule(ctx, "ioctl", 1, (struct scmp_arg_cmp[]){
		    SCMP_A1(SCMP_CMP_EQ, ioctls[i]) });
	sandbox_rule(ctx, "openat", 1, (struct scmp_arg_cmp[]){
	    SCMP_A2(SCMP_CMP_EQ, O_RDWR | O_CLOEXEC) });
	sandbox_rule(ctx, "setns", 1, (struct scmp_arg_cmp[]){
	    SCMP_A1(SCMP_CMP_EQ, CLONE_NEWNET) });
	sandbox_rule(ctx, "unshare", 1, (struct scmp_arg_cmp[]){
	    SCMP_A0(SCMP_CMP_EQ, CLONE_NEWNET) });
	sandbox_load(ctx);
}
