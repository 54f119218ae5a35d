/*
 * Framing: whole messages, partial reads, oversize and impossible
 * lengths, and descriptor passing.
 */
#include <sys/socket.h>
#include <sys/stat.h>

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "imsg.h"
#include "msg.h"

static int	 sp[2];
static struct imsgbuf ra, wb;

static void
setup(void)
{
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sp),
	    0);
	cr_assert_eq(imsgbuf_init(&wb, sp[0]), 0);
	cr_assert_eq(imsgbuf_init(&ra, sp[1]), 0);
}

static void
teardown(void)
{
	imsgbuf_clear(&wb);
	imsgbuf_clear(&ra);
	close(sp[0]);
	close(sp[1]);
}

TestSuite(imsg, .init = setup, .fini = teardown);

/* Reads until one message is complete. */
static int
read_one(struct imsg *m)
{
	int	 rc, tries;

	for (tries = 0; tries < 100; tries++) {
		if ((rc = imsg_get(&ra, m)) != 0)
			return rc;
		if (imsgbuf_read(&ra) <= 0 && errno != EAGAIN)
			return -1;
	}
	return 0;
}

Test(imsg, roundtrip)
{
	struct imsg	 m;

	cr_assert_eq(imsg_compose(&wb, 42, 7, 99, -1, "hello", 5), 0);
	cr_assert_eq(imsgbuf_flush(&wb), 0);
	cr_assert_eq(read_one(&m), 1);
	cr_assert_eq(m.hdr.type, 42);
	cr_assert_eq(m.hdr.peerid, 7);
	cr_assert_eq(m.hdr.pid, 99);
	cr_assert_eq(m.datalen, 5);
	cr_assert_eq(memcmp(m.data, "hello", 5), 0);
	cr_assert_eq(m.fd, -1);
	imsg_free(&m);
}

Test(imsg, empty_payload)
{
	struct imsg	 m;

	cr_assert_eq(imsg_compose(&wb, 1, 0, 0, -1, NULL, 0), 0);
	cr_assert_eq(imsgbuf_flush(&wb), 0);
	cr_assert_eq(read_one(&m), 1);
	cr_assert_eq(m.datalen, 0);
	cr_assert_null(m.data);
	imsg_free(&m);
}

/* A message dribbled in byte by byte is not seen until it is whole. */
Test(imsg, partial_reads)
{
	struct imsg	 m;
	uint8_t		 raw[IMSG_HDR_SIZE + 3];
	size_t		 i;

	le32_put(raw, 5);
	le32_put(raw + 4, sizeof(raw));
	le32_put(raw + 8, 0);
	le32_put(raw + 12, 1);
	le32_put(raw + 16, 2);
	memcpy(raw + IMSG_HDR_SIZE, "abc", 3);
	for (i = 0; i < sizeof(raw); i++) {
		cr_assert_eq(imsg_get(&ra, &m), 0);
		cr_assert_eq(write(sp[0], raw + i, 1), 1);
		cr_assert_eq(imsgbuf_read(&ra), 1);
	}
	cr_assert_eq(imsg_get(&ra, &m), 1);
	cr_assert_eq(m.hdr.type, 5);
	cr_assert_eq(memcmp(m.data, "abc", 3), 0);
	imsg_free(&m);
	cr_assert_eq(imsg_get(&ra, &m), 0);
}

/* Two messages in one read come out one at a time, in order. */
Test(imsg, two_in_one_read)
{
	struct imsg	 m;

	cr_assert_eq(imsg_compose(&wb, 1, 0, 0, -1, "a", 1), 0);
	cr_assert_eq(imsg_compose(&wb, 2, 0, 0, -1, "bb", 2), 0);
	cr_assert_eq(imsgbuf_flush(&wb), 0);
	cr_assert_gt(imsgbuf_read(&ra), 0);
	cr_assert_eq(imsg_get(&ra, &m), 1);
	cr_assert_eq(m.hdr.type, 1);
	imsg_free(&m);
	cr_assert_eq(read_one(&m), 1);
	cr_assert_eq(m.hdr.type, 2);
	cr_assert_eq(m.datalen, 2);
	imsg_free(&m);
}

static void
write_header(uint32_t len, uint32_t flags)
{
	uint8_t	 raw[IMSG_HDR_SIZE];

	le32_put(raw, 1);
	le32_put(raw + 4, len);
	le32_put(raw + 8, flags);
	le32_put(raw + 12, 0);
	le32_put(raw + 16, 0);
	cr_assert_eq(write(sp[0], raw, sizeof(raw)), (ssize_t)sizeof(raw));
}

Test(imsg, length_shorter_than_header)
{
	struct imsg	 m;

	write_header(IMSG_HDR_SIZE - 1, 0);
	cr_assert_gt(imsgbuf_read(&ra), 0);
	cr_assert_eq(imsg_get(&ra, &m), -1);
	cr_assert_eq(errno, EBADMSG);
}

Test(imsg, length_over_limit)
{
	struct imsg	 m;

	write_header(IMSG_MAX_SIZE + 1, 0);
	cr_assert_gt(imsgbuf_read(&ra), 0);
	cr_assert_eq(imsg_get(&ra, &m), -1);
	cr_assert_eq(errno, EBADMSG);
}

