/* stored's messages: see msg_store.h and, for the rules, msg_vmm.h. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "msg.h"
#include "msg_store.h"
#include "proto.h"
#include "tools.h"
#include "validate.h"

static int
get_image(struct mreader *r, const char **name)
{
	if (m_get_str(r, name, OBJ_NAME_MAX) == -1)
		return -1;
	if (!valid_object_name(*name))
		return m_fail();
	return 0;
}

int
msg_store_preflight_get(struct imsg *imsg)
{
	return m_empty(imsg, IMSG_STORE_PREFLIGHT);
}

void
msg_store_preflight_result_put(struct ibuf *b,
    const struct msg_store_preflight_result *m)
{
	m_add_u32(b, m->reflink);
	m_add_str(b, m->text);
}

int
msg_store_preflight_result_get(struct imsg *imsg,
    struct msg_store_preflight_result *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_STORE_PREFLIGHT_RESULT) == -1 ||
	    m_get_flag(&r, &m->reflink) == -1 ||
	    m_get_str(&r, &m->text, STORE_TEXT_MAX) == -1)
		return -1;
	return m_end(&r);
}

void
msg_store_image_status_put(struct ibuf *b,
    const struct msg_store_image_status *m)
{
	m_add_str(b, m->image);
	m_add_u32(b, m->ok);
	m_add_u64(b, m->disk_bytes);
	m_add_str(b, m->text);
}

int
msg_store_image_status_get(struct imsg *imsg,
    struct msg_store_image_status *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_STORE_IMAGE_STATUS) == -1 ||
	    m_get_str(&r, &m->image, OBJ_NAME_MAX) == -1 ||
	    m_get_flag(&r, &m->ok) == -1 ||
	    m_get_u64(&r, &m->disk_bytes) == -1 ||
	    m_get_str(&r, &m->text, STORE_TEXT_MAX) == -1)
		return -1;
	return m_end(&r);
}

void
msg_store_disk_create_put(struct ibuf *b,
    const struct msg_store_disk_create *m)
{
	m_add_str(b, m->vm_id);
	m_add_str(b, m->image);
}

int
msg_store_disk_create_get(struct imsg *imsg,
    struct msg_store_disk_create *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_STORE_DISK_CREATE) == -1 ||
	    m_get_vm_id(&r, &m->vm_id) == -1 || get_image(&r, &m->image) == -1)
		return -1;
	return m_end(&r);
}

void
msg_store_disk_open_put(struct ibuf *b, const struct msg_store_disk_open *m)
{
	m_add_str(b, m->vm_id);
	m_add_str(b, m->image);
}

int
msg_store_disk_open_get(struct imsg *imsg, struct msg_store_disk_open *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_STORE_DISK_OPEN) == -1 ||
	    m_get_vm_id(&r, &m->vm_id) == -1 || get_image(&r, &m->image) == -1)
		return -1;
	return m_end(&r);
}

void
msg_store_disk_delete_put(struct ibuf *b,
    const struct msg_store_disk_delete *m)
{
	m_add_str(b, m->vm_id);
}

int
msg_store_disk_delete_get(struct imsg *imsg,
    struct msg_store_disk_delete *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_STORE_DISK_DELETE) == -1 ||
	    m_get_vm_id(&r, &m->vm_id) == -1)
		return -1;
	return m_end(&r);
}

int
msg_store_disk_list_get(struct imsg *imsg)
{
	return m_empty(imsg, IMSG_STORE_DISK_LIST);
}

void
msg_store_disk_entry_put(struct ibuf *b,
    const struct msg_store_disk_entry *m)
{
	m_add_str(b, m->vm_id);
}

int
msg_store_disk_entry_get(struct imsg *imsg, struct msg_store_disk_entry *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_STORE_DISK_ENTRY) == -1 ||
	    m_get_vm_id(&r, &m->vm_id) == -1)
		return -1;
	return m_end(&r);
}

void
msg_store_fd_put(struct ibuf *b, const struct msg_store_fd *m)
{
	m_add_u32(b, m->role);
}

int
msg_store_fd_get(struct imsg *imsg, struct msg_store_fd *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_STORE_FD) == -1 ||
	    m_get_u32(&r, &m->role) == -1)
		return -1;
	if (m->role < STORE_FD_DISK || m->role > STORE_FD_MAX)
		return m_fail();
	return m_end(&r);
}

void
msg_store_result_put(struct ibuf *b, const struct msg_store_result *m)
{
	m_add_u32(b, m->status);
	m_add_u32(b, m->format);
	m_add_u64(b, m->disk_bytes);
	m_add_str(b, m->text);
}

int
msg_store_result_get(struct imsg *imsg, struct msg_store_result *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_STORE_RESULT) == -1 ||
	    m_get_u32(&r, &m->status) == -1 ||
	    m_get_u32(&r, &m->format) == -1 ||
	    m_get_u64(&r, &m->disk_bytes) == -1 ||
	    m_get_str(&r, &m->text, STORE_TEXT_MAX) == -1)
		return -1;
	if (m->format > DISK_QCOW2)
		return m_fail();
	return m_end(&r);
}

void
msg_store_checkpoint_put(struct ibuf *b,
    const struct msg_store_checkpoint *m)
{
	m_add_str(b, m->vm_id);
	m_add_u32(b, m->write);
}

int
msg_store_checkpoint_get(struct imsg *imsg, struct msg_store_checkpoint *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_STORE_CHECKPOINT) == -1 ||
	    m_get_vm_id(&r, &m->vm_id) == -1 ||
	    m_get_flag(&r, &m->write) == -1)
		return -1;
	return m_end(&r);
}
