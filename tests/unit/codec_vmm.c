/* The monitor's messages, for test_codec.c. */
#include <stdint.h>
#include <string.h>

#include "agent_proto.h"
#include "keys.h"
#include "msg_vmm.h"
#include "proto.h"
#include "validate.h"
#include "codec_table.h"

CODEC_WRAP(vmm_ready)
CODEC_WRAP(vmm_event)
CODEC_WRAP(vmm_error)
CODEC_WRAP(vmm_ok)
CODEC_WRAP(vmm_qmp_state)
CODEC_WRAP(vmm_exec)
CODEC_WRAP(vmm_job)
CODEC_WRAP(vmm_job_status)
CODEC_WRAP(vmm_job_cancel)
CODEC_WRAP(vmm_job_state)
CODEC_WRAP(vmm_job_read)
CODEC_WRAP(vmm_job_output)
CODEC_WRAP(vmm_file_read)
CODEC_WRAP(vmm_file_data)
CODEC_WRAP(vmm_file_write)
CODEC_WRAP(vmm_file_written)
CODEC_WRAP(vmm_file_list)
CODEC_WRAP(vmm_file_entries)
CODEC_WRAP(vmm_guest_info_result)
CODEC_WRAP(vmm_set_time)
CODEC_WRAP(vmm_identity)
CODEC_WRAP(vmm_net_config)
CODEC_WRAP(vmm_screenshot_done)
CODEC_WRAP(vmm_input)
CODEC_WRAP(vmm_serial_data)
CODEC_WRAP(vmm_snapshot)
CODEC_WRAP(vmm_checkpoint)
CODEC_WRAP(vmm_incoming)
CODEC_WRAP(vmm_snapshot_done)

#define INFO	(AGENT_INFO_STR_MAX - 1)

static void
fill_ready(void *p)
{
	struct msg_vmm_ready	*m = p;

	m->agent_version = codec_str(INFO);
	m->os = codec_str(INFO);
	m->kernel = codec_str(INFO);
}

static int
over_ready(void *p, int i)
{
	struct msg_vmm_ready	*m = p;

	switch (i) {
	case 0: m->agent_version = codec_str(INFO + 1); break;
	case 1: m->os = codec_str(INFO + 1); break;
	case 2: m->kernel = codec_str(INFO + 1); break;
	case 3: m->os = "\xff"; break;
	default: return -1;
	}
	return 0;
}

static void
fill_event(void *p)
{
	struct msg_vmm_event	*m = p;

	m->event = VMM_EV_HELD;
	m->detail = codec_str(VMM_DETAIL_MAX);
}

static int
over_event(void *p, int i)
{
	struct msg_vmm_event	*m = p;

	switch (i) {
	case 0: m->detail = codec_str(VMM_DETAIL_MAX + 1); break;
	case 1: m->event = VMM_EV_HELD + 1; break;
	case 2: m->event = 0; break;
	default: return -1;
	}
	return 0;
}

static void
fill_error(void *p)
{
	struct msg_vmm_error	*m = p;

	m->code = VMM_ERR_BUSY;
	m->sys_errno = UINT32_MAX;
	m->message = codec_str(AGENT_ERRMSG_MAX - 1);
}

static int
over_error(void *p, int i)
{
	struct msg_vmm_error	*m = p;

	switch (i) {
	case 0: m->message = codec_str(AGENT_ERRMSG_MAX); break;
	case 1: m->code = AGENT_ERR_MAX; break;
	case 2: m->code = VMM_ERR_BUSY + 1; break;
	case 3: m->message = "\xc3"; break;
	default: return -1;
	}
	return 0;
}

static void
fill_ok(void *p)
{
	((struct msg_vmm_ok *)p)->value = UINT32_MAX;
}

static void
fill_qmp_state(void *p)
{
	struct msg_vmm_qmp_state	*m = p;

	m->status = codec_str(VMM_QMP_STATUS_MAX);
	m->running = 1;
}

static int
over_qmp_state(void *p, int i)
{
	struct msg_vmm_qmp_state	*m = p;

	switch (i) {
	case 0: m->status = codec_str(VMM_QMP_STATUS_MAX + 1); break;
	case 1: m->running = 2; break;
	default: return -1;
	}
	return 0;
}

