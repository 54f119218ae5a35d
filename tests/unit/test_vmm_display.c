/*
 * The pure parts of the monitor's display, input and console ops
 * (vmm/screenshot.c, input.c, serial.c): the PNG check, the batch of
 * input events as QMP arguments (the largest fits a command), and the
 * serial console's tail as text.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "qmp.h"
#include "utf8.h"
#include "vmm.h"

/* --- vmm_png_size */

static size_t
png_head(uint8_t *p, uint32_t w, uint32_t h)
{
	static const uint8_t	 head[16] = {
		0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n',
		0, 0, 0, 13, 'I', 'H', 'D', 'R'
	};
	int			 i;

	memset(p, 0, 64);
	memcpy(p, head, sizeof(head));
	for (i = 0; i < 4; i++) {
		p[16 + i] = (uint8_t)(w >> (24 - 8 * i));
		p[20 + i] = (uint8_t)(h >> (24 - 8 * i));
	}
	return 64;
}

Test(vmm_display, png_size)
{
	uint8_t		 p[64];
	uint32_t	 w, h;
	size_t		 n;

	n = png_head(p, 720, 400);
	cr_assert_eq(vmm_png_size(p, n, &w, &h), 0);
	cr_assert_eq(w, 720);
	cr_assert_eq(h, 400);
	n = png_head(p, VMM_DISPLAY_MAX, 1);
	cr_assert_eq(vmm_png_size(p, n, &w, &h), 0);
	n = png_head(p, VMM_DISPLAY_MAX + 1, 1);
	cr_assert_eq(vmm_png_size(p, n, &w, &h), -1);
	n = png_head(p, 0, 400);
	cr_assert_eq(vmm_png_size(p, n, &w, &h), -1);
	n = png_head(p, 720, 0);
	cr_assert_eq(vmm_png_size(p, n, &w, &h), -1);
	n = png_head(p, 720, 400);
	cr_assert_eq(vmm_png_size(p, 32, &w, &h), -1, "cut short");
	p[0] = 0x88;
	cr_assert_eq(vmm_png_size(p, n, &w, &h), -1, "signature");
	n = png_head(p, 720, 400);
	p[11] = 14;
	cr_assert_eq(vmm_png_size(p, n, &w, &h), -1, "IHDR length");
	n = png_head(p, 720, 400);
	memcpy(p + 12, "IDAT", 4);
	cr_assert_eq(vmm_png_size(p, n, &w, &h), -1, "IHDR not first");
}

/* --- vmm_input_batch */

static const char *
longest_key(uint16_t *code)
{
	size_t	 i, best = 0;

	for (i = 0; i < key_count; i++)
		if (strlen(key_names[i]) > strlen(key_names[best]))
			best = i;
	*code = (uint16_t)best;
	return key_names[best];
}

static void
assert_event(json_t *events, size_t i, const char *want)
{
	char	*s;

	s = json_dumps(json_array_get(events, i), JSON_SORT_KEYS |
	    JSON_COMPACT);
	cr_assert_not_null(s);
	cr_assert_str_eq(s, want);
	free(s);
}

Test(vmm_display, input_batch_shapes)
{
	struct vmm_input	 ev[5] = {
		{ VMM_IN_KEY, 1, 0, 0 },
		{ VMM_IN_KEY, 0, 0, 0 },
		{ VMM_IN_BTN, 0, VMM_BTN_MIDDLE, 0 },
		{ VMM_IN_ABS, 0, VMM_AXIS_Y, VMM_ABS_MAX },
		{ VMM_IN_REL, 0, VMM_AXIS_X, -VMM_REL_MAX },
	};
	json_t			*args, *events;
	char			 want[256];
	int			 k;

	k = key_lookup("ret");
	cr_assert_geq(k, 0);
	ev[0].code = ev[1].code = (uint16_t)k;
	args = vmm_input_batch(ev, 5);
	cr_assert_eq(json_object_size(args), 1);
	events = json_object_get(args, "events");
	cr_assert_eq(json_array_size(events), 5);
	snprintf(want, sizeof(want), "{\"data\":{\"down\":true,\"key\":"
	    "{\"data\":\"%s\",\"type\":\"qcode\"}},\"type\":\"key\"}",
	    key_names[k]);
	assert_event(events, 0, want);
	snprintf(want, sizeof(want), "{\"data\":{\"down\":false,\"key\":"
	    "{\"data\":\"%s\",\"type\":\"qcode\"}},\"type\":\"key\"}",
	    key_names[k]);
	assert_event(events, 1, want);
	assert_event(events, 2, "{\"data\":{\"button\":\"middle\",\"down\":"
	    "false},\"type\":\"btn\"}");
	assert_event(events, 3, "{\"data\":{\"axis\":\"y\",\"value\":32767},"
	    "\"type\":\"abs\"}");
	assert_event(events, 4, "{\"data\":{\"axis\":\"x\",\"value\":-127},"
	    "\"type\":\"rel\"}");
	json_decref(args);
}