Test(imsg, unknown_flags)
{
	struct imsg	 m;

	write_header(IMSG_HDR_SIZE, 0x80);
	cr_assert_gt(imsgbuf_read(&ra), 0);
	cr_assert_eq(imsg_get(&ra, &m), -1);
}

/* A header that promises a descriptor which never came is an error. */
Test(imsg, promised_fd_missing)
{
	struct imsg	 m;

	write_header(IMSG_HDR_SIZE, IMSGF_HASFD);
	cr_assert_gt(imsgbuf_read(&ra), 0);
	cr_assert_eq(imsg_get(&ra, &m), -1);
	cr_assert_eq(errno, EBADMSG);
}

/* The sender refuses to build a message larger than the limit. */
Test(imsg, oversize_compose_refused)
{
	char	*big;

	cr_assert_not_null(big = calloc(1, IMSG_MAX_PAYLOAD + 1));
	cr_assert_eq(imsg_compose(&wb, 1, 0, 0, -1, big,
	    IMSG_MAX_PAYLOAD + 1), -1);
	cr_assert_eq(errno, EMSGSIZE);
	cr_assert_eq(wb.wqlen, 0);
	free(big);
}

/* The largest legal message goes through intact. */
Test(imsg, max_size_roundtrip)
{
	struct imsg	 m;
	uint8_t		*big;
	size_t		 i;
	int		 rc = 0, tries;

	cr_assert_not_null(big = malloc(IMSG_MAX_PAYLOAD));
	for (i = 0; i < IMSG_MAX_PAYLOAD; i++)
		big[i] = (uint8_t)(i * 7);
	cr_assert_eq(imsg_compose(&wb, 3, 0, 0, -1, big, IMSG_MAX_PAYLOAD),
	    0);
	for (tries = 0; tries < 100000 && rc == 0; tries++) {
		cr_assert_eq(imsgbuf_write(&wb), 0);
		(void)imsgbuf_read(&ra);
		rc = imsg_get(&ra, &m);
	}
	cr_assert_eq(rc, 1);
	cr_assert_eq(m.datalen, IMSG_MAX_PAYLOAD);
	cr_assert_eq(memcmp(m.data, big, IMSG_MAX_PAYLOAD), 0);
	imsg_free(&m);
	free(big);
}

Test(imsg, fd_passing)
{
	struct imsg	 m;
	struct stat	 a, b;
	int		 fd, got;

	cr_assert_neq(fd = open("/dev/null", O_RDONLY), -1);
	cr_assert_eq(fstat(fd, &a), 0);
	cr_assert_eq(imsg_compose(&wb, 9, 0, 0, fd, "x", 1), 0);
	cr_assert_eq(imsgbuf_flush(&wb), 0);
	cr_assert_eq(read_one(&m), 1);
	cr_assert_neq(m.fd, -1);
	got = imsg_get_fd(&m);
	cr_assert_eq(m.fd, -1);
	cr_assert_eq(fstat(got, &b), 0);
	cr_assert_eq(a.st_ino, b.st_ino);
	cr_assert_eq(a.st_dev, b.st_dev);
	cr_assert(fcntl(got, F_GETFD) & FD_CLOEXEC);
	close(got);
	imsg_free(&m);
}

/* Two messages with descriptors: each gets its own, in order. */
Test(imsg, fd_order)
{
	struct imsg	 m1, m2;
	struct stat	 s1, s2, t1, t2;
	int		 fd1, fd2;

	cr_assert_neq(fd1 = open("/dev/null", O_RDONLY), -1);
	cr_assert_neq(fd2 = open("/dev/zero", O_RDONLY), -1);
	cr_assert_eq(fstat(fd1, &s1), 0);
	cr_assert_eq(fstat(fd2, &s2), 0);
	cr_assert_eq(imsg_compose(&wb, 1, 0, 0, fd1, NULL, 0), 0);
	cr_assert_eq(imsg_compose(&wb, 2, 0, 0, fd2, NULL, 0), 0);
	cr_assert_eq(imsgbuf_flush(&wb), 0);
	cr_assert_eq(read_one(&m1), 1);
	cr_assert_eq(read_one(&m2), 1);
	cr_assert_eq(fstat(m1.fd, &t1), 0);
	cr_assert_eq(fstat(m2.fd, &t2), 0);
	cr_assert_eq(s1.st_rdev, t1.st_rdev);
	cr_assert_eq(s2.st_rdev, t2.st_rdev);
	imsg_free(&m1);
	imsg_free(&m2);
}

/* A descriptor set twice on one message is refused, and closed. */
Test(imsg, fd_twice_refused)
{
	struct ibuf	*b;
	int		 fd1, fd2;

	cr_assert_neq(fd1 = open("/dev/null", O_RDONLY), -1);
	cr_assert_neq(fd2 = open("/dev/null", O_RDONLY), -1);
	cr_assert_not_null(b = imsg_create(&wb, 1, 0, 0, 0));
	imsg_set_fd(b, fd1);
	imsg_set_fd(b, fd2);
	cr_assert_eq(imsg_close(&wb, b), -1);
	cr_assert_eq(fcntl(fd1, F_GETFD), -1);
	cr_assert_eq(fcntl(fd2, F_GETFD), -1);
}

Test(imsg, eof)
{
	close(sp[0]);
	cr_assert_eq(imsgbuf_read(&ra), 0);
	sp[0] = open("/dev/null", O_RDONLY);
}