/* 256 arguments and 128 variables, AGENT_ARGS_TOTAL_MAX bytes in all. */
static void
fill_exec(void *p)
{
	struct msg_vmm_exec	*m = p;
	size_t			 left = AGENT_ARGS_TOTAL_MAX, n;
	uint32_t		 i;

	m->flags = 0;
	m->timeout_ms = AGENT_TIMEOUT_MAX_MS;
	m->cwd = codec_str(AGENT_PATH_MAX - 1);
	m->argc = AGENT_ARGC_MAX;
	m->envc = AGENT_ENVC_MAX;
	left -= AGENT_ARGC_MAX + AGENT_ENVC_MAX;	/* the NULs */
	for (i = 0; i < m->argc; i++) {
		n = left < AGENT_ARG_MAX - 1 ? left : AGENT_ARG_MAX - 1;
		m->argv[i] = codec_str(n);
		left -= n;
	}
	for (i = 0; i < m->envc; i++)
		m->env[i] = "";
	m->input = codec_bytes(AGENT_STDIN_MAX);
	m->input_len = AGENT_STDIN_MAX;
}

static int
over_exec(void *p, int i)
{
	struct msg_vmm_exec	*m = p;

	switch (i) {
	case 0: m->cwd = codec_str(AGENT_PATH_MAX); break;
	case 1: m->argc = 0; break;
	case 2: m->flags = AGENT_EXEC_FLAGS + 1; break;
	case 3: m->timeout_ms = AGENT_TIMEOUT_MAX_MS + 1; break;
	case 4: m->env[0] = codec_str(AGENT_ARG_MAX); break;
	case 5: m->env[1] = "x"; break;			/* the total */
	case 6: m->input_len = AGENT_STDIN_MAX + 1; break;
	case 7: m->flags = AGENT_EXEC_SHELL; break;	/* argc must be 1 */
	case 8: m->argv[0] = codec_str(AGENT_ARG_MAX); break;
	default: return -1;
	}
	if (i == 6)
		m->input = codec_bytes(m->input_len);
	return 0;
}

static void
fill_job(void *p)
{
	((struct msg_vmm_job *)p)->job = UINT32_MAX;
}

static void
fill_job_status(void *p)
{
	((struct msg_vmm_job_status *)p)->job = UINT32_MAX;
}

static void
fill_job_cancel(void *p)
{
	((struct msg_vmm_job_cancel *)p)->job = UINT32_MAX;
}

static void
fill_status(struct msg_job_status *st)
{
	st->job = UINT32_MAX;
	st->state = AGENT_JOB_STATE_MAX - 1;
	st->out_eof = st->err_eof = 1;
	st->exit_code = INT32_MIN;
	st->signal = INT32_MAX;
	/* One under the largest: a cursor after it still fits. */
	st->out_total = st->err_total = UINT64_MAX - 1;
	st->out_gap = st->err_gap = AGENT_JOB_HEAD_MAX;
	st->out_dropped = st->err_dropped = st->out_total -
	    AGENT_JOB_HEAD_MAX - AGENT_JOB_TAIL_MAX;
	st->runtime_ms = UINT64_MAX;
}

static int
over_status(struct msg_job_status *st, int i)
{
	switch (i) {
	case 0: st->state = AGENT_JOB_STATE_MAX; break;
	case 1: st->state = 0; break;
	case 2: st->out_gap++; break;
	case 3: st->out_eof = 2; break;
	case 4: st->err_eof = 2; break;
	case 5: st->err_dropped--; break;	/* keeps too much */
	case 6: st->out_total = st->out_dropped - 1; break;
	case 7: st->err_gap++; break;
	case 8: st->out_dropped = 0; break;	/* a gap but none dropped */
	default: return -1;
	}
	return 0;
}

static void
fill_job_state(void *p)
{
	fill_status(&((struct msg_vmm_job_state *)p)->st);
}

static int
over_job_state(void *p, int i)
{
	return over_status(&((struct msg_vmm_job_state *)p)->st, i);
}

static void
fill_job_read(void *p)
{
	struct msg_vmm_job_read	*m = p;

	m->job = UINT32_MAX;
	m->out_cursor = m->err_cursor = UINT64_MAX;
	m->out_max = m->err_max = AGENT_PAGE_MAX;
	m->encoding = VMM_ENC_BASE64;
	m->wait_ms = AGENT_WAIT_MAX_MS;
}

