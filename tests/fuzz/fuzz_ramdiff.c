/*
 * libFuzzer target for the relative checkpoint's filter (vmm/ramdiff.c):
 * a migration stream as a (possibly hostile) QEMU writes it, filtered
 * against a RAM file of 16 pages with data in the first 12.  The first
 * input byte chooses how the rest is split into feeds.  The output must
 * never be longer than the input, and must not depend on the split.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ramdiff.h"

#define FILE_PAGES	16

int	 LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static uint8_t	 file[FILE_PAGES * RAMDIFF_PAGE];

struct out {
	uint8_t	*b;
	size_t	 n, cap;
};

static int
sink(void *arg, const uint8_t *p, size_t n)
{
	struct out	*o = arg;

	if (o->n + n > o->cap)
		abort();	/* longer than what came in */
	memcpy(o->b + o->n, p, n);
	o->n += n;
	return 0;
}

static void
run(const uint8_t *data, size_t size, size_t step, struct out *o)
{
	struct ramdiff	*rd;
	size_t		 at, n;

	if ((rd = ramdiff_new(file, sizeof(file), "pc.ram")) == NULL)
		abort();
	ramdiff_data(rd, 0, 12 * RAMDIFF_PAGE);
	for (at = 0; at < size; at += n) {
		n = size - at < step ? size - at : step;
		if (ramdiff_feed(rd, data + at, n, sink, o) == -1)
			abort();
	}
	if (ramdiff_end(rd, sink, o) == -1)
		abort();
	ramdiff_free(rd);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct out	 a, b;
	size_t		 i, step;

	if (size < 1)
		return 0;
	if (file[0] == 0)
		for (i = 0; i < sizeof(file); i++)
			file[i] = (uint8_t)(i / RAMDIFF_PAGE + 'A');
	step = (size_t)data[0] * 61 + 1;
	data++;
	size--;
	a.cap = b.cap = size;
	a.n = b.n = 0;
	if ((a.b = malloc(size + 1)) == NULL || (b.b = malloc(size + 1)) == NULL)
		abort();
	run(data, size, step, &a);
	run(data, size, size + 1, &b);
	if (a.n != b.n || memcmp(a.b, b.b, a.n) != 0)
		abort();
	free(a.b);
	free(b.b);
	return 0;
}