/* The longest batch the codec lets through fits one QMP command. */
Test(vmm_display, largest_batch_encodes)
{
	struct vmm_input	 ev[VMM_INPUT_FRAME_MAX];
	char			 buf[QMP_CMD_MAX];
	json_t			*args;
	uint16_t		 code;
	size_t			 i;
	int			 n;

	(void)longest_key(&code);
	for (i = 0; i < VMM_INPUT_FRAME_MAX; i++) {
		ev[i].kind = VMM_IN_KEY;
		ev[i].down = 0;
		ev[i].code = code;
		ev[i].value = 0;
	}
	args = vmm_input_batch(ev, VMM_INPUT_FRAME_MAX);
	n = qmp_encode_command(buf, sizeof(buf), "input-send-event", args,
	    UINT32_MAX);
	json_decref(args);
	cr_assert_gt(n, 0, "%d events of key %s do not fit %d bytes",
	    VMM_INPUT_FRAME_MAX, key_names[code], QMP_CMD_MAX);
	/* And the old bound was too small for it: the test can fail. */
	args = vmm_input_batch(ev, VMM_INPUT_FRAME_MAX);
	cr_assert_eq(qmp_encode_command(buf, 256, "input-send-event", args,
	    UINT32_MAX), -1);
	json_decref(args);
}

/* --- vmm_serial_tail */

static char	 out[UTF8_DECODED_MAX(VMM_SERIAL_OUT_MAX + 4)];

static size_t
tail(const char *raw, size_t len, int line_start, size_t max,
    uint32_t *whole, uint32_t *replaced)
{
	return vmm_serial_tail((const uint8_t *)raw, len, line_start, out,
	    max, whole, replaced);
}

Test(vmm_display, serial_tail_whole)
{
	uint32_t	 whole, repl;
	size_t		 n;

	n = tail("one\ntwo\n", 8, 1, 100, &whole, &repl);
	cr_assert_eq(n, 8);
	cr_assert_eq(memcmp(out, "one\ntwo\n", 8), 0);
	cr_assert_eq(whole, 1);
	cr_assert_eq(repl, 0);
	/* Not at a line start: the partial first line goes. */
	n = tail("ne\ntwo\n", 7, 0, 100, &whole, &repl);
	cr_assert_eq(n, 4);
	cr_assert_eq(memcmp(out, "two\n", 4), 0);
	cr_assert_eq(whole, 1);
	/* One line, no newline: kept, not whole. */
	n = tail("partial", 7, 0, 100, &whole, &repl);
	cr_assert_eq(n, 7);
	cr_assert_eq(whole, 0);
	cr_assert_eq(repl, 0);
	/* NUL bytes are replaced, as in job output: mcvmd's text has none. */
	n = tail("\0a\0\0b\n", 6, 1, 100, &whole, &repl);
	cr_assert_eq(n, 12);
	cr_assert_eq(memcmp(out, "\xef\xbf\xbd" "a\xef\xbf\xbd\xef\xbf\xbd"
	    "b\n", 12), 0);
	cr_assert_eq(repl, 1);
}

Test(vmm_display, serial_tail_cut_characters)
{
	uint32_t	 whole, repl;
	size_t		 n;

	/* A euro sign cut at the end is held back, not replaced. */
	n = tail("x\n\xe2\x82", 4, 1, 100, &whole, &repl);
	cr_assert_eq(n, 2);
	cr_assert_eq(repl, 0);
	/* One cut at the start is dropped, not replaced. */
	n = tail("\x82\xac" "ab", 4, 0, 100, &whole, &repl);
	cr_assert_eq(n, 2);
	cr_assert_eq(memcmp(out, "ab", 2), 0);
	cr_assert_eq(repl, 0);
	/* Invalid bytes inside are replaced and flagged. */
	n = tail("a\xff" "b\n", 4, 1, 100, &whole, &repl);
	cr_assert_eq(n, 6);
	cr_assert_eq(memcmp(out, "a\xef\xbf\xbd" "b\n", 6), 0);
	cr_assert_eq(repl, 1);
}

/* The text's bound is on the decoded bytes, whatever they expand to. */
Test(vmm_display, serial_tail_bounded)
{
	static char	 raw[VMM_SERIAL_OUT_MAX + 4];
	static char	 check[UTF8_DECODED_MAX(VMM_SERIAL_OUT_MAX)];
	uint32_t	 whole, repl;
	size_t		 n, i;
	int		 errs = 0;
	char		*nl;

	memset(raw, 0xff, sizeof(raw));
	raw[100] = '\0';
	n = tail(raw, sizeof(raw), 1, VMM_SERIAL_OUT_MAX, &whole, &repl);
	cr_assert_leq(n, VMM_SERIAL_OUT_MAX);
	cr_assert_geq(n, VMM_SERIAL_OUT_MAX - 3);
	cr_assert_eq(whole, 0);
	cr_assert_eq(repl, 1);
	/* Lines: the text starts at one, and ends with the last. */
	for (i = 0; i < sizeof(raw); i++)
		raw[i] = i % 10 == 9 ? '\n' : (char)('0' + i % 10);
	n = tail(raw, sizeof(raw), 0, VMM_SERIAL_OUT_MAX, &whole, &repl);
	cr_assert_leq(n, VMM_SERIAL_OUT_MAX);
	cr_assert_eq(whole, 1);
	cr_assert_eq(out[0], '0');
	cr_assert_eq(memcmp(out + n - 4, raw + sizeof(raw) - 4, 4), 0);
	nl = memchr(out, '\n', n);
	cr_assert_eq(nl - out, 9);
	/* Valid UTF-8 out, always. */
	(void)utf8_decode((const uint8_t *)out, n, 1, check, &i, &errs);
	cr_assert_eq(errs, 0);
}
