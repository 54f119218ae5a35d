/*
 * mcvm-vmm's seccomp policy: kill by default.  Beyond the common set
 * (read, write, sendmsg/recvmsg, epoll, time, memory, exit) the monitor
 * may only poll, when it flushes its last messages to mcvmd before it
 * exits, and, for screenshots (screenshot.c), read its buffer at an
 * offset, empty it, and write the frame into mcvmd's memfd at an offset,
 * make a checkpoint QEMU wrote durable, and make the pipe a relative
 * checkpoint's stream comes through, and size it (fcntl F_SETPIPE_SZ,
 * no other fcntl).
 * It opens nothing, creates no socket, and starts no process: every fd
 * it uses was open before the filter was loaded or came from mcvmd.
 */
#include <fcntl.h>

#include "sandbox.h"
#include "vmm.h"

static const char *const vmm_allow[] = {
	"poll", "ppoll",
	"pread64", "pwrite64", "ftruncate", "fsync", "pipe2",
};

void
vmm_sandbox(int debug)
{
	scmp_filter_ctx	 ctx = sandbox_new(debug);

	sandbox_allow_common(ctx);
	sandbox_allow(ctx, vmm_allow, SANDBOX_N(vmm_allow));
	sandbox_rule(ctx, "fcntl", 1, (struct scmp_arg_cmp[]){
	    SCMP_A1(SCMP_CMP_EQ, F_SETPIPE_SZ) });
	sandbox_load(ctx);
}
