/*
 * The image tools.  image_list shows the operator's catalogue, which
 * every workspace may use read-only (store.c holds what stored found of
 * each image).
 */
#include <jansson.h>

#include "dispatch.h"
#include "vm.h"

static void
tool_image_list(struct tool_call *c)
{
	json_t	*a;

	if ((a = vm_images_json()) == NULL) {
		call_reply_json(c->id, NULL);
		return;
	}
	call_reply_json(c->id, json_pack("{s:o}", "images", a));
}

/* The tools of this file (see TOOL_IMPL in dispatch.h). */
TOOL_IMPL(TOOL_IMAGE_LIST, tool_image_list, NULL, NULL, NULL, -1);