static int
over_job_read(void *p, int i)
{
	struct msg_vmm_job_read	*m = p;

	switch (i) {
	case 0: m->out_max = AGENT_PAGE_MAX + 1; break;
	case 1: m->err_max = AGENT_PAGE_MAX + 1; break;
	case 2: m->encoding = VMM_ENC_BASE64 + 1; break;
	case 3: m->wait_ms = AGENT_WAIT_MAX_MS + 1; break;
	default: return -1;
	}
	return 0;
}

static void
fill_job_output(void *p)
{
	struct msg_vmm_job_output	*m = p;

	fill_status(&m->st);
	m->out_next = m->st.out_total;
	m->err_next = m->st.err_total;
	m->out_skipped = m->st.out_dropped;
	m->err_skipped = m->st.err_dropped;
	m->out = m->err = codec_str(VMM_TEXT_MAX);
	m->out_errors = m->err_errors = 1;
}

static int
over_job_output(void *p, int i)
{
	struct msg_vmm_job_output	*m = p;

	switch (i) {
	case 0: m->out = codec_str(VMM_TEXT_MAX + 1); break;
	case 1: m->err = codec_str(VMM_TEXT_MAX + 1); break;
	case 2: m->out_errors = 2; break;
	case 3: m->err_errors = 2; break;
	case 4: m->out_next++; break;
	case 5: m->err_next++; break;
	case 6: m->out = "\x80"; break;
	case 7: m->out_skipped++; break;
	case 8: m->err_skipped++; break;
	default: return over_status(&m->st, i - 9);
	}
	return 0;
}

static void
fill_file_read(void *p)
{
	struct msg_vmm_file_read	*m = p;

	m->path = codec_str(AGENT_PATH_MAX - 1);
	m->offset = UINT64_MAX;
	m->length = AGENT_FILE_CHUNK_MAX;
	m->encoding = VMM_ENC_BASE64;
}

static int
over_file_read(void *p, int i)
{
	struct msg_vmm_file_read	*m = p;

	switch (i) {
	case 0: m->path = codec_str(AGENT_PATH_MAX); break;
	case 1: m->length = AGENT_FILE_CHUNK_MAX + 1; break;
	case 2: m->encoding = VMM_ENC_BASE64 + 1; break;
	default: return -1;
	}
	return 0;
}

/* Text: the largest is all text. */
static void
fill_file_data(void *p)
{
	struct msg_vmm_file_data	*m = p;

	m->offset = m->size = UINT64_MAX;
	m->eof = 1;
	m->text = 1;
	m->data = codec_str(AGENT_FILE_CHUNK_MAX);
	m->len = AGENT_FILE_CHUNK_MAX;
}

static int
over_file_data(void *p, int i)
{
	struct msg_vmm_file_data	*m = p;

	switch (i) {
	case 0: m->eof = 2; break;
	case 1:
		m->len = AGENT_FILE_CHUNK_MAX + 1;
		m->data = codec_str(m->len);
		break;
	case 2: m->text = 2; break;
	case 3:
		/* Bytes that are not UTF-8 (one is 0xff) are not text. */
		m->data = codec_bytes(AGENT_FILE_CHUNK_MAX);
		break;
	default: return -1;
	}
	return 0;
}

static void
fill_file_list(void *p)
{
	struct msg_vmm_file_list	*m = p;

	m->path = codec_str(AGENT_PATH_MAX - 1);
	m->depth = AGENT_LIST_DEPTH_MAX;
	m->max = AGENT_LIST_MAX;
}

static int
over_file_list(void *p, int i)
{
	struct msg_vmm_file_list	*m = p;

	switch (i) {
	case 0: m->path = codec_str(AGENT_PATH_MAX); break;
	case 1: m->depth = AGENT_LIST_DEPTH_MAX + 1; break;
	case 2: m->depth = 0; break;
	case 3: m->max = AGENT_LIST_MAX + 1; break;
	case 4: m->max = 0; break;
	default: return -1;
	}
	return 0;
}

/* Every entry, the names filling their bound together. */
#define ENTRY_NAME	(VMM_NAMES_MAX / AGENT_LIST_MAX)

