/*
 * mcvm-frontd's seccomp policy: kill by default.
 *
 * Beyond the common set (memory, time, reading and writing open
 * descriptors, the imsg socket) frontd may only accept connections on
 * the sockets it was given and shape them.  It may not open a file,
 * create a socket, connect, bind, exec or fork: it has no reason to.
 */
#include <sys/socket.h>

#include <sys/ioctl.h>

#include <fcntl.h>

#include "frontd.h"
#include "sandbox.h"

static const char *const frontd_allow[] = {
	"accept4",		/* evconnlistener */
	"getsockname",		/* peer and local addresses for logs */
	"getpeername",
	"setsockopt",		/* libevent and TLS tune accepted sockets */
	"getsockopt",
	"shutdown",
	"epoll_create1",	/* none after start; cheap to allow */
	"pread64",		/* an image downloaded, read where it is */
	"splice",		/* an image uploaded: socket to stored's pipe */
	"poll",			/* which of the two would block */
};

void
frontd_sandbox(int debug)
{
	scmp_filter_ctx	 ctx = sandbox_new(debug);

	sandbox_allow_common(ctx);
	sandbox_allow(ctx, frontd_allow, SANDBOX_N(frontd_allow));
	/* fcntl: only flag reads and sets (non-blocking, close-on-exec). */
	sandbox_rule(ctx, "fcntl", 1, (struct scmp_arg_cmp[]){
	    SCMP_A1(SCMP_CMP_EQ, F_GETFL) });
	sandbox_rule(ctx, "fcntl", 1, (struct scmp_arg_cmp[]){
	    SCMP_A1(SCMP_CMP_EQ, F_SETFL) });
	sandbox_rule(ctx, "fcntl", 1, (struct scmp_arg_cmp[]){
	    SCMP_A1(SCMP_CMP_EQ, F_GETFD) });
	sandbox_rule(ctx, "fcntl", 1, (struct scmp_arg_cmp[]){
	    SCMP_A1(SCMP_CMP_EQ, F_SETFD) });
	/* libevent sizes its reads with FIONREAD, and nothing else. */
	sandbox_rule(ctx, "ioctl", 1, (struct scmp_arg_cmp[]){
	    SCMP_A1(SCMP_CMP_EQ, FIONREAD) });
	sandbox_load(ctx);
}
