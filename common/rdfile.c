#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "rdfile.h"

/*
 * Reads the file at path into buf (of len bytes, at least 1) and ends it
 * with a NUL.  Returns its length, or -1 with errno set; a file that does
 * not fit is an error (EFBIG).
 */
ssize_t
read_small_file(const char *path, char *buf, size_t len)
{
	size_t	 off = 0;
	ssize_t	 n;
	char	 extra;
	int	 fd, serrno;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	for (;;) {
		if (off < len - 1)
			n = read(fd, buf + off, len - 1 - off);
		else if ((n = read(fd, &extra, 1)) > 0) {
			errno = EFBIG;		/* it does not fit */
			n = -1;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	serrno = errno;
	close(fd);
	if (n == -1) {
		errno = serrno;
		return -1;
	}
	buf[off] = '\0';
	return (ssize_t)off;
}
