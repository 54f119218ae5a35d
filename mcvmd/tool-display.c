/*
 * The display tools: vm_screenshot, the input tools (vm_send_keys,
 * vm_type_text, vm_click, vm_mouse_move) and vm_serial_read.  None needs
 * guest software: QEMU takes the screenshot and sends the input events,
 * through the VM's monitor, which alone reads what QEMU writes.
 *
 * Input is turned here into one batch of events (IMSG_VMM_INPUT) that the
 * monitor plays in order, waits included; the batch's time is bounded so
 * that a call ends before a client gives up on it.  A click's (x, y) are
 * pixels of the VM's last screenshot of this boot, the picture the caller
 * looked at: without one, a screenshot is taken first for the display's
 * size.
 */
#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dispatch.h"
#include "keys.h"
#include "log.h"
#include "msg_vmm.h"
#include "proto.h"
#include "req.h"
#include "vm.h"

_Static_assert(TOOL_INPUT_TIME_MAX * 1000 <= VMM_INPUT_TIME_MAX,
    "an input call's time within the monitor's bound");
_Static_assert(TOOL_TYPE_TEXT_MAX * 5 + 8 <= VMM_INPUT_MAX,
    "a text's events within the monitor's bound");

#define SHOT_MIME	"image/png"
#define CLICK_HOLD_MS	60	/* a button held */
#define DOUBLE_GAP_MS	120	/* between a double click's two */
#define MOVE_GAP_MS	8	/* between two motions */
#define HOME_PIXELS	8192	/* a move that reaches any corner */

/* A batch of input events, packed as the monitor reads them. */
struct input {
	uint8_t		 wire[VMM_INPUT_MAX * VMM_INPUT_LEN];
	size_t		 n;
	uint64_t	 ms;		/* the waits' sum */
	size_t		 frame;		/* events since the last wait */
	int		 over;		/* a bound was passed */
};

static struct input	 in;		/* one call's, filled and sent */

static void
in_reset(void)
{
	in.n = in.frame = 0;
	in.ms = 0;
	in.over = 0;
}

static void
in_add(uint8_t kind, uint8_t down, uint16_t code, int32_t value)
{
	struct vmm_input	 e = { kind, down, code, value };

	if (in.n == VMM_INPUT_MAX || (kind != VMM_IN_WAIT &&
	    in.frame == VMM_INPUT_FRAME_MAX)) {
		in.over = 1;
		return;
	}
	msg_vmm_input_pack(&e, in.wire + in.n * VMM_INPUT_LEN);
	in.n++;
	if (kind == VMM_IN_WAIT) {
		in.ms += (uint64_t)value;
		in.frame = 0;
	} else
		in.frame++;
}

static void
in_wait(uint32_t ms)
{
	in_add(VMM_IN_WAIT, 0, 0, (int32_t)ms);
}

static void
in_key(uint16_t key, int down)
{
	in_add(VMM_IN_KEY, down ? 1 : 0, key, 0);
}

/* A press of button btn: down, held, up, then gap ms. */
static void
in_click(uint16_t btn, int twice, uint32_t gap)
{
	int	 i;

	for (i = 0; i < (twice ? 2 : 1); i++) {
		in_add(VMM_IN_BTN, 1, btn, 0);
		in_wait(CLICK_HOLD_MS);
		in_add(VMM_IN_BTN, 0, btn, 0);
		in_wait(i == 0 && twice ? DOUBLE_GAP_MS : gap);
	}
}

/* Relative motion by (dx, dy), in steps of at most step pixels. */
static void
in_move(int64_t dx, int64_t dy, int32_t step)
{
	int32_t	 sx, sy;

	while ((dx != 0 || dy != 0) && !in.over) {
		sx = (int32_t)(dx > step ? step : dx < -step ? -step : dx);
		sy = (int32_t)(dy > step ? step : dy < -step ? -step : dy);
		if (sx != 0)
			in_add(VMM_IN_REL, 0, VMM_AXIS_X, sx);
		if (sy != 0)
			in_add(VMM_IN_REL, 0, VMM_AXIS_Y, sy);
		in_wait(MOVE_GAP_MS);
		dx -= sx;
		dy -= sy;
	}
}

