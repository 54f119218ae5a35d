/*
 * The QMP side of the VM monitor: a decoder for the JSON lines QEMU
 * writes on its monitor socket, and an encoder for the few commands the
 * monitor sends.  Pure code over byte buffers, so that unit tests and the
 * fuzzer drive it without QEMU.
 *
 * QEMU is untrusted here: every message must be one JSON object on one
 * line of at most QMP_MSG_MAX bytes, of exactly one known shape (greeting,
 * return, error or event).  Anything else is a protocol error, after
 * which the stream is not read any further.
 */
#ifndef MCVM_QMP_H
#define MCVM_QMP_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "proto.h"

#define QMP_MSG_MAX		(64 * 1024)	/* a line and newline */
#define QMP_NAME_MAX		64	/* events, errors, status */
#define QMP_TEXT_MAX		256	/* error texts, event details */
#define QMP_CMD_MAX		4096	/* an encoded command: an input
					   batch (input.c) is the longest */
#define QMP_DATA_MAX		(45 * 1024)	/* a string return, decoded */
#define QMP_FDSET_MAX		INT32_MAX
#define QMP_SNAPS_MAX		32	/* snapshots of a node looked at */
#define QMP_JOB_ID		"mcvm-snapshot"	/* the monitor's one job */
#define QMP_SNAP_NODE		QEMU_NODE_DISK	/* a qcow2 overlay, or */
#define QMP_STATE_NODE		QEMU_NODE_STATE	/* a raw disk's state */
#define QMP_NODES_MAX		(2 + VM_DISKS_MAX)	/* and disk0-3 */
#define QMP_NODE_NAME_MAX	8
#define QMP_SNAP_TAG_MAX	65	/* a tag and its NUL */

/* An internal snapshot of a node, as query-named-block-nodes. */
struct qmp_snap {
	char		 name[QMP_SNAP_TAG_MAX];
	uint64_t	 vm_size;
};

/*
 * A qcow2 node that can hold a VM's snapshots: a catalogue VM's overlay
 * (QMP_SNAP_NODE) or a raw disk's state node (QMP_STATE_NODE), or one of
 * the disks of a VM from its own disks (disk0 to disk3).
 */
struct qmp_node {
	char		 name[QMP_NODE_NAME_MAX];
	size_t		 nsnaps;
	struct qmp_snap	 snaps[QMP_SNAPS_MAX];
};

enum qmp_kind {
	QMP_GREETING = 1,
	QMP_RETURN,
	QMP_ERROR,
	QMP_EVENT,
};

struct qmp_msg {
	enum qmp_kind	 kind;
	int		 has_id;
	uint32_t	 id;			/* return, error */

	/* greeting */
	unsigned int	 major, minor, micro;

	/* error: class and description, printable ASCII, cut to fit */
	char		 err_class[QMP_NAME_MAX];
	char		 err_desc[QMP_TEXT_MAX];

	/* event: its name and a detail ("reason" where QEMU gives one) */
	char		 event[QMP_NAME_MAX];
	char		 detail[QMP_TEXT_MAX];
	int		 has_open;		/* VSERPORT_CHANGE */
	int		 open;

	/* return of query-status (status, running), query-migrate (status) */
	int		 has_status;
	char		 status[QMP_NAME_MAX];
	int		 has_running;
	int		 running;

	/* return of add-fd: the fd set it made, 0..QMP_FDSET_MAX */
	int		 has_fdset;
	uint32_t	 fdset;

	/*
	 * A return that is an array: of query-jobs, the job QMP_JOB_ID if
	 * listed (its status, and its error if it failed); of
	 * query-named-block-nodes, the qcow2 nodes of struct qmp_node's
	 * names (one listed twice is a protocol error; a raw one is
	 * skipped), each with its internal snapshots whose names are a
	 * tag's (others are not the monitor's and are skipped, as are those
	 * past QMP_SNAPS_MAX).
	 */
	int		 has_job;
	char		 job_status[QMP_NAME_MAX];
	int		 has_job_error;
	char		 job_error[QMP_TEXT_MAX];
	size_t		 nnodes;
	struct qmp_node	 nodes[QMP_NODES_MAX];

	/*
	 * A return that is a JSON string (ringbuf-read, format base64): its
	 * bytes, decoded.  Not canonical base64, or longer than
	 * QMP_DATA_MAX once decoded, is a protocol error.
	 */
	int		 has_data;
	size_t		 data_len;
	uint8_t		 data[QMP_DATA_MAX];
};

struct qmp_parser {
	char		 buf[QMP_MSG_MAX];
	size_t		 len;
	int		 broken;
	char		 error[QMP_TEXT_MAX];	/* why it broke */
};

typedef void	(*qmp_cb)(const struct qmp_msg *, void *);

void	 qmp_parser_init(struct qmp_parser *);

/*
 * Feeds bytes from the socket; calls cb for each complete message.
 * Returns 0, or -1 once the stream is broken (a line too long, not JSON,
 * or not a QMP message); the reason is in p->error, and later calls fail.
 */
int	 qmp_input(struct qmp_parser *, const void *, size_t, qmp_cb,
	    void *);

/* Decodes one line (without its newline).  Returns 0 or -1. */
int	 qmp_decode_line(const char *, size_t, struct qmp_msg *, char *,
	    size_t);

/*
 * Encodes {"execute": cmd, "arguments": args, "id": id} and a newline into
 * buf.  cmd must be a plain QMP command name; args is NULL or a JSON
 * object, serialized by jansson: a string in it is escaped there, never
 * pasted into the line.  args stays the caller's.  Returns the length, or
 * -1.
 */
int	 qmp_encode_command(char *, size_t, const char *, json_t *,
	    uint32_t);

/* A reply's "id" (qmp.c, for the guest agent's replies too). */
int	 qmp_json_id(json_t *, int *, uint32_t *);

#endif
