/*
 * The relative checkpoint's filter (ramdiff.h).  The stream is parsed an
 * item at a time out of a buffer the input is copied into: a header, a
 * configuration subsection, a section's header, one block of the RAM's
 * list, one record.  No item is longer than RD_ITEM_MAX but the
 * configuration's list of capabilities, which RD_BUF holds too; an item
 * whose bytes have not all come waits for the next feed.
 *
 * A record is dropped only if it continues its block (CONTINUE): the
 * records naming a block all go out, so that the block the loader takes
 * a CONTINUE record for is always the one the sender meant, whatever was
 * dropped, and the stream may pass through whole from any item on.
 */
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "ramdiff.h"

#define RD_BUF		(64 * 1024)
#define RD_ITEM_MAX	(8 + 1 + 255 + RAMDIFF_PAGE)
#define RD_BLOCKS_MAX	64
#define RD_CAPS_MAX	64

/* QEMU 7.2's stream (migration/savevm.h, ram.c). */
#define QEMU_VM_FILE_MAGIC	0x5145564dU
#define QEMU_VM_FILE_VERSION	3U
#define SEC_START		0x01
#define SEC_PART		0x02
#define SEC_END			0x03
#define SEC_SUBSECTION		0x05
#define SEC_CONFIGURATION	0x07
#define SEC_FOOTER		0x7e
#define F_ZERO			0x02ULL
#define F_MEM_SIZE		0x04ULL
#define F_PAGE			0x08ULL
#define F_EOS			0x10ULL
#define F_CONTINUE		0x20ULL
#define F_MASK			((uint64_t)RAMDIFF_PAGE - 1)

enum rd_state {
	RD_HEADER,	/* magic and version */
	RD_CONFIG,	/* the configuration, if there is one */
	RD_SUBSECTION,	/* its subsections, while there are */
	RD_SECTION,	/* a section: ram's start, a part or the end */
	RD_SIZE,	/* ram's start: the RAM's size */
	RD_BLOCK,	/* ... a block's name and length */
	RD_SETUP_EOS,	/* ... the end of the list */
	RD_RECORD,	/* a part's or the end's records */
	RD_FOOTER,	/* a section's footer, or none */
	RD_PASS,	/* the rest, whole */
};

enum rd_act {
	RD_NEED,	/* more bytes first */
	RD_KEEP,	/* the item goes out */
	RD_DROP,	/* the item is left out */
	RD_UNKNOWN,	/* not understood: the rest passes whole */
};

struct rd_block {
	uint8_t		 namelen;
	char		 name[256];
};

struct ramdiff {
	const uint8_t	*file;
	uint64_t	 file_len;
	char		 block[256];
	uint8_t		*data;		/* a bit a page: the file has data */
	uint8_t		*kept;		/* a bit a page: a record went out */

	enum rd_state	 state;
	int		 have_ram;
	uint32_t	 ram_id;
	uint64_t	 total, sum;	/* the RAM's size, the blocks' */
	struct rd_block	 blocks[RD_BLOCKS_MAX];
	size_t		 nblocks;
	int		 filtered;	/* the file's block, or -1 */
	int		 sender;	/* the block of the last record */
	uint64_t	 dropped;

	size_t		 len;
	uint8_t		 buf[RD_BUF];
};

static int
bit(const uint8_t *map, uint64_t i)
{
	return map[i / 8] >> (i % 8) & 1;
}

static void
bit_set(uint8_t *map, uint64_t i)
{
	map[i / 8] |= (uint8_t)(1U << (i % 8));
}