static void
fill_file_entries(void *p)
{
	struct msg_vmm_file_entries	*m = p;
	uint32_t			 i;

	m->truncated = 1;
	m->count = AGENT_LIST_MAX;
	for (i = 0; i < m->count; i++) {
		m->ents[i].name = codec_str(ENTRY_NAME);
		m->ents[i].type = AGENT_FTYPE_MAX - 1;
		m->ents[i].mode = 07777;
		m->ents[i].size = UINT64_MAX;
		m->ents[i].mtime = INT64_MIN;
	}
	m->ents[0].name = codec_str(ENTRY_NAME +
	    VMM_NAMES_MAX % AGENT_LIST_MAX);
}

static int
over_file_entries(void *p, int i)
{
	struct msg_vmm_file_entries	*m = p;

	switch (i) {
	case 0: m->truncated = 2; break;
	case 1: m->ents[1].name = codec_str(ENTRY_NAME + 1); break;
	case 2: m->ents[2].name = ""; break;
	case 3: m->ents[3].type = AGENT_FTYPE_MAX; break;
	case 4: m->ents[4].type = 0; break;
	case 5: m->ents[5].mode = 010000; break;
	case 6: m->ents[6].name = "\xff"; break;
	default: return -1;
	}
	return 0;
}

static void
fill_file_write(void *p)
{
	struct msg_vmm_file_write	*m = p;

	m->path = codec_str(AGENT_PATH_MAX - 1);
	m->flags = AGENT_WRITE_FLAGS;
	m->offset = UINT64_MAX;
	m->mode = 07777;
	m->data = codec_bytes(AGENT_FILE_CHUNK_MAX);
	m->len = AGENT_FILE_CHUNK_MAX;
}

static int
over_file_write(void *p, int i)
{
	struct msg_vmm_file_write	*m = p;

	switch (i) {
	case 0: m->path = codec_str(AGENT_PATH_MAX); break;
	case 1: m->flags = AGENT_WRITE_FLAGS + 1; break;
	case 2: m->mode = 010000; break;
	case 3:
		m->len = AGENT_FILE_CHUNK_MAX + 1;
		m->data = codec_bytes(m->len);
		break;
	default: return -1;
	}
	return 0;
}

static void
fill_file_written(void *p)
{
	struct msg_vmm_file_written	*m = p;

	m->size = UINT64_MAX;
	m->written = AGENT_FILE_CHUNK_MAX;
}

static int
over_file_written(void *p, int i)
{
	if (i > 0)
		return -1;
	((struct msg_vmm_file_written *)p)->written = AGENT_FILE_CHUNK_MAX + 1;
	return 0;
}

static void
fill_guest_info_result(void *p)
{
	struct msg_vmm_guest_info_result	*m = p;

	m->os = m->kernel = m->agent_version = codec_str(INFO);
	m->uptime_ms = UINT64_MAX;
	m->jobs_active = m->jobs_total = UINT32_MAX;
	m->frozen = 1;
	for (m->njobs = 0; m->njobs < AGENT_JOBS_TOTAL_MAX; m->njobs++) {
		m->jobs[m->njobs].job = UINT32_MAX;
		m->jobs[m->njobs].state = AGENT_JOB_STATE_MAX - 1;
	}
}

static int
over_guest_info_result(void *p, int i)
{
	struct msg_vmm_guest_info_result	*m = p;

	switch (i) {
	case 0: m->os = codec_str(INFO + 1); break;
	case 1: m->kernel = codec_str(INFO + 1); break;
	case 2: m->agent_version = codec_str(INFO + 1); break;
	case 3: m->frozen = 2; break;
	case 4: m->kernel = "\xed\xa0\x80"; break;	/* a surrogate */
	case 5: m->jobs[3].job = 0; break;
	case 6: m->jobs[4].state = AGENT_JOB_STATE_MAX; break;
	case 7: m->jobs[5].state = 0; break;
	default: return -1;
	}
	return 0;
}

static void
fill_set_time(void *p)
{
	struct msg_vmm_set_time	*m = p;

	m->sec = INT64_MAX;
	m->nsec = VMM_NSEC_MAX;
}

