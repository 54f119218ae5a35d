/*
 * qemu-guest-agent's protocol, the monitor's side of it: a decoder for
 * the JSON lines the agent writes on its virtio-serial port, and readers
 * of the returns of the few commands the monitor sends (encoded by
 * qmp_encode_command, as QGA speaks QMP's framing).  Pure code over byte
 * buffers, so that unit tests and the fuzzer drive it without a guest.
 *
 * The guest is untrusted: every byte may be crafted.  A line is one JSON
 * object, a return or an error, of at most QGA_MSG_MAX bytes; a longer
 * one is reported once (QGA_OVERSIZE) and dropped up to its end.  The
 * byte 0xff, which never occurs in JSON, starts a line afresh: the agent
 * writes it before its answer to guest-sync-delimited, so that what a
 * stale session left behind is dropped.  A line that is not such an
 * object is reported (QGA_BAD) and costs only itself.
 */
#ifndef MCVM_QGA_H
#define MCVM_QGA_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "agent_proto.h"
#include "b64.h"
#include "proto.h"
#include "qmp.h"

#define QGA_DELIM		0xff	/* guest-sync-delimited's marker */
#define QGA_CMD_MAX		(512 * 1024)	/* an encoded command */
#define QGA_TEXT_MAX		256	/* an error's text, a version */
#define QGA_DATA_MAX		B64_DECODED_MAX(QGA_MSG_MAX)
					/* a return's bytes, decoded; a line
					   is QGA_MSG_MAX, proto.h */
#define QGA_PID_MAX		INT32_MAX
#define QGA_HANDLE_MAX		INT64_MAX

enum qga_kind {
	QGA_RETURN = 1,
	QGA_ERROR,
	QGA_BAD,		/* a line that is no answer: why says so */
	QGA_OVERSIZE,		/* a line longer than QGA_MSG_MAX */
};

struct qga_reply {
	enum qga_kind	 kind;
	int		 has_id;
	uint32_t	 id;
	json_t		*ret;		/* RETURN: the parser's, for the
					   callback only */
	char		 err_class[QMP_NAME_MAX];	/* ERROR: printable */
	char		 err_desc[QGA_TEXT_MAX];	/* ERROR, BAD */
};

struct qga_parser {
	char		 buf[QGA_MSG_MAX];
	size_t		 len;
	int		 skipping;	/* in an oversize line */
};

typedef void	(*qga_cb)(const struct qga_reply *, void *);

void	 qga_parser_init(struct qga_parser *);

/* Feeds bytes from the port; calls cb for each line, as above. */
void	 qga_input(struct qga_parser *, const void *, size_t, qga_cb,
	    void *);

/*
 * The returns: each reads what its command answers, checking every type
 * and bound, and returns 0, or -1 if ret is not such an answer.
 */
int	 qga_ret_int(json_t *, int64_t, int64_t, int64_t *);
int	 qga_ret_exec(json_t *, int32_t *);

/*
 * guest-exec-status.  The agent gives the output only once the process
 * has exited, each stream in base64, decoded into the caller's buffers
 * of QGA_DATA_MAX bytes.
 */
struct qga_exec_status {
	int		 exited;
	int		 has_code;
	int32_t		 code;		/* 0..255 */
	int		 has_signal;
	int32_t		 signal;	/* 1..127 */
	size_t		 out_len;
	size_t		 err_len;
	int		 out_truncated;	/* the agent kept only its first */
	int		 err_truncated;	/* bytes (16 MiB on 7.2) */
};
int	 qga_ret_exec_status(json_t *, struct qga_exec_status *, uint8_t *,
	    uint8_t *);

/* guest-file-read: its bytes into buf (cap), their count, eof. */
int	 qga_ret_file_read(json_t *, uint8_t *, size_t, size_t *, int *);
int	 qga_ret_file_write(json_t *, uint64_t *);
int	 qga_ret_file_seek(json_t *, uint64_t *);

/*
 * A listing that find(1) wrote in the guest, for FILE_LIST (the agent
 * has no command for one): a record per entry, "DEPTH TYPE MODE SIZE
 * MTIME NAME" and a NUL (-printf '%d %y %m %s %T@ %P\0'), shallowest
 * first.  The entries in that order, at most max of them and their
 * names at most QGA_LIST_NAMES_MAX bytes together, a record cut at the
 * end dropped: truncated says so.  Returns 0, or -1 if a record is
 * malformed.
 */
#define QGA_LIST_NAMES_MAX	AGENT_LIST_BYTES_MAX
struct qga_list {
	size_t			 n;
	int			 truncated;
	struct agent_dirent	 ents[AGENT_LIST_MAX];
	char			 pool[QGA_LIST_NAMES_MAX];
	size_t			 used;
};
int	 qga_list_parse(const uint8_t *, size_t, size_t, struct qga_list *);

/* guest-info's version; guest-get-osinfo's name and kernel release. */
int	 qga_ret_info(json_t *, char *, size_t);
int	 qga_ret_osinfo(json_t *, char *, size_t, char *, size_t);

#endif