static void
input_done(struct req *r, struct imsg *imsg)
{
	struct msg_vmm_ok	 m;

	if (msg_vmm_ok_get(imsg, &m) == -1) {
		call_req_fail(r, "malformed answer from the VM monitor");
		return;
	}
	call_reply_json(r->call, json_pack("{s:s, s:i}", "vm_id",
	    r->vm->row.id, "events", (int)m.value));
}

/*
 * Sends the batch as r, which was made for type (IMSG_VMM_INPUT: fresh;
 * else the step before), or ends r, failing its call with the bound it
 * passed.
 */
static void
input_send(struct req *r, uint32_t type, const char *fix)
{
	struct msg_vmm_input	 m;
	char			 msg[TOOL_MESSAGE_MAX];

	if (in.over || in.ms > TOOL_INPUT_TIME_MAX * 1000) {
		(void)snprintf(msg, sizeof(msg), "this input would take %s "
		    "than a call may (%d s, %d events): %s", in.over ?
		    "more events" : "longer", TOOL_INPUT_TIME_MAX,
		    VMM_INPUT_MAX, fix);
		req_end(r, REQ_ERROR, msg);
		return;
	}
	if (type != IMSG_VMM_INPUT)
		req_next(r, IMSG_VMM_INPUT, input_done);
	r->wait_ms = (uint32_t)in.ms;
	m.wire = in.wire;
	m.n = in.n;
	msg_vmm_input_put(r->msg, &m);
	(void)req_send(r);
}

/* The input tools' refusal of a VM without input devices. */
static int
need_display(struct tool_call *c)
{
	char	 msg[TOOL_MESSAGE_MAX];

	if (c->vm->row.display)
		return 0;
	(void)snprintf(msg, sizeof(msg), "%s has no display, keyboard or "
	    "mouse: it was created with display false. Create a VM with "
	    "display true (the default) to use %s", c->vm->row.id,
	    c->args->tool->name);
	call_reply(c->id, TOOL_ERROR, msg);
	return -1;
}

/* ---- vm_screenshot */

static void
shot_done(struct req *r, struct imsg *imsg)
{
	struct msg_vmm_screenshot_done	 m;
	struct msg_front_tool_result_fd	 res;
	struct stat			 st;
	char				*json;
	int				 fd = r->keep_fd;

	if (msg_vmm_screenshot_done_get(imsg, &m) == -1) {
		call_req_fail(r, "malformed answer from the VM monitor");
		return;
	}
	/*
	 * Sealed, the bytes frontd streams are the bytes measured here,
	 * whoever else still holds the descriptor.
	 */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW |
	    F_SEAL_WRITE | F_SEAL_SEAL) == -1 || fstat(fd, &st) == -1 ||
	    (uint64_t)st.st_size != m.bytes) {
		log_warnx("%s: screenshot of %llu bytes announced, not held",
		    r->vm->row.id, (unsigned long long)m.bytes);
		call_req_fail(r, "the VM monitor returned a bad screenshot");
		return;
	}
	r->vm->boot.shot_w = m.width;
	r->vm->boot.shot_h = m.height;
	if (asprintf(&json, "{\"width\":%u,\"height\":%u,\"bytes\":%llu}",
	    m.width, m.height, (unsigned long long)m.bytes) == -1)
		fatal("%s", __func__);
	memset(&res, 0, sizeof(res));
	res.status = TOOL_OK;
	res.json = json;
	res.kind = TR_IMAGE;
	res.mime = SHOT_MIME;
	res.size = m.bytes;
	r->keep_fd = -1;
	if (call_reply_fd(r->call, &res, fd) == -1)
		call_req_fail(r, "the screenshot could not be sent");
	free(json);
}

/* A screenshot request, its answer to done; NULL if answered already. */
static struct req *
shot_req(struct tool_call *c, req_done_fn done)
{
	struct req	*r;
	int		 fd, copy;

	if ((fd = memfd_create("screenshot", MFD_CLOEXEC |
	    MFD_ALLOW_SEALING)) == -1 || (copy = dup(fd)) == -1) {
		log_warn("%s: screenshot memfd", c->vm->row.id);
		if (fd != -1)
			close(fd);
		call_reply(c->id, TOOL_ERROR, "no memory for a screenshot "
		    "now: retry");
		return NULL;
	}
	r = call_req(c, IMSG_VMM_SCREENSHOT, done);
	r->keep_fd = fd;
	imsg_set_fd(r->msg, copy);	/* sent, then closed */
	return r;
}

