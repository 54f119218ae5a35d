/*
 * libFuzzer target for mcvm-frontd's decoders of untrusted bytes, and for
 * the decoder mcvmd applies to what frontd sends.  The first input byte
 * picks the decoder:
 *
 *	0	an HTTP request head: http_parse_head, http_parse_framing
 *	1	JSON tool arguments: catalog_args for every tool, and the
 *		rendering of a result (catalog_result)
 *	2	IMSG_FRONT_TOOL arguments: tool_args_decode for every tool
 *	3	IMSG_FRONT_TASK, TASK_STATUS and TASK_CANCEL: their getters
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frontd.h"
#include "http.h"
#include "msg.h"
#include "msg_front.h"
#include "tools.h"

#define FUZZ_BODY_LIMIT		(1024 * 1024)

static struct frontd	 fuzz_frontd;
struct frontd		*fenv = &fuzz_frontd;

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
fuzz_http(const uint8_t *data, size_t len)
{
	struct http_request	 r;
	struct http_framing	 f;
	const char		*msg;

	memset(&r, 0, sizeof(r));
	if ((r.hbuf = malloc(len + 1)) == NULL)
		return;
	memcpy(r.hbuf, data, len);
	r.hbuf[len] = '\0';
	r.hlen = len;
	if (http_parse_head(&r, &msg) == 0)
		(void)http_parse_framing(&r, FUZZ_BODY_LIMIT, &f, &msg);
	free(r.hbuf);
}

static void
fuzz_json(const uint8_t *data, size_t len)
{
	struct tool_args	 a;
	json_t			*j, *res;
	char			 err[TOOL_ERR_MAX], *text;
	void			*scratch;
	size_t			 i;

	j = json_loadb((const char *)data, len, JSON_REJECT_DUPLICATES |
	    JSON_DECODE_ANY, NULL);
	if (j != NULL) {
		for (i = 0; i < TOOL_COUNT; i++) {
			scratch = NULL;
			(void)catalog_args(&tool_table[i], j, &a, &scratch,
			    err, sizeof(err));
			free(scratch);
		}
		json_decref(j);
	}
	if ((text = malloc(len + 1)) == NULL)
		return;
	memcpy(text, data, len);
	text[len] = '\0';
	res = catalog_result(TOOL_OK, text);
	json_decref(res);
	free(text);
}

static void
fuzz_imsg(const uint8_t *data, size_t len)
{
	struct tool_args	 a;
	struct mreader		 r;
	char			 err[TOOL_ERR_MAX];
	size_t			 i;

	for (i = 0; i < TOOL_COUNT; i++) {
		m_init_buf(&r, data, len);
		(void)tool_args_decode(&r, &tool_table[i], &a, err,
		    sizeof(err));
	}
}

/* The same bytes as each task message mcvmd reads. */
static void
fuzz_task(const uint8_t *data, size_t len)
{
	struct msg_front_task		 t;
	struct msg_front_task_status	 s;
	struct imsg			 imsg;

	memset(&imsg, 0, sizeof(imsg));
	imsg.fd = -1;
	imsg.data = (void *)data;
	imsg.datalen = len;
	imsg.hdr.type = IMSG_FRONT_TASK;
	(void)msg_front_task_get(&imsg, &t);
	imsg.hdr.type = IMSG_FRONT_TASK_STATUS;
	(void)msg_front_task_status_get(&imsg, &s);
	imsg.hdr.type = IMSG_FRONT_TASK_CANCEL;
	(void)msg_front_task_cancel_get(&imsg, &s);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	if (len < 1)
		return 0;
	switch (data[0] % 4) {
	case 0:
		fuzz_http(data + 1, len - 1);
		break;
	case 1:
		fuzz_json(data + 1, len - 1);
		break;
	case 2:
		fuzz_imsg(data + 1, len - 1);
		break;
	default:
		fuzz_task(data + 1, len - 1);
		break;
	}
	return 0;
}
