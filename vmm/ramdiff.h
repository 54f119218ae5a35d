/*
 * A checkpoint relative to the RAM file a VM maps copy-on-write (a
 * template's, or the base a hibernated clone keeps of it): QEMU's
 * migration stream passes through, less each record of that file's RAM
 * block whose page already holds, in the file, what the record would
 * write.  Loaded into a QEMU that maps the same file copy-on-write, the
 * stream leaves those pages the file's: the same bytes, neither read nor
 * copied.  A clone of a template writes a few MiB of the ~100 the stream
 * would hold.
 *
 * What is dropped: a page record (PAGE) whose 4 KiB equal the file's at
 * its offset; a zero record (ZERO, value 0) of a page the file has in a
 * hole (ramdiff_data says where the file has data: a hole reads as
 * zeros, and is never read here, as reading it would fill the page
 * cache); in both cases only if no earlier record of that page was kept.
 * What is rewritten: the header of a kept record that continues a block
 * (CONTINUE) the loader, for the records dropped before it, does not
 * have as its last one: it names its block.  Everything else passes as
 * it came, and the first byte the filter does not understand (another
 * section first, a flag it does not know, x-ignore-shared, a block list
 * that does not add up) passes the rest of the stream through whole: the
 * filter drops only what it parsed.
 *
 * The stream, QEMU 7.2's (migration/savevm.c, ram.c): magic, version 3;
 * the configuration (0x07, its name, its subsections 0x05); the "ram"
 * section's start (0x01, id, name, instance, version): the RAM's size
 * with MEM_SIZE, each block's name and length, EOS; its parts and end
 * (0x02, 0x03, id): records until EOS; each section ends with a footer
 * (0x7e, id) or none.  A record: be64 offset | flags, the block's name
 * unless CONTINUE, then one byte (ZERO) or a page (PAGE).
 */
#ifndef MCVM_RAMDIFF_H
#define MCVM_RAMDIFF_H

#include <stddef.h>
#include <stdint.h>

#define RAMDIFF_PAGE		4096

struct ramdiff;

/* Writes the bytes out: 0, or -1 (the filter then fails). */
typedef int	(*ramdiff_sink)(void *, const uint8_t *, size_t);

/*
 * A filter against file (len bytes, a multiple of RAMDIFF_PAGE, mapped
 * read-only), the contents of the RAM block named block.  Until
 * ramdiff_data marks some, the file is all holes.  NULL if out of memory.
 */
struct ramdiff	*ramdiff_new(const uint8_t *, uint64_t, const char *);
/* The file has data in [off, off + len): its pages are compared. */
void	 ramdiff_data(struct ramdiff *, uint64_t, uint64_t);
/* The stream's next n bytes, any split: 0, or -1 if the sink failed. */
int	 ramdiff_feed(struct ramdiff *, const uint8_t *, size_t,
	    ramdiff_sink, void *);
/* The stream ended: what is held goes out as it is. 0 or -1. */
int	 ramdiff_end(struct ramdiff *, ramdiff_sink, void *);
/* Records dropped. */
uint64_t ramdiff_dropped(const struct ramdiff *);
void	 ramdiff_free(struct ramdiff *);

#endif
