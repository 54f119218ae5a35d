/*
 * Receipts: a call with a request_id runs at most once.  Its outcome is
 * recorded under the workspace and the request_id, keyed by the tool and
 * a hash of its arguments, and replayed to a retry.
 */
#include <stdio.h>
#include <string.h>

#include "dispatch.h"
#include "hash.h"
#include "log.h"
#include "vm.h"

/* Arguments in their canonical typed encoding, hashed: a receipt's key. */
int
vm_args_hash(const struct tool_args *a, uint8_t out[SHA256_LEN])
{
	struct ibuf	*b;
	int		 rc;

	if ((b = imsg_create(NULL, 0, 0, 0, 512)) == NULL)
		return -1;
	tool_args_encode(b, a);
	rc = b->err ? -1 : sha256(b->buf + IMSG_HDR_SIZE,
	    b->size - IMSG_HDR_SIZE, out);
	imsg_discard(b);
	return rc;
}

/*
 * Looks the request's receipt up.  Returns 0 when the call is new (and now
 * pending): go ahead.  Otherwise the caller was answered (the first
 * result, or why not) and 1 is returned.  check names the tool that shows
 * what an interrupted call left.
 */
int
receipt_begin(uint64_t call, int64_t ws, const char *rid,
    const struct tool_args *args, const char *vm, const char *check)
{
	uint8_t	 hash[SHA256_LEN];
	char	 result[VM_RESULT_MAX];

	if (vm_args_hash(args, hash) == -1)
		fatalx("%s: hash", __func__);
	switch (state_receipt_begin(ws, rid, args->tool->name, hash, vm,
	    result, sizeof(result))) {
	case RECEIPT_NEW:
		return 0;
	case RECEIPT_DONE:
		call_reply(call, TOOL_OK, result);
		break;
	case RECEIPT_FAILED:
		call_reply(call, TOOL_ERROR, result);
		break;
	case RECEIPT_PENDING:
		call_reply(call, TOOL_ERROR, "this request_id is still in "
		    "progress; retry the same call in a few seconds");
		break;
	case RECEIPT_UNKNOWN:
		(void)snprintf(result, sizeof(result), "this request_id was "
		    "interrupted by a service restart and its outcome is "
		    "unknown; it is not run again: check %s, and use a new "
		    "request_id", check);
		call_reply(call, TOOL_ERROR, result);
		break;
	case RECEIPT_CONFLICT:
		call_reply(call, TOOL_ERROR, "this request_id was already "
		    "used with other arguments; use a new request_id");
		break;
	case RECEIPT_ERROR:
		call_reply(call, TOOL_ERROR, "state database error");
		break;
	}
	return 1;
}

/* A receipt's error (rid NULL or "": none), answered and kept. */
void
receipt_fail(int64_t ws, const char *rid, const char *vm, uint64_t call,
    enum tool_status st, const char *msg)
{
	if (rid != NULL && rid[0] != '\0' &&
	    state_receipt_end(ws, rid, 0, vm, msg) == -1)
		log_warnx("receipt %s not settled", rid);
	call_reply(call, st, msg);
}

/* A receipt's result, kept for a retry (the caller answers). */
void
receipt_done(int64_t ws, const char *rid, const char *vm, const char *text)
{
	if (rid != NULL && rid[0] != '\0' &&
	    state_receipt_end(ws, rid, 1, vm, text) == -1)
		log_warnx("%s: receipt not settled", vm);
}
