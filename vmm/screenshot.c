/*
 * The screenshot (IMSG_VMM_SCREENSHOT): QEMU's screendump as PNG, copied
 * into the memfd that came with mcvmd's request.  QEMU never gets that
 * memfd.  It writes the monitor's own buffer instead, a memfd made at
 * start (vmm_screenshot_init) with a write-only open of it for QEMU:
 * screendump opens its file O_WRONLY | O_TRUNC, and QEMU 7.2 opens
 * /dev/fdset/N by duplicating an fd of the set with that access mode and
 * truncating it, which a pipe refuses.  The buffer goes into one fd set,
 * once, and stays there: QEMU 7.2 closes a removed fd only while the VM
 * runs, so a set per screenshot of a paused VM would leave an fd behind
 * each time.  Its steps:
 *
 *	shot_start	empty the buffer; the first time
 *			add-fd, with the write-only fd	-> shot_added
 *	shot_dump	screendump /dev/fdset/N, png	-> shot_dumped
 *	shot_dumped	read the buffer, check the PNG, copy it to mcvmd's
 *			memfd, SCREENSHOT_DONE
 *
 * QEMU wrote the buffer before it replied; the monitor reads it once into
 * memory and checks and copies that copy, so nothing QEMU writes later
 * changes what mcvmd gets.  The buffer is emptied when the op ends.
 */
#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bytes.h"
#include "log.h"
#include "qmp.h"
#include "vmm.h"

#define SHOT_PNG_MIN	33	/* signature, IHDR and its CRC */
#define SHOT_RETRY_MS	10	/* while QMP has bytes queued */

static struct {
	int		 buf;		/* the buffer, read and emptied here */
	int		 wr;		/* write-only, QEMU's */
	int		 added;		/* in QEMU's fd set ... */
	uint32_t	 fdset;		/* ... of this id */
} shot = { -1, -1, 0, 0 };

static void	 shot_add(struct vmm_req *);
static void	 shot_added(struct vmm_req *, const struct qmp_msg *);
static void	 shot_dump(struct vmm_req *);
static void	 shot_dumped(struct vmm_req *, const struct qmp_msg *);

/*
 * Before the privileges go: the buffer, and its write-only open through
 * /proc (the only way to one).  Without them screenshots fail.
 */
void
vmm_screenshot_init(void)
{
	char	 path[64];

	if ((shot.buf = memfd_create("mcvm-screen", MFD_CLOEXEC)) == -1) {
		log_warn("screenshot buffer: memfd_create");
		return;
	}
	(void)snprintf(path, sizeof(path), "/proc/self/fd/%d", shot.buf);
	if ((shot.wr = open(path, O_WRONLY | O_CLOEXEC)) == -1) {
		log_warn("screenshot buffer: %s", path);
		close(shot.buf);
		shot.buf = -1;
	}
}

/* The buffer empty, and QEMU's writes starting at its beginning. */
static int
shot_empty(void)
{
	if (ftruncate(shot.buf, 0) == -1 ||
	    lseek(shot.wr, 0, SEEK_SET) == -1)
		return -1;
	return 0;
}

static void
shot_start(struct vmm_req *r, const union vmm_args *unused)
{
	if (shot.buf == -1) {
		vmm_fail(r, VMM_ERR_QMP, ENOSYS, "the monitor has no "
		    "screenshot buffer");
		return;
	}
	if (shot_empty() == -1) {
		vmm_fail(r, VMM_ERR_QMP, (uint32_t)errno,
		    "cannot empty the screenshot buffer");
		return;
	}
	if (shot.added)
		shot_dump(r);
	else
		shot_add(r);
}

/* The fd goes alone on the socket: while QMP is busy, try again soon. */
static void
shot_add(struct vmm_req *r)
{
	if (vmm_qmp_send_fd(r, "add-fd", NULL, shot.wr, shot_added) == 0)
		return;
	if (errno == EBUSY)
		vmm_req_after(r, SHOT_RETRY_MS, shot_add);
	else
		vmm_fail(r, VMM_ERR_QMP, (uint32_t)errno,
		    "cannot hand QEMU the screenshot buffer");
}

static void
shot_added(struct vmm_req *r, const struct qmp_msg *m)
{
	if (!m->has_fdset) {
		vmm_fail(r, VMM_ERR_QMP, EBADMSG, "add-fd returned no fd set");
		return;
	}
	shot.fdset = m->fdset;
	shot.added = 1;
	log_debug("screenshot buffer in fd set %u", shot.fdset);
	shot_dump(r);
}