struct ramdiff *
ramdiff_new(const uint8_t *file, uint64_t len, const char *block)
{
	struct ramdiff	*rd;
	size_t		 map = (size_t)((len / RAMDIFF_PAGE + 7) / 8);

	if (len == 0 || len % RAMDIFF_PAGE != 0 ||
	    strlen(block) >= sizeof(rd->block) ||
	    (rd = calloc(1, sizeof(*rd))) == NULL)
		return NULL;
	if ((rd->data = calloc(1, map + 1)) == NULL ||
	    (rd->kept = calloc(1, map + 1)) == NULL) {
		ramdiff_free(rd);
		return NULL;
	}
	rd->file = file;
	rd->file_len = len;
	(void)strcpy(rd->block, block);
	rd->filtered = rd->sender = -1;
	rd->state = RD_HEADER;
	return rd;
}

void
ramdiff_free(struct ramdiff *rd)
{
	if (rd == NULL)
		return;
	free(rd->data);
	free(rd->kept);
	free(rd);
}

void
ramdiff_data(struct ramdiff *rd, uint64_t off, uint64_t len)
{
	uint64_t	 i, end;

	if (off >= rd->file_len || len == 0)
		return;
	end = len > rd->file_len - off ? rd->file_len : off + len;
	for (i = off / RAMDIFF_PAGE; i < (end + RAMDIFF_PAGE - 1) /
	    RAMDIFF_PAGE; i++)
		bit_set(rd->data, i);
}

uint64_t
ramdiff_dropped(const struct ramdiff *rd)
{
	return rd->dropped;
}

/* Not understood: the rest of the stream passes whole. */
static int
give_up(struct ramdiff *rd)
{
	rd->state = RD_PASS;
	return RD_KEEP;
}

/* The block named so, or -1. */
static int
block_find(const struct ramdiff *rd, const uint8_t *name, size_t n)
{
	size_t	 i;

	for (i = 0; i < rd->nblocks; i++)
		if (rd->blocks[i].namelen == n &&
		    memcmp(rd->blocks[i].name, name, n) == 0)
			return (int)i;
	return -1;
}

/*
 * A configuration subsection at p (n bytes there): its length in *len,
 * RD_NEED, or RD_UNKNOWN for one it does not know (or x-ignore-shared on:
 * its stream leaves the file's block out, and has no records to drop).
 */
static int
subsection(const uint8_t *p, size_t n, size_t *len)
{
	static const char	 cap[] = "x-ignore-shared";
	size_t			 nl, at, i, count;

	if (n < 2 || n < 2 + (nl = p[1]) + 4)
		return RD_NEED;
	at = 2 + nl + 4;
	if (nl == 30 && memcmp(p + 2, "configuration/target-page-bits", 30) == 0)
		at += 4;
	else if (nl == 18 && memcmp(p + 2, "configuration/uuid", 18) == 0)
		at += 16;
	else if (nl == 26 &&
	    memcmp(p + 2, "configuration/capabilities", 26) == 0) {
		if (n < at + 4)
			return RD_NEED;
		if ((count = be32_get(p + at)) > RD_CAPS_MAX)
			return RD_UNKNOWN;
		at += 4;
		for (i = 0; i < count; i++) {
			if (n < at + 1 || n < at + 1 + p[at])
				return RD_NEED;
			if (p[at] == sizeof(cap) - 1 &&
			    memcmp(p + at + 1, cap, sizeof(cap) - 1) == 0)
				return RD_UNKNOWN;
			at += 1 + (size_t)p[at];
		}
	} else
		return RD_UNKNOWN;
	if (n < at)
		return RD_NEED;
	*len = at;
	return RD_KEEP;
}

/*
 * A record of a part or the end at p (n bytes there): RD_KEEP or RD_DROP
 * with its length in *len, or RD_NEED.  Sets the state to RD_FOOTER at
 * EOS, RD_PASS for one it does not know.
 */
static int
record(struct ramdiff *rd, const uint8_t *p, size_t n, size_t *len)
{
	uint64_t	 v, flags, off, pg;
	size_t		 hdr = 8, body;
	int		 blk;

