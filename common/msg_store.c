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
	m_add_str(b, m->base != NULL ? m->base : "");
}

int
msg_store_checkpoint_get(struct imsg *imsg, struct msg_store_checkpoint *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_STORE_CHECKPOINT) == -1 ||
	    m_get_vm_id(&r, &m->vm_id) == -1 ||
	    m_get_flag(&r, &m->write) == -1 ||
	    m_get_str(&r, &m->base, ID_MAX) == -1)
		return -1;
	if (m->base[0] != '\0' && (!m->write || !valid_id(m->base,
	    VM_ID_PREFIX)))
		return m_fail();
	return m_end(&r);
}

void
msg_store_vm_ram_put(struct ibuf *b, const struct msg_store_vm_ram *m)
{
	m_add_str(b, m->vm_id);
	m_add_u32(b, m->mib);
}

int
msg_store_vm_ram_get(struct imsg *imsg, struct msg_store_vm_ram *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_STORE_VM_RAM) == -1 ||
	    m_get_vm_id(&r, &m->vm_id) == -1 ||
	    m_get_u32(&r, &m->mib) == -1)
		return -1;
	if (m->mib < VM_MEMORY_MIN_MIB || m->mib > VM_MEMORY_MAX_MIB)
		return m_fail();
	return m_end(&r);
}

void
msg_store_disk_copy_put(struct ibuf *b, const struct msg_store_disk_copy *m)
{
	m_add_str(b, m->vm_id);
	m_add_str(b, m->from);
}

int
msg_store_disk_copy_get(struct imsg *imsg, struct msg_store_disk_copy *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_STORE_DISK_COPY) == -1 ||
	    m_get_vm_id(&r, &m->vm_id) == -1 ||
	    m_get_vm_id(&r, &m->from) == -1)
		return -1;
	if (strcmp(m->vm_id, m->from) == 0)
		return m_fail();
	return m_end(&r);
}

void
msg_store_vm_snapshot_put(struct ibuf *b,
    const struct msg_store_vm_snapshot *m)
{
	m_add_str(b, m->vm_id);
	m_add_u32(b, m->op);
	m_add_str(b, m->tag);
}

int
msg_store_vm_snapshot_get(struct imsg *imsg,
    struct msg_store_vm_snapshot *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_STORE_VM_SNAPSHOT) == -1 ||
	    m_get_vm_id(&r, &m->vm_id) == -1 ||
	    m_get_u32(&r, &m->op) == -1 ||
	    m_get_str(&r, &m->tag, OBJ_NAME_MAX) == -1)
		return -1;
	if (m->op < SVS_SAVE || m->op > SVS_DELETE ||
	    !valid_snapshot_tag(m->tag))
		return m_fail();
	return m_end(&r);
}

static const char *const image_formats[IMG_NFORMATS] = {
	[IMG_QCOW2] = "qcow2", [IMG_RAW] = "raw", [IMG_VMDK] = "vmdk",
	[IMG_VDI] = "vdi", [IMG_VHDX] = "vhdx", [IMG_ISO] = "iso",
};

const char *
image_format_name(enum image_format f)
{
	return (unsigned int)f < IMG_NFORMATS ? image_formats[f] : "?";
}

/* The QEMU block driver that reads format f. */
const char *
image_format_driver(enum image_format f)
{
	return f == IMG_ISO ? "raw" : image_format_name(f);
}

/* The format named s, or -1. */
int
image_format_parse(const char *s)
{
	int	 i;

	for (i = 0; i < IMG_NFORMATS; i++)
		if (strcmp(s, image_formats[i]) == 0)
			return i;
	return -1;
}

/* An object name, or "" where allowed. */
static int
get_name_or_empty(struct mreader *r, const char **name)
{
	if (m_get_str(r, name, OBJ_NAME_MAX) == -1)
		return -1;
	if ((*name)[0] != '\0' && !valid_object_name(*name))
		return m_fail();
	return 0;
}

void
msg_store_image_put(struct ibuf *b, const struct msg_store_image *m)
{
	m_add_u32(b, m->op);
	m_add_u64(b, m->ws);
	m_add_str(b, m->name);
	m_add_str(b, m->dest);
	m_add_str(b, m->base);
	m_add_str(b, m->tag);
	m_add_u32(b, m->format);
	m_add_u32(b, m->flags);
	m_add_u64(b, m->bytes);
	m_add_u64(b, m->budget);
	m_add_u32(b, m->max_images);
}

int
msg_store_image_get(struct imsg *imsg, struct msg_store_image *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_STORE_IMAGE) == -1 ||
	    m_get_u32(&r, &m->op) == -1 ||
	    m_get_u64(&r, &m->ws) == -1 ||
	    get_name_or_empty(&r, &m->name) == -1 ||
	    get_name_or_empty(&r, &m->dest) == -1 ||
	    get_name_or_empty(&r, &m->base) == -1 ||
	    get_name_or_empty(&r, &m->tag) == -1 ||
	    m_get_u32(&r, &m->format) == -1 ||
	    m_get_u32(&r, &m->flags) == -1 ||
	    m_get_u64(&r, &m->bytes) == -1 ||
	    m_get_u64(&r, &m->budget) == -1 ||
	    m_get_u32(&r, &m->max_images) == -1)
		return -1;
	if (m->op >= SIO_NOPS || m->ws == 0 || m->ws > INT64_MAX ||
	    m->format >= IMG_NFORMATS || (m->flags & ~SIF_ALL) != 0 ||
	    (m->op != SIO_LIST && m->name[0] == '\0'))
		return m_fail();
	return m_end(&r);
}