static void
shot_dump(struct vmm_req *r)
{
	char	 file[32];

	(void)snprintf(file, sizeof(file), "/dev/fdset/%u", shot.fdset);
	vmm_qmp_send(r, "screendump", vmm_qmp_args("{s:s, s:s}", "filename",
	    file, "format", "png"), shot_dumped);
}

/*
 * A PNG's size, from its signature and its first chunk, which must be
 * IHDR of 13 bytes.  Returns 0, or -1 if it is not one.
 */
int
vmm_png_size(const uint8_t *p, size_t len, uint32_t *w, uint32_t *h)
{
	static const uint8_t	 sig[8] = {
		0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'
	};

	if (len < SHOT_PNG_MIN || memcmp(p, sig, sizeof(sig)) != 0 ||
	    be32_get(p + 8) != 13 || memcmp(p + 12, "IHDR", 4) != 0)
		return -1;
	*w = be32_get(p + 16);
	*h = be32_get(p + 20);
	if (*w == 0 || *w > VMM_DISPLAY_MAX || *h == 0 ||
	    *h > VMM_DISPLAY_MAX)
		return -1;
	return 0;
}

/* All of len bytes at offset 0, for pread and pwrite alike. */
static int
shot_io(int write, int fd, uint8_t *p, size_t len)
{
	size_t	 off = 0;
	ssize_t	 n;

	while (off < len) {
		if (write)
			n = pwrite(fd, p + off, len - off, (off_t)off);
		else
			n = pread(fd, p + off, len - off, (off_t)off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return -1;
		if (n == 0) {
			errno = EIO;
			return -1;
		}
		off += (size_t)n;
	}
	return 0;
}

static void
shot_dumped(struct vmm_req *r, const struct qmp_msg *m)
{
	struct msg_vmm_screenshot_done	 done;
	struct ibuf			*b;
	struct stat			 st;
	uint8_t				*png;
	size_t				 len;
	char				 text[64];

	if (fstat(shot.buf, &st) == -1) {
		vmm_fail(r, VMM_ERR_QMP, (uint32_t)errno,
		    "cannot read the screenshot buffer");
		return;
	}
	if (st.st_size > VMM_SCREENSHOT_MAX) {
		(void)snprintf(text, sizeof(text), "the screenshot is larger "
		    "than %d bytes", VMM_SCREENSHOT_MAX);
		vmm_fail(r, VMM_ERR_QMP, EFBIG, text);
		return;
	}
	if (st.st_size < SHOT_PNG_MIN) {
		vmm_fail(r, VMM_ERR_QMP, EBADMSG, "QEMU wrote no PNG");
		return;
	}
	len = (size_t)st.st_size;
	if ((png = malloc(len)) == NULL)
		fatal("%s", __func__);
	if (shot_io(0, shot.buf, png, len) == -1) {
		free(png);
		vmm_fail(r, VMM_ERR_QMP, (uint32_t)errno,
		    "cannot read the screenshot buffer");
		return;
	}
	if (vmm_png_size(png, len, &done.width, &done.height) == -1) {
		free(png);
		vmm_fail(r, VMM_ERR_QMP, EBADMSG, "QEMU wrote no PNG");
		return;
	}
	if (shot_io(1, r->fd, png, len) == -1) {
		free(png);
		vmm_fail(r, VMM_ERR_QMP, (uint32_t)errno,
		    "cannot write the screenshot for mcvmd");
		return;
	}
	free(png);
	done.bytes = len;
	log_debug("screenshot %ux%u, %zu bytes", done.width, done.height,
	    len);
	b = vmm_answer_begin(r, IMSG_VMM_SCREENSHOT_DONE);
	msg_vmm_screenshot_done_put(b, &done);
	vmm_answer_end(r, b);
}

/* However it ended, the frame is not kept. */
static void
shot_end(struct vmm_req *r)
{
	if (shot.buf != -1 && shot_empty() == -1)
		log_warn("screenshot buffer");
}

VMM_GET_NONE(screenshot)
VMM_OP(screenshot, IMSG_VMM_SCREENSHOT, "screenshot", VMM_CHAN_QMP,
    VMM_OP_QMP_UP | VMM_OP_FD | VMM_OP_QUEUE, VMM_REQ_TIMEOUT_MS,
    get_screenshot, shot_start, shot_end);