	if (n < 8)
		return RD_NEED;
	v = be64_get(p);
	flags = v & F_MASK;
	off = v & ~F_MASK;
	if (v == F_EOS) {
		rd->state = RD_FOOTER;
		*len = 8;
		return RD_KEEP;
	}
	if ((flags & ~(F_ZERO | F_PAGE | F_CONTINUE)) != 0 ||
	    ((flags & (F_ZERO | F_PAGE)) != F_ZERO &&
	    (flags & (F_ZERO | F_PAGE)) != F_PAGE))
		return give_up(rd);
	if (flags & F_CONTINUE)
		blk = rd->sender;
	else {
		if (n < 9 || n < 9 + (size_t)p[8])
			return RD_NEED;
		hdr = 9 + (size_t)p[8];
		blk = block_find(rd, p + 9, p[8]);
	}
	if (blk < 0)		/* the loader refuses it */
		return give_up(rd);
	body = flags & F_ZERO ? 1 : RAMDIFF_PAGE;
	if (n < hdr + body)
		return RD_NEED;
	rd->sender = blk;
	*len = hdr + body;
	if (blk != rd->filtered || off > rd->file_len - RAMDIFF_PAGE)
		return RD_KEEP;
	pg = off / RAMDIFF_PAGE;
	if ((flags & F_CONTINUE) && !bit(rd->kept, pg) &&
	    ((flags & F_ZERO) ? p[hdr] == 0 && !bit(rd->data, pg) :
	    bit(rd->data, pg) &&
	    memcmp(p + hdr, rd->file + off, RAMDIFF_PAGE) == 0)) {
		rd->dropped++;
		return RD_DROP;
	}
	bit_set(rd->kept, pg);
	return RD_KEEP;
}

/*
 * The item at p (n bytes held): RD_KEEP or RD_DROP with its length in
 * *len (0: none, the state moved on), or RD_NEED.
 */
static int
item(struct ramdiff *rd, const uint8_t *p, size_t n, size_t *len)
{
	uint64_t	 v, blen;
	size_t		 nl;
	int		 r;

	*len = 0;
	if (rd->state == RD_PASS) {
		*len = n;
		return RD_KEEP;
	}
	if (n < 1)
		return RD_NEED;
	switch (rd->state) {
	case RD_HEADER:
		if (n < 8)
			return RD_NEED;
		rd->state = be32_get(p) == QEMU_VM_FILE_MAGIC &&
		    be32_get(p + 4) == QEMU_VM_FILE_VERSION ? RD_CONFIG : RD_PASS;
		*len = 8;
		return RD_KEEP;
	case RD_CONFIG:
		if (p[0] != SEC_CONFIGURATION) {
			rd->state = RD_SECTION;
			return RD_KEEP;
		}
		if (n < 5)
			return RD_NEED;
		if (be32_get(p + 1) > 255)
			return give_up(rd);
		if (n < 5 + be32_get(p + 1))
			return RD_NEED;
		rd->state = RD_SUBSECTION;
		*len = 5 + be32_get(p + 1);
		return RD_KEEP;
	case RD_SUBSECTION:
		if (p[0] != SEC_SUBSECTION) {
			rd->state = RD_SECTION;
			return RD_KEEP;
		}
		if ((r = subsection(p, n, len)) != RD_UNKNOWN)
			return r;
		return give_up(rd);
	case RD_SECTION:
		if (p[0] == SEC_START && !rd->have_ram) {
			if (n < 6 || n < 6 + (nl = p[5]) + 8)
				return RD_NEED;
			if (nl != 3 || memcmp(p + 6, "ram", 3) != 0)
				return give_up(rd);
			rd->have_ram = 1;
			rd->ram_id = be32_get(p + 1);
			rd->state = RD_SIZE;
			*len = 6 + nl + 8;
			return RD_KEEP;
		}
		if ((p[0] == SEC_PART || p[0] == SEC_END) && rd->have_ram) {
			if (n < 5)
				return RD_NEED;
			if (be32_get(p + 1) == rd->ram_id) {
				rd->state = RD_RECORD;
				*len = 5;
				return RD_KEEP;
			}
		}
		return give_up(rd);
	case RD_SIZE:
		if (n < 8)
			return RD_NEED;
		v = be64_get(p);
		rd->total = v & ~F_MASK;
		rd->state = (v & F_MASK) != F_MEM_SIZE ? RD_PASS :
		    rd->total == 0 ? RD_SETUP_EOS : RD_BLOCK;
		*len = 8;
		return RD_KEEP;
	case RD_BLOCK:
		if (n < 1 + (nl = p[0]) + 8)
			return RD_NEED;
		blen = be64_get(p + 1 + nl);
		if (rd->nblocks == RD_BLOCKS_MAX || block_find(rd, p + 1,
		    nl) != -1 || blen > rd->total - rd->sum)
			return give_up(rd);
		rd->blocks[rd->nblocks].namelen = (uint8_t)nl;
		memcpy(rd->blocks[rd->nblocks].name, p + 1, nl);
		if (nl == strlen(rd->block) && memcmp(p + 1, rd->block,
		    nl) == 0 && blen == rd->file_len)
			rd->filtered = (int)rd->nblocks;
		rd->nblocks++;
		rd->sum += blen;
		if (rd->sum == rd->total)
			rd->state = RD_SETUP_EOS;
		*len = 1 + nl + 8;
		return RD_KEEP;
	case RD_SETUP_EOS:
		if (n < 8)
			return RD_NEED;
		if (be64_get(p) != F_EOS)
			return give_up(rd);
		rd->state = RD_FOOTER;
		*len = 8;
		return RD_KEEP;
	case RD_RECORD:
		return record(rd, p, n, len);
	case RD_FOOTER:
		if (p[0] != SEC_FOOTER) {
			rd->state = RD_SECTION;
			return RD_KEEP;
		}
		if (n < 5)
			return RD_NEED;
		if (be32_get(p + 1) != rd->ram_id)
			return give_up(rd);
		rd->state = RD_SECTION;
		*len = 5;
		return RD_KEEP;
	case RD_PASS:
		break;
	}
	return RD_KEEP;
}