static int
over_set_time(void *p, int i)
{
	struct msg_vmm_set_time	*m = p;

	switch (i) {
	case 0: m->sec = (uint64_t)INT64_MAX + 1; break;
	case 1: m->nsec = VMM_NSEC_MAX + 1; break;
	default: return -1;
	}
	return 0;
}

static void
fill_net_config(void *p)
{
	struct msg_vmm_net_config	*m = p;

	m->address = m->gateway = m->resolver = m->mac =
	    codec_str(AGENT_NET_STR_MAX - 1);
}

static int
over_net_config(void *p, int i)
{
	struct msg_vmm_net_config	*m = p;
	const char			*s = codec_str(AGENT_NET_STR_MAX);

	switch (i) {
	case 0: m->address = s; break;
	case 1: m->gateway = s; break;
	case 2: m->resolver = s; break;
	case 3: m->mac = s; break;
	default: return -1;
	}
	return 0;
}

static void
fill_identity(void *p)
{
	struct msg_vmm_identity	*m = p;

	m->hostname = codec_str(AGENT_HOSTNAME_MAX);
}

/* Too long, or not a host name. */
static int
over_identity(void *p, int i)
{
	struct msg_vmm_identity	*m = p;

	switch (i) {
	case 0: m->hostname = codec_str(AGENT_HOSTNAME_MAX + 1); break;
	case 1: m->hostname = "-a"; break;
	case 2: m->hostname = "A"; break;
	case 3: m->hostname = ""; break;
	default: return -1;
	}
	return 0;
}

static void
fill_screenshot_done(void *p)
{
	struct msg_vmm_screenshot_done	*m = p;

	m->width = m->height = VMM_DISPLAY_MAX;
	m->bytes = VMM_SCREENSHOT_MAX;
}

static int
over_screenshot_done(void *p, int i)
{
	struct msg_vmm_screenshot_done	*m = p;

	switch (i) {
	case 0: m->width = VMM_DISPLAY_MAX + 1; break;
	case 1: m->height = 0; break;
	case 2: m->bytes = VMM_SCREENSHOT_MAX + 1; break;
	case 3: m->bytes = 0; break;
	default: return -1;
	}
	return 0;
}

static void
fill_checkpoint(void *p)
{
	((struct msg_vmm_checkpoint *)p)->shared = 1;
	((struct msg_vmm_checkpoint *)p)->durable = 1;
	((struct msg_vmm_checkpoint *)p)->relative = 1;
}

static int
over_checkpoint(void *p, int i)
{
	switch (i) {
	case 0: ((struct msg_vmm_checkpoint *)p)->shared = 2; break;
	case 1: ((struct msg_vmm_checkpoint *)p)->durable = 2; break;
	case 2: ((struct msg_vmm_checkpoint *)p)->relative = 2; break;
	default: return -1;
	}
	return 0;
}

static void
fill_incoming(void *p)
{
	((struct msg_vmm_incoming *)p)->shared = 1;
}

static int
over_incoming(void *p, int i)
{
	if (i > 0)
		return -1;
	((struct msg_vmm_incoming *)p)->shared = 2;
	return 0;
}

static void
fill_snapshot(void *p)
{
	struct msg_vmm_snapshot	*m = p;

	m->op = VMM_SNAP_DELETE;
	m->tag = codec_str(OBJ_NAME_MAX);
	m->hold = 1;
}

static int
over_snapshot(void *p, int i)
{
	struct msg_vmm_snapshot	*m = p;

	switch (i) {
	case 0: m->op = 0; break;
	case 1: m->op = VMM_SNAP_DELETE + 1; break;
	case 2: m->tag = codec_str(OBJ_NAME_MAX + 1); break;
	case 3: m->tag = ""; break;
	case 4: m->tag = "12"; break;
	case 5: m->tag = "Up"; break;
	case 6: m->tag = "a/b"; break;
	case 7: m->hold = 2; break;
	default: return -1;
	}
	return 0;
}

static void
fill_snapshot_done(void *p)
{
	struct msg_vmm_snapshot_done	*m = p;

	m->vm_size = VMM_SNAP_SIZE_MAX;
	m->found = 1;
}

static int
over_snapshot_done(void *p, int i)
{
	struct msg_vmm_snapshot_done	*m = p;

	switch (i) {
	case 0: m->vm_size = (uint64_t)VMM_SNAP_SIZE_MAX + 1; break;
	case 1: m->found = 2; break;
	default: return -1;
	}
	return 0;
}