static void
tool_vm_screenshot(struct tool_call *c)
{
	struct req	*r;

	if (need_display(c) == -1)
		return;
	if ((r = shot_req(c, shot_done)) != NULL)
		(void)req_send(r);
}

/* ---- vm_send_keys */

static void
tool_vm_send_keys(struct tool_call *c)
{
	const struct tool_value	*keys = TOOL_ARG(c->args, VM_SEND_KEYS, KEYS);
	uint32_t		 hold, delay;
	uint16_t		 chord[KEY_CHORD_MAX];
	char			 bad[TOOL_KEY_MAX + 32], list[800];
	char			 msg[TOOL_MESSAGE_MAX];
	size_t			 i;
	int			 n, k;

	if (need_display(c) == -1)
		return;
	if (keys == NULL)
		fatalx("frontd: vm_send_keys without keys");
	hold = (uint32_t)TOOL_INT(c->args, VM_SEND_KEYS, HOLD_MS, 100);
	delay = (uint32_t)TOOL_INT(c->args, VM_SEND_KEYS, DELAY_MS, 50);
	in_reset();
	for (i = 0; i < keys->nlist; i++) {
		if ((n = key_chord(keys->list[i], chord, bad,
		    sizeof(bad))) == -1) {
			key_list(list, sizeof(list));
			(void)snprintf(msg, sizeof(msg), "keys[%zu] \"%s\": "
			    "%s is not a key. Keys are pressed together "
			    "with '-' (\"ctrl-alt-f2\"); the keys are: %s",
			    i, keys->list[i], bad, list);
			call_reply(c->id, TOOL_ERROR, msg);
			return;
		}
		for (k = 0; k < n; k++)
			in_key(chord[k], 1);
		in_wait(hold);
		for (k = n - 1; k >= 0; k--)
			in_key(chord[k], 0);
		in_wait(delay);
	}
	input_send(call_req(c, IMSG_VMM_INPUT, input_done), IMSG_VMM_INPUT,
	    "send fewer keys, or lower hold_ms and delay_ms");
}

/* ---- vm_type_text */

static void
tool_vm_type_text(struct tool_call *c)
{
	const char	*text = TOOL_STR(c->args, VM_TYPE_TEXT, TEXT);
	uint32_t	 delay;
	uint16_t	 key, shift = (uint16_t)key_lookup("shift");
	char		 msg[TOOL_MESSAGE_MAX];
	size_t		 i;
	int		 up;

	if (need_display(c) == -1)
		return;
	if (text == NULL)
		fatalx("frontd: vm_type_text without text");
	delay = (uint32_t)TOOL_INT(c->args, VM_TYPE_TEXT, DELAY_MS, 30);
	in_reset();
	for (i = 0; text[i] != '\0'; i++) {
		if (key_of_char((unsigned char)text[i], &key, &up) == -1) {
			(void)snprintf(msg, sizeof(msg), "text[%zu] (byte "
			    "0x%02x) cannot be typed: vm_type_text types "
			    "printable ASCII, tab and newline on a US "
			    "keyboard. Put other text in a file with "
			    "vm_write_file", i, (unsigned char)text[i]);
			call_reply(c->id, TOOL_ERROR, msg);
			return;
		}
		if (up)
			in_key(shift, 1);
		in_key(key, 1);
		in_key(key, 0);
		if (up)
			in_key(shift, 0);
		in_wait(delay);
	}
	if (TOOL_INT(c->args, VM_TYPE_TEXT, ENTER, 0)) {
		in_key((uint16_t)key_lookup("ret"), 1);
		in_key((uint16_t)key_lookup("ret"), 0);
		in_wait(0);
	}
	input_send(call_req(c, IMSG_VMM_INPUT, input_done), IMSG_VMM_INPUT,
	    "type the text in parts, or lower delay_ms");
}

/* ---- vm_click */

static const uint16_t	 buttons[] = { VMM_BTN_LEFT, VMM_BTN_RIGHT,
	VMM_BTN_MIDDLE };

/* Pixel p of a side of n pixels, on the tablet's 0..VMM_ABS_MAX. */
static int32_t
abs_of(int64_t p, uint32_t n)
{
	if (n <= 1)
		return 0;
	return (int32_t)((p * VMM_ABS_MAX + (n - 1) / 2) / (n - 1));
}