/*
 * Parses what is held: what is kept goes out in runs, what is left of
 * an item that has not all come stays for the next feed.
 */
static int
rd_run(struct ramdiff *rd, ramdiff_sink sink, void *arg)
{
	size_t	 pos = 0, out = 0, len;
	int	 r;

	for (;;) {
		r = item(rd, rd->buf + pos, rd->len - pos, &len);
		if (r == RD_NEED || (len == 0 && pos == rd->len))
			break;
		if (r == RD_DROP) {
			if (pos > out && sink(arg, rd->buf + out,
			    pos - out) == -1)
				return -1;
			out = pos + len;
		}
		pos += len;
	}
	if (pos > out && sink(arg, rd->buf + out, pos - out) == -1)
		return -1;
	memmove(rd->buf, rd->buf + pos, rd->len - pos);
	rd->len -= pos;
	/* Never: an item is shorter than the buffer.  Still, no stall. */
	if (rd->len == sizeof(rd->buf))
		rd->state = RD_PASS;
	return 0;
}

int
ramdiff_feed(struct ramdiff *rd, const uint8_t *in, size_t n,
    ramdiff_sink sink, void *arg)
{
	size_t	 take;

	while (n > 0) {
		if (rd->state == RD_PASS && rd->len == 0)
			return sink(arg, in, n);
		take = sizeof(rd->buf) - rd->len;
		if (take > n)
			take = n;
		memcpy(rd->buf + rd->len, in, take);
		rd->len += take;
		in += take;
		n -= take;
		if (rd_run(rd, sink, arg) == -1)
			return -1;
	}
	return 0;
}

int
ramdiff_end(struct ramdiff *rd, ramdiff_sink sink, void *arg)
{
	if (rd_run(rd, sink, arg) == -1)
		return -1;
	rd->state = RD_PASS;
	if (rd->len > 0 && sink(arg, rd->buf, rd->len) == -1)
		return -1;
	rd->len = 0;
	return 0;
}