/* Every kind at its bounds, in batches of the most events at once. */
static uint8_t	 input_wire[VMM_INPUT_MAX * VMM_INPUT_LEN];

static void
input_set(size_t i, uint8_t kind, uint8_t down, uint16_t code, int32_t v)
{
	struct vmm_input	 e = { kind, down, code, v };

	msg_vmm_input_pack(&e, input_wire + i * VMM_INPUT_LEN);
}

static void
fill_input(void *p)
{
	struct msg_vmm_input	*m = p;
	size_t			 i;

	for (i = 0; i < VMM_INPUT_MAX; i++)
		switch (i % (VMM_INPUT_FRAME_MAX + 1)) {
		case VMM_INPUT_FRAME_MAX:
			input_set(i, VMM_IN_WAIT, 0, 0, i < VMM_INPUT_FRAME_MAX
			    + 1 ? VMM_INPUT_WAIT_MAX : 0);
			break;
		case 0: input_set(i, VMM_IN_KEY, 1, key_count - 1, 0); break;
		case 1: input_set(i, VMM_IN_BTN, 1, VMM_BTN_COUNT - 1, 0);
			break;
		case 2: input_set(i, VMM_IN_ABS, 0, VMM_AXIS_Y, VMM_ABS_MAX);
			break;
		case 3: input_set(i, VMM_IN_REL, 0, VMM_AXIS_X, -VMM_REL_MAX);
			break;
		default: input_set(i, VMM_IN_REL, 0, VMM_AXIS_Y, VMM_REL_MAX);
			break;
		}
	m->wire = input_wire;
	m->n = VMM_INPUT_MAX;
}

static int
over_input(void *p, int i)
{
	struct msg_vmm_input	*m = p;

	switch (i) {
	case 0: input_set(0, VMM_IN_KEY, 1, key_count, 0); break;
	case 1: input_set(1, VMM_IN_BTN, 2, 0, 0); break;
	case 2: input_set(2, VMM_IN_ABS, 0, 0, VMM_ABS_MAX + 1); break;
	case 3: input_set(3, VMM_IN_REL, 0, 0, VMM_REL_MAX + 1); break;
	case 4: input_set(3, VMM_IN_REL, 0, 2, 1); break;
	case 5: input_set(4, 0, 0, 0, 0); break;
	case 6:		/* one event more at once */
		input_set(VMM_INPUT_FRAME_MAX, VMM_IN_KEY, 0, 0, 0);
		break;
	case 7:		/* the waits over their sum */
		input_set(2 * VMM_INPUT_FRAME_MAX + 1, VMM_IN_WAIT, 0, 0,
		    VMM_INPUT_WAIT_MAX);
		input_set(3 * VMM_INPUT_FRAME_MAX + 2, VMM_IN_WAIT, 0, 0,
		    VMM_INPUT_TIME_MAX);
		break;
	case 8: input_set(VMM_INPUT_FRAME_MAX, VMM_IN_WAIT, 0, 0,
		    VMM_INPUT_WAIT_MAX + 1); break;
	case 9: m->n = 0; break;
	default: return -1;
	}
	return 0;
}

static void
fill_serial_data(void *p)
{
	struct msg_vmm_serial_data	*m = p;

	m->total = UINT64_MAX;
	m->whole = 1;
	m->replaced = 1;
	m->data = codec_str(VMM_SERIAL_OUT_MAX);
	m->len = VMM_SERIAL_OUT_MAX;
}

static int
over_serial_data(void *p, int i)
{
	struct msg_vmm_serial_data	*m = p;

	switch (i) {
	case 0: m->whole = 2; break;
	case 1: m->replaced = 2; break;
	case 2:
		m->len = VMM_SERIAL_OUT_MAX + 1;
		m->data = codec_str(m->len);
		break;
	case 3: m->data = codec_bytes(VMM_SERIAL_OUT_MAX); break;
	case 4: m->total = (m->len - 1) / 3; break;	/* > 3x */
	default: return -1;
	}
	return 0;
}

