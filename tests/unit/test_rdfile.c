/*
 * read_small_file: a file that fits is read whole and NUL-terminated, one
 * byte too long is refused, and a missing one says so.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdfile.h"

static char	 path[] = "/tmp/mcvm-rdfile.XXXXXX";

static void
put(const char *text)
{
	FILE	*f = fopen(path, "w");

	cr_assert_not_null(f);
	cr_assert_eq(fputs(text, f) >= 0, 1);
	cr_assert_eq(fclose(f), 0);
}

static void
setup(void)
{
	int	 fd = mkstemp(path);

	cr_assert_neq(fd, -1);
	close(fd);
}

static void
teardown(void)
{
	unlink(path);
}

TestSuite(rdfile, .init = setup, .fini = teardown);

Test(rdfile, fits_exactly_or_not)
{
	char	 buf[8];

	memset(buf, 'x', sizeof(buf));
	put("");
	cr_assert_eq(read_small_file(path, buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "");
	put("1234567");
	cr_assert_eq(read_small_file(path, buf, sizeof(buf)), 7);
	cr_assert_str_eq(buf, "1234567");
	put("12345678");
	errno = 0;
	cr_assert_eq(read_small_file(path, buf, sizeof(buf)), -1);
	cr_assert_eq(errno, EFBIG);
	cr_assert_eq(read_small_file(path, buf, 1), -1);
	cr_assert_eq(errno, EFBIG);
	unlink(path);
	cr_assert_eq(read_small_file(path, buf, sizeof(buf)), -1);
	cr_assert_eq(errno, ENOENT);
}

Test(rdfile, procfs)
{
	char	 buf[8192];

	cr_assert_gt(read_small_file("/proc/self/stat", buf, sizeof(buf)), 0);
	cr_assert_eq(strlen(buf) > 0, 1);
	cr_assert_eq(read_small_file("/proc/self/stat", buf, 4), -1);
	cr_assert_eq(errno, EFBIG);
}