/* The display's size is known: the click itself as r, or r ends. */
static void
click_send(struct req *r)
{
	struct vm	*vm = r->vm;
	char		 msg[TOOL_MESSAGE_MAX];

	if (r->click.x >= vm->boot.shot_w || r->click.y >= vm->boot.shot_h) {
		(void)snprintf(msg, sizeof(msg), "(%lld, %lld) is outside "
		    "the display, which is %ux%u in its last screenshot: "
		    "x must be below %u and y below %u",
		    (long long)r->click.x, (long long)r->click.y,
		    vm->boot.shot_w, vm->boot.shot_h, vm->boot.shot_w,
		    vm->boot.shot_h);
		req_end(r, REQ_ERROR, msg);
		return;
	}
	in_reset();
	in_add(VMM_IN_ABS, 0, VMM_AXIS_X, abs_of(r->click.x, vm->boot.shot_w));
	in_add(VMM_IN_ABS, 0, VMM_AXIS_Y, abs_of(r->click.y, vm->boot.shot_h));
	in_wait(MOVE_GAP_MS);
	in_click(r->click.button, r->click.twice, 0);
	input_send(r, IMSG_VMM_INPUT, "click once");
}

/* The screenshot a first click needed, for the display's size. */
static void
click_sized(struct req *r, struct imsg *imsg)
{
	struct msg_vmm_screenshot_done	 m;

	if (msg_vmm_screenshot_done_get(imsg, &m) == -1) {
		call_req_fail(r, "malformed answer from the VM monitor");
		return;
	}
	r->vm->boot.shot_w = m.width;
	r->vm->boot.shot_h = m.height;
	click_send(r);
}

static void
tool_vm_click(struct tool_call *c)
{
	const struct tool_args	*a = c->args;
	struct req		*r;

	if (need_display(c) == -1)
		return;
	if (c->vm->boot.shot_w != 0)
		r = call_req(c, IMSG_VMM_INPUT, input_done);
	else if ((r = shot_req(c, click_sized)) == NULL)
		return;
	r->click.x = TOOL_INT(a, VM_CLICK, X, 0);
	r->click.y = TOOL_INT(a, VM_CLICK, Y, 0);
	r->click.button = buttons[TOOL_INT(a, VM_CLICK, BUTTON, 0)];
	r->click.twice = (int)TOOL_INT(a, VM_CLICK, DOUBLE, 0);
	if (c->vm->boot.shot_w != 0)
		click_send(r);
	else
		(void)req_send(r);
}

/* ---- vm_mouse_move */

static void
tool_vm_mouse_move(struct tool_call *c)
{
	const struct tool_args	*a = c->args;
	int32_t			 step;
	int64_t			 home, btn;

	if (need_display(c) == -1)
		return;
	step = (int32_t)TOOL_INT(a, VM_MOUSE_MOVE, STEP, 32);
	in_reset();
	if ((home = TOOL_INT(a, VM_MOUSE_MOVE, HOME, -1)) != -1)
		/* top-left, top-right, bottom-left, bottom-right */
		in_move(home % 2 == 0 ? -HOME_PIXELS : HOME_PIXELS,
		    home < 2 ? -HOME_PIXELS : HOME_PIXELS, VMM_REL_MAX);
	in_move(TOOL_INT(a, VM_MOUSE_MOVE, DX, 0),
	    TOOL_INT(a, VM_MOUSE_MOVE, DY, 0), step);
	if ((btn = TOOL_INT(a, VM_MOUSE_MOVE, CLICK, -1)) != -1)
		in_click(buttons[btn], (int)TOOL_INT(a, VM_MOUSE_MOVE,
		    DOUBLE, 0), 0);
	if (in.n == 0) {
		call_reply(c->id, TOOL_ERROR, "nothing to do: give dx or dy, "
		    "home, or click");
		return;
	}
	input_send(call_req(c, IMSG_VMM_INPUT, input_done), IMSG_VMM_INPUT,
	    "move less at once, or with a larger step");
}

/* ---- vm_serial_read */