void
msg_store_image_entry_put(struct ibuf *b,
    const struct msg_store_image_entry *m)
{
	m_add_str(b, m->name);
	m_add_u32(b, m->format);
	m_add_u32(b, m->catalog);
	m_add_u64(b, m->virtual_bytes);
	m_add_u64(b, m->disk_bytes);
	m_add_str(b, m->backing);
	m_add_u32(b, m->backing_catalog);
	m_add_u32(b, m->users);
	m_add_u32(b, m->snapshots);
}

int
msg_store_image_entry_get(struct imsg *imsg,
    struct msg_store_image_entry *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_STORE_IMAGE_ENTRY) == -1 ||
	    get_image(&r, &m->name) == -1 ||
	    m_get_u32(&r, &m->format) == -1 ||
	    m_get_flag(&r, &m->catalog) == -1 ||
	    m_get_u64(&r, &m->virtual_bytes) == -1 ||
	    m_get_u64(&r, &m->disk_bytes) == -1 ||
	    get_name_or_empty(&r, &m->backing) == -1 ||
	    m_get_flag(&r, &m->backing_catalog) == -1 ||
	    m_get_u32(&r, &m->users) == -1 ||
	    m_get_u32(&r, &m->snapshots) == -1)
		return -1;
	if (m->format >= IMG_NFORMATS)
		return m_fail();
	return m_end(&r);
}

void
msg_store_image_snap_put(struct ibuf *b, const struct msg_store_image_snap *m)
{
	m_add_str(b, m->tag);
	m_add_u64(b, m->vm_bytes);
	m_add_u64(b, m->date);
}

int
msg_store_image_snap_get(struct imsg *imsg, struct msg_store_image_snap *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_STORE_IMAGE_SNAP) == -1 ||
	    get_image(&r, &m->tag) == -1 ||
	    m_get_u64(&r, &m->vm_bytes) == -1 ||
	    m_get_u64(&r, &m->date) == -1)
		return -1;
	return m_end(&r);
}

void
msg_store_progress_put(struct ibuf *b, const struct msg_store_progress *m)
{
	m_add_u32(b, m->permille);
}

int
msg_store_progress_get(struct imsg *imsg, struct msg_store_progress *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_STORE_PROGRESS) == -1 ||
	    m_get_u32(&r, &m->permille) == -1)
		return -1;
	if (m->permille > 1000)
		return m_fail();
	return m_end(&r);
}

int
msg_store_cancel_get(struct imsg *imsg)
{
	return m_empty(imsg, IMSG_STORE_CANCEL);
}

void
msg_store_vm_disks_put(struct ibuf *b, const struct msg_store_vm_disks *m)
{
	uint32_t	 i;

	m_add_str(b, m->vm_id);
	m_add_u64(b, m->ws);
	m_add_u32(b, m->create);
	m_add_u32(b, m->persistent);
	m_add_u32(b, m->firmware);
	m_add_u32(b, m->ndisks);
	for (i = 0; i < m->ndisks && i < VM_DISKS_MAX; i++)
		m_add_str(b, m->disks[i]);
	m_add_str(b, m->iso);
}

int
msg_store_vm_disks_get(struct imsg *imsg, struct msg_store_vm_disks *m)
{
	struct mreader	 r;
	uint32_t	 i, j;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_STORE_VM_DISKS) == -1 ||
	    m_get_vm_id(&r, &m->vm_id) == -1 ||
	    m_get_u64(&r, &m->ws) == -1 ||
	    m_get_flag(&r, &m->create) == -1 ||
	    m_get_flag(&r, &m->persistent) == -1 ||
	    m_get_u32(&r, &m->firmware) == -1 ||
	    m_get_u32(&r, &m->ndisks) == -1)
		return -1;
	if (m->ws == 0 || m->firmware > FW_UEFI || m->ndisks == 0 ||
	    m->ndisks > VM_DISKS_MAX)
		return m_fail();
	for (i = 0; i < m->ndisks; i++) {
		if (get_image(&r, &m->disks[i]) == -1)
			return -1;
		for (j = 0; j < i; j++)
			if (strcmp(m->disks[i], m->disks[j]) == 0)
				return m_fail();
	}
	if (m_get_str(&r, &m->iso, OBJ_NAME_MAX) == -1)
		return -1;
	if (m->iso[0] != '\0' && !valid_object_name(m->iso))
		return m_fail();
	return m_end(&r);
}

void
msg_store_vm_disk_put(struct ibuf *b, const struct msg_store_vm_disk *m)
{
	m_add_u32(b, m->index);
	m_add_u32(b, m->format);
	m_add_u32(b, m->has_base);
	m_add_u32(b, m->base_format);
}

static int
vm_disk_format(uint32_t f)
{
	return f == IMG_QCOW2 || f == IMG_RAW;
}

int
msg_store_vm_disk_get(struct imsg *imsg, struct msg_store_vm_disk *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_STORE_VM_DISK) == -1 ||
	    m_get_u32(&r, &m->index) == -1 ||
	    m_get_u32(&r, &m->format) == -1 ||
	    m_get_flag(&r, &m->has_base) == -1 ||
	    m_get_u32(&r, &m->base_format) == -1)
		return -1;
	if (m->index >= VM_DISKS_MAX || !vm_disk_format(m->format) ||
	    !vm_disk_format(m->base_format) ||
	    (m->has_base && m->format != IMG_QCOW2))
		return m_fail();
	return m_end(&r);
}
