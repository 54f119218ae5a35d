/*
 * libFuzzer target for the host side of the agent protocol: the bytes a
 * (possibly hostile) guest sends.  The input is a stream of frames, read
 * the way the VM monitor reads them.  Every frame that decodes must
 * encode back to the same bytes; job output pages go through the UTF-8
 * page decoder and base64, as the host serves them.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent_proto.h"
#include "b64.h"
#include "utf8.h"

int	 LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static uint8_t	 again[AGENT_FRAME_MAX];
static char	 text[UTF8_DECODED_MAX(AGENT_PAGE_MAX)];
static char	 enc[B64_ENCODED_LEN(AGENT_FILE_CHUNK_MAX) + 1];
static uint8_t	 dec[AGENT_FILE_CHUNK_MAX];

static void
page(const struct agent_job_status *st, int stream, uint64_t cursor,
    const uint8_t *p, uint32_t len)
{
	size_t	 used, outlen;
	long	 n;
	int	 errs = 0;

	used = utf8_decode(p, len, agent_page_final(st, stream, cursor, len),
	    text, &outlen, &errs);
	if (used > len || outlen > UTF8_DECODED_MAX(len))
		abort();
	b64_encode(p, len, enc);
	n = b64_decode(enc, B64_ENCODED_LEN(len), dec);
	if (n != (long)len || (len > 0 && memcmp(dec, p, len) != 0))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct agent_hdr hdr;
	struct agent_msg m;
	size_t		 off = 0;
	int		 n, k;

	while (off < size) {
		n = agent_frame_check(data + off, size - off, &hdr);
		if (n <= 0)
			break;	/* malformed: the connection is dropped */
		if (agent_decode(&hdr, data + off + AGENT_HDR_LEN, &m) == 0) {
			k = agent_encode(&m, again, sizeof(again));
			if (k != n || memcmp(again, data + off, (size_t)n) != 0)
				abort();
			if (m.type == (AGENT_REPLY | AGENT_JOB_READ)) {
				page(&m.u.output.st, 0, m.u.output.out_cursor,
				    m.u.output.out, m.u.output.out_len);
				page(&m.u.output.st, 1, m.u.output.err_cursor,
				    m.u.output.err, m.u.output.err_len);
			}
		}
		off += (size_t)n;
	}
	/* The raw bytes as base64 text, as a client might send them. */
	if (size <= sizeof(dec))
		(void)b64_decode((const char *)data, size, dec);
	return 0;
}