/* The last tail lines of a console's end, as the call's answer. */
static void
serial_reply(uint64_t call, const struct msg_vmm_serial_data *m,
    uint32_t tail)
{
	const char	*p = m->data, *end = p + m->len, *nl;
	json_t		*lines;
	size_t		 n = 0, skip, i, l;

	/* A first line that began before the data is not shown. */
	if (!m->whole && (nl = memchr(p, '\n', m->len)) != NULL)
		p = nl + 1;
	for (nl = p; nl < end; nl++)
		if (*nl == '\n' || nl + 1 == end)
			n++;
	skip = n > tail ? n - tail : 0;
	if ((lines = json_array()) == NULL)
		fatalx("%s: json_array", __func__);
	for (i = 0; p < end; i++, p = nl + 1) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		if (i < skip)
			continue;
		l = (size_t)(nl - p);
		if (l > 0 && p[l - 1] == '\r')
			l--;
		if (json_array_append_new(lines, json_stringn(p, l)) == -1)
			fatalx("%s: line", __func__);
	}
	call_reply_json(call, json_pack("{s:o, s:b, s:b, s:I}", "lines",
	    lines, "truncated", skip > 0 || !m->whole, "replaced",
	    (int)m->replaced, "total_bytes", (json_int_t)m->total));
}

static void
serial_done(struct req *r, struct imsg *imsg)
{
	const struct vm_console		*k = r->vm->console;
	struct msg_vmm_serial_data	 m, both;
	char				*buf;

	if (msg_vmm_serial_data_get(imsg, &m) == -1) {
		call_req_fail(r, "malformed answer from the VM monitor");
		return;
	}
	/*
	 * A VM from its own disks keeps its install CD's console while
	 * it runs: that console's end, then this boot's.
	 */
	if (k == NULL || !vm_own_disks(r->vm)) {
		serial_reply(r->call, &m, r->tail_lines);
		return;
	}
	if ((buf = malloc(k->m.len + 1 + m.len)) == NULL)
		fatal("%s", __func__);
	memcpy(buf, k->m.data, k->m.len);
	both.len = k->m.len;
	if (both.len > 0 && buf[both.len - 1] != '\n')
		buf[both.len++] = '\n';
	memcpy(buf + both.len, m.data, m.len);
	both.len += m.len;
	both.data = buf;
	both.total = k->m.total + m.total;
	both.whole = k->m.whole;
	both.replaced = k->m.replaced || m.replaced;
	serial_reply(r->call, &both, r->tail_lines);
	free(buf);
}

static void
tool_vm_serial_read(struct tool_call *c)
{
	const struct vm_console	*k = c->vm->console;
	uint32_t		 tail;
	struct req		*r;

	tail = (uint32_t)TOOL_INT(c->args, VM_SERIAL_READ, TAIL_LINES, 50);
	/*
	 * Stopped: what was kept when it stopped, until it starts; a VM
	 * from its own disks also from its guest's end (QEMU ending) to
	 * its next boot, as after its install CD's.
	 */
	if (k != NULL && (c->vm->state == VS_STOPPED ||
	    c->vm->state == VS_STOPPING || (vm_own_disks(c->vm) &&
	    (c->vm->state == VS_CREATING || c->vm->state == VS_BOOTING ||
	    c->vm->boot.guest_ended)))) {
		serial_reply(c->id, &k->m, tail);
		return;
	}
	if (!vm_live(c->vm)) {
		call_refuse_state(c->id, c->vm);
		return;
	}
	r = call_req(c, IMSG_VMM_SERIAL_READ, serial_done);
	r->tail_lines = tail;
	(void)req_send(r);
}

/* The tools of this file (see TOOL_IMPL in dispatch.h). */
TOOL_IMPL(TOOL_VM_SCREENSHOT, tool_vm_screenshot, NULL, NULL, NULL, -1);
TOOL_IMPL(TOOL_VM_SEND_KEYS, tool_vm_send_keys, NULL, NULL, NULL, -1);
TOOL_IMPL(TOOL_VM_TYPE_TEXT, tool_vm_type_text, NULL, NULL, NULL, -1);
TOOL_IMPL(TOOL_VM_CLICK, tool_vm_click, NULL, NULL, NULL, -1);
TOOL_IMPL(TOOL_VM_MOUSE_MOVE, tool_vm_mouse_move, NULL, NULL, NULL, -1);
TOOL_IMPL(TOOL_VM_SERIAL_READ, tool_vm_serial_read, NULL, NULL, NULL, -1);