const struct codec codec_vmm[] = {
	CODEC(IMSG_VMM_READY, vmm_ready, fill_ready, over_ready),
	CODEC(IMSG_VMM_EVENT, vmm_event, fill_event, over_event),
	CODEC(IMSG_VMM_ERROR, vmm_error, fill_error, over_error),
	CODEC(IMSG_VMM_OK, vmm_ok, fill_ok, NULL),
	CODEC0(IMSG_VMM_QMP_STATUS, vmm_qmp_status),
	CODEC(IMSG_VMM_QMP_STATE, vmm_qmp_state, fill_qmp_state,
	    over_qmp_state),
	CODEC0(IMSG_VMM_PAUSE, vmm_pause),
	CODEC0(IMSG_VMM_CONT, vmm_cont),
	CODEC0(IMSG_VMM_POWERDOWN, vmm_powerdown),
	CODEC0(IMSG_VMM_QUIT, vmm_quit),
	CODEC(IMSG_VMM_EXEC, vmm_exec, fill_exec, over_exec),
	CODEC(IMSG_VMM_JOB, vmm_job, fill_job, NULL),
	CODEC(IMSG_VMM_JOB_STATUS, vmm_job_status, fill_job_status, NULL),
	CODEC(IMSG_VMM_JOB_CANCEL, vmm_job_cancel, fill_job_cancel, NULL),
	CODEC(IMSG_VMM_JOB_STATE, vmm_job_state, fill_job_state,
	    over_job_state),
	CODEC(IMSG_VMM_JOB_READ, vmm_job_read, fill_job_read, over_job_read),
	CODEC(IMSG_VMM_JOB_OUTPUT, vmm_job_output, fill_job_output,
	    over_job_output),
	CODEC(IMSG_VMM_FILE_READ, vmm_file_read, fill_file_read,
	    over_file_read),
	CODEC(IMSG_VMM_FILE_DATA, vmm_file_data, fill_file_data,
	    over_file_data),
	CODEC(IMSG_VMM_FILE_WRITE, vmm_file_write, fill_file_write,
	    over_file_write),
	CODEC(IMSG_VMM_FILE_WRITTEN, vmm_file_written, fill_file_written,
	    over_file_written),
	CODEC(IMSG_VMM_FILE_LIST, vmm_file_list, fill_file_list,
	    over_file_list),
	CODEC(IMSG_VMM_FILE_ENTRIES, vmm_file_entries, fill_file_entries,
	    over_file_entries),
	CODEC0(IMSG_VMM_GUEST_INFO, vmm_guest_info),
	CODEC(IMSG_VMM_GUEST_INFO_RESULT, vmm_guest_info_result,
	    fill_guest_info_result, over_guest_info_result),
	CODEC0(IMSG_VMM_FREEZE, vmm_freeze),
	CODEC0(IMSG_VMM_THAW, vmm_thaw),
	CODEC(IMSG_VMM_SET_TIME, vmm_set_time, fill_set_time, over_set_time),
	CODEC0(IMSG_VMM_GUEST_POWEROFF, vmm_guest_poweroff),
	CODEC(IMSG_VMM_NET_CONFIG, vmm_net_config, fill_net_config,
	    over_net_config),
	CODEC(IMSG_VMM_CHECKPOINT, vmm_checkpoint, fill_checkpoint,
	    over_checkpoint),
	CODEC(IMSG_VMM_INCOMING, vmm_incoming, fill_incoming, over_incoming),
	CODEC(IMSG_VMM_IDENTITY, vmm_identity, fill_identity, over_identity),
	CODEC0(IMSG_VMM_SCREENSHOT, vmm_screenshot),
	CODEC(IMSG_VMM_SCREENSHOT_DONE, vmm_screenshot_done,
	    fill_screenshot_done, over_screenshot_done),
	CODEC(IMSG_VMM_INPUT, vmm_input, fill_input, over_input),
	CODEC0(IMSG_VMM_SERIAL_READ, vmm_serial_read),
	CODEC(IMSG_VMM_SERIAL_DATA, vmm_serial_data, fill_serial_data,
	    over_serial_data),
	CODEC(IMSG_VMM_SNAPSHOT, vmm_snapshot, fill_snapshot, over_snapshot),
	CODEC(IMSG_VMM_SNAPSHOT_DONE, vmm_snapshot_done, fill_snapshot_done,
	    over_snapshot_done),
	CODEC_END
};
