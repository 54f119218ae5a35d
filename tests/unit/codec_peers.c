/* HELLO, VERBOSE, the control socket's, netd's and stored's messages. */
#include <stdint.h>
#include <string.h>

#include "msg_ctl.h"
#include "msg_net.h"
#include "msg_proc.h"
#include "msg_store.h"
#include "netslot.h"
#include "proto.h"
#include "validate.h"
#include "codec_table.h"

#define VM_ID	"vm-0123456789abcdef"

CODEC_WRAP(hello)
CODEC_WRAP(verbose)
CODEC_WRAP(ctl_ok)
CODEC_WRAP(ctl_fail)
CODEC_WRAP(ctl_status_proc)
CODEC_WRAP(ctl_status_note)
CODEC_WRAP(ctl_token_issue)
CODEC_WRAP(ctl_ws_revoke)
CODEC_WRAP(ctl_ws_entry)
CODEC_WRAP(ctl_status_ws)
CODEC_WRAP(ctl_vm_entry)
CODEC_WRAP(ctl_vm_stop)
CODEC_WRAP(ctl_vm_destroy)
CODEC_WRAP(ctl_vm_attach)
CODEC_WRAP(ctl_vm_forget)
CODEC_WRAP(ctl_quota_set)
CODEC_WRAP(net_preflight_result)
CODEC_WRAP(net_setup)
CODEC_WRAP(net_teardown)
CODEC_WRAP(net_entry)
CODEC_WRAP(net_fd)
CODEC_WRAP(net_result)
CODEC_WRAP(store_preflight_result)
CODEC_WRAP(store_image_status)
CODEC_WRAP(store_disk_create)
CODEC_WRAP(store_disk_open)
CODEC_WRAP(store_disk_delete)
CODEC_WRAP(store_disk_entry)
CODEC_WRAP(store_fd)
CODEC_WRAP(store_result)
CODEC_WRAP(store_checkpoint)
CODEC_WRAP(store_vm_ram)
CODEC_WRAP(store_disk_copy)
CODEC_WRAP(store_vm_snapshot)
CODEC_WRAP(store_image)
CODEC_WRAP(store_image_entry)
CODEC_WRAP(store_image_snap)
CODEC_WRAP(store_vm_disks)
CODEC_WRAP(store_vm_disk)
CODEC_WRAP(store_progress)

/* An object name of n bytes. */
static const char *
name(size_t n)
{
	return codec_str(n);
}

static void
fill_hello(void *p)
{
	((struct msg_hello *)p)->version = UINT32_MAX;
}

static void
fill_verbose(void *p)
{
	((struct msg_verbose *)p)->level = UINT32_MAX;
}

/* --- control */

static void
fill_ctl_ok(void *p)
{
	((struct msg_ctl_ok *)p)->message = codec_str(CTL_TEXT_MAX);
}

static int
over_ctl_ok(void *p, int i)
{
	if (i > 0)
		return -1;
	((struct msg_ctl_ok *)p)->message = codec_str(CTL_TEXT_MAX + 1);
	return 0;
}

static void
fill_ctl_fail(void *p)
{
	((struct msg_ctl_fail *)p)->message = codec_str(CTL_TEXT_MAX);
}

static int
over_ctl_fail(void *p, int i)
{
	if (i > 0)
		return -1;
	((struct msg_ctl_fail *)p)->message = codec_str(CTL_TEXT_MAX + 1);
	return 0;
}

static void
fill_ctl_status_proc(void *p)
{
	struct msg_ctl_status_proc	*m = p;

	m->title = m->state = codec_str(CTL_TITLE_MAX);
	m->pid = m->uid = m->seccomp = m->nonewprivs = m->restarts =
	    UINT32_MAX;
	m->capeff = m->capprm = UINT64_MAX;
}

static int
over_ctl_status_proc(void *p, int i)
{
	struct msg_ctl_status_proc	*m = p;

	switch (i) {
	case 0: m->title = codec_str(CTL_TITLE_MAX + 1); break;
	case 1: m->state = codec_str(CTL_TITLE_MAX + 1); break;
	default: return -1;
	}
	return 0;
}

static void
fill_ctl_status_note(void *p)
{
	struct msg_ctl_status_note	*m = p;

	m->topic = codec_str(CTL_TITLE_MAX);
	m->text = codec_str(CTL_NOTE_MAX);
}

static int
over_ctl_status_note(void *p, int i)
{
	struct msg_ctl_status_note	*m = p;

	switch (i) {
	case 0: m->topic = codec_str(CTL_TITLE_MAX + 1); break;
	case 1: m->text = codec_str(CTL_NOTE_MAX + 1); break;
	default: return -1;
	}
	return 0;
}

static void
fill_ctl_token_issue(void *p)
{
	struct msg_ctl_token_issue	*m = p;

	m->workspace = name(WS_NAME_MAX);
	memcpy(m->hash, codec_bytes(TOKEN_HASH_LEN), TOKEN_HASH_LEN);
	m->ttl = UINT64_MAX;
	m->flags = UINT32_MAX;
	m->rotate = 1;
}

static int
over_ctl_token_issue(void *p, int i)
{
	struct msg_ctl_token_issue	*m = p;

	switch (i) {
	case 0: m->workspace = name(WS_NAME_MAX + 1); break;
	default: return -1;
	}
	return 0;
}

static void
fill_ctl_ws_revoke(void *p)
{
	struct msg_ctl_ws_revoke	*m = p;

	m->workspace = name(WS_NAME_MAX);
	m->vms = CTL_REVOKE_STOP;
}

static int
over_ctl_ws_revoke(void *p, int i)
{
	struct msg_ctl_ws_revoke	*m = p;

	switch (i) {
	case 0: m->workspace = name(WS_NAME_MAX + 1); break;
	case 1: m->vms = CTL_REVOKE_HIBERNATE + 1; break;
	default: return -1;
	}
	return 0;
}

static void
fill_ctl_ws_entry(void *p)
{
	struct msg_ctl_ws_entry	*m = p;

	m->workspace = name(WS_NAME_MAX);
	m->flags = m->live_tokens = UINT32_MAX;
	m->created = m->revoked = m->next_expiry = UINT64_MAX;
}

static int
over_ctl_ws_entry(void *p, int i)
{
	if (i > 0)
		return -1;
	((struct msg_ctl_ws_entry *)p)->workspace = name(WS_NAME_MAX + 1);
	return 0;
}

static void
fill_ctl_status_ws(void *p)
{
	struct msg_ctl_status_ws	*m = p;

	m->workspace = name(WS_NAME_MAX);
	m->quota = QUOTA_ALL;
	m->vms = m->max_vms = m->vcpus = m->max_vcpus = UINT32_MAX;
	m->memory = m->max_memory = m->storage = m->max_storage = UINT64_MAX;
}

static int
over_ctl_status_ws(void *p, int i)
{
	struct msg_ctl_status_ws	*m = p;

	switch (i) {
	case 0: m->workspace = name(WS_NAME_MAX + 1); break;
	case 1: m->quota = QUOTA_ALL + 1; break;
	default: return -1;
	}
	return 0;
}

static void
fill_ctl_vm_entry(void *p)
{
	struct msg_ctl_vm_entry	*m = p;

	m->id = VM_ID;
	m->name = name(OBJ_NAME_MAX);
	m->workspace = name(WS_NAME_MAX);
	m->state = codec_str(CTL_STATE_MAX);
	m->uid = m->qemu_pid = m->memory_mib = m->vcpus = UINT32_MAX;
	m->uptime = UINT64_MAX;
}

static int
over_ctl_vm_entry(void *p, int i)
{
	struct msg_ctl_vm_entry	*m = p;

	switch (i) {
	case 0: m->id = "vm-0123456789abcdeg"; break;
	case 1: m->name = name(OBJ_NAME_MAX + 1); break;
	case 2: m->workspace = name(WS_NAME_MAX + 1); break;
	case 3: m->state = codec_str(CTL_STATE_MAX + 1); break;
	default: return -1;
	}
	return 0;
}

static void
fill_ctl_vm_stop(void *p)
{
	struct msg_ctl_vm_stop	*m = p;

	m->id = VM_ID;
	m->force = 1;
}

static int
over_ctl_vm_stop(void *p, int i)
{
	struct msg_ctl_vm_stop	*m = p;

	switch (i) {
	case 0: m->id = "vm-0123456789abcde"; break;
	case 1: m->force = 2; break;
	default: return -1;
	}
	return 0;
}

static void
fill_ctl_vm_destroy(void *p)
{
	((struct msg_ctl_vm_destroy *)p)->id = VM_ID;
}

static int
over_ctl_vm_destroy(void *p, int i)
{
	if (i > 0)
		return -1;
	((struct msg_ctl_vm_destroy *)p)->id = "job-0123456789abcdef";
	return 0;
}

static void
fill_ctl_vm_attach(void *p)
{
	struct msg_ctl_vm_attach	*m = p;
	static char			 path[CTL_SOCK_PATH_MAX + 2];

	memset(path, 'q', CTL_SOCK_PATH_MAX);
	path[0] = '/';
	path[CTL_SOCK_PATH_MAX] = '\0';
	m->workspace = name(WS_NAME_MAX);
	m->name = name(OBJ_NAME_MAX);
	m->qmp = path;
	m->qga = "";
	m->pid = INT32_MAX;
}

static int
over_ctl_vm_attach(void *p, int i)
{
	struct msg_ctl_vm_attach	*m = p;
	static char			 longer[CTL_SOCK_PATH_MAX + 2];

	memset(longer, 'q', CTL_SOCK_PATH_MAX + 1);
	longer[0] = '/';
	longer[CTL_SOCK_PATH_MAX + 1] = '\0';
	switch (i) {
	case 0: m->workspace = name(WS_NAME_MAX + 1); break;
	case 1: m->name = name(OBJ_NAME_MAX + 1); break;
	case 2: m->qmp = longer; break;
	case 3: m->qmp = "relative.sock"; break;
	case 4: m->qmp = ""; break;
	case 5: m->qga = "relative.sock"; break;
	case 6: m->pid = (uint32_t)INT32_MAX + 1; break;
	case 7: m->workspace = "Bad Name"; break;
	default: return -1;
	}
	return 0;
}

static void
fill_ctl_vm_forget(void *p)
{
	((struct msg_ctl_vm_forget *)p)->id = VM_ID;
}

static int
over_ctl_vm_forget(void *p, int i)
{
	if (i > 0)
		return -1;
	((struct msg_ctl_vm_forget *)p)->id = "vm-0123";
	return 0;
}

static void
fill_ctl_quota_set(void *p)
{
	struct msg_ctl_quota_set	*m = p;

	m->workspace = name(WS_NAME_MAX);
	m->set = QUOTA_ALL;
	m->vms = m->vcpus = UINT32_MAX;
	m->memory = m->storage = UINT64_MAX;
}

static int
over_ctl_quota_set(void *p, int i)
{
	struct msg_ctl_quota_set	*m = p;

	switch (i) {
	case 0: m->workspace = name(WS_NAME_MAX + 1); break;
	case 1: m->set = QUOTA_ALL + 1; break;
	case 2: m->set = 0; break;
	default: return -1;
	}
	return 0;
}

/* --- netd */

static void
fill_net_preflight_result(void *p)
{
	struct msg_net_preflight_result	*m = p;

	m->problems = UINT32_MAX;
	m->text = codec_str(NET_PREFLIGHT_TEXT_MAX);
}

static int
over_net_preflight_result(void *p, int i)
{
	if (i > 0)
		return -1;
	((struct msg_net_preflight_result *)p)->text =
	    codec_str(NET_PREFLIGHT_TEXT_MAX + 1);
	return 0;
}

static void
fill_forwards(uint32_t *n, struct msg_net_forward *fwd)
{
	uint32_t	 i;

	*n = NET_FWD_MAX;
	for (i = 0; i < NET_FWD_MAX; i++) {
		fwd[i].host = PORT_MAX;
		fwd[i].guest = PORT_MAX;
	}
}

static int
over_forwards(uint32_t *n, struct msg_net_forward *fwd, int i)
{
	switch (i) {
	case 0: fwd[0].host = PORT_MAX + 1; break;
	case 1: fwd[1].guest = 0; break;
	case 2: fwd[2].guest = PORT_MAX + 1; break;
	default: return -1;
	}
	return 0;
}

static void
fill_net_setup(void *p)
{
	struct msg_net_setup	*m = p;

	m->vm_id = VM_ID;
	m->slot = SLOTS_MAX - 1;
	m->network = NET_INBOUND;
	fill_forwards(&m->nforwards, m->fwd);
}

static int
over_net_setup(void *p, int i)
{
	struct msg_net_setup	*m = p;

	switch (i) {
	case 0: m->vm_id = codec_str(ID_MAX); break;	/* not an id */
	case 1: m->vm_id = VM_ID "0"; break;
	case 2: m->slot = SLOTS_MAX; break;
	case 3: m->network = NET_INBOUND + 1; break;
	default: return i == 7 ? -1 :
	    over_forwards(&m->nforwards, m->fwd, i - 4);
	}
	return 0;
}

static void
fill_net_teardown(void *p)
{
	struct msg_net_teardown	*m = p;

	m->vm_id = VM_ID;
	m->slot = SLOTS_MAX - 1;
}

static int
over_net_teardown(void *p, int i)
{
	struct msg_net_teardown	*m = p;

	switch (i) {
	case 0: m->vm_id = "vm-0"; break;
	case 1: m->slot = SLOTS_MAX; break;
	default: return -1;
	}
	return 0;
}

static void
fill_net_entry(void *p)
{
	struct msg_net_entry	*m = p;

	m->vm_id = codec_str(ID_MAX);
	m->slot = SLOTS_MAX - 1;
}

static int
over_net_entry(void *p, int i)
{
	struct msg_net_entry	*m = p;

	switch (i) {
	case 0: m->vm_id = codec_str(ID_MAX + 1); break;
	case 1: m->slot = SLOTS_MAX; break;
	default: return -1;
	}
	return 0;
}

static void
fill_net_fd(void *p)
{
	((struct msg_net_fd *)p)->role = NET_FD_TAP;
}

static int
over_net_fd(void *p, int i)
{
	struct msg_net_fd	*m = p;

	switch (i) {
	case 0: m->role = NET_FD_TAP + 1; break;
	case 1: m->role = 0; break;
	default: return -1;
	}
	return 0;
}

static void
fill_net_result(void *p)
{
	struct msg_net_result	*m = p;

	m->status = UINT32_MAX;
	m->address = m->gateway = m->resolver = m->mac =
	    codec_str(NET_STR_MAX);
	fill_forwards(&m->nforwards, m->fwd);
	m->text = codec_str(NET_TEXT_MAX);
}

static int
over_net_result(void *p, int i)
{
	struct msg_net_result	*m = p;
	const char		*s = codec_str(NET_STR_MAX + 1);

	switch (i) {
	case 0: m->address = s; break;
	case 1: m->gateway = s; break;
	case 2: m->resolver = s; break;
	case 3: m->mac = s; break;
	case 4: m->text = codec_str(NET_TEXT_MAX + 1); break;
	case 5: m->fwd[3].host = 0; break;	/* chosen, never auto */
	default: return i == 9 ? -1 :
	    over_forwards(&m->nforwards, m->fwd, i - 6);
	}
	return 0;
}

/* --- stored */

static void
fill_store_preflight_result(void *p)
{
	struct msg_store_preflight_result	*m = p;

	m->reflink = 1;
	m->text = codec_str(STORE_TEXT_MAX);
}

static int
over_store_preflight_result(void *p, int i)
{
	struct msg_store_preflight_result	*m = p;

	switch (i) {
	case 0: m->reflink = 2; break;
	case 1: m->text = codec_str(STORE_TEXT_MAX + 1); break;
	default: return -1;
	}
	return 0;
}

static void
fill_store_image_status(void *p)
{
	struct msg_store_image_status	*m = p;

	m->image = name(OBJ_NAME_MAX);
	m->ok = 1;
	m->disk_bytes = UINT64_MAX;
	m->text = codec_str(STORE_TEXT_MAX);
}

static int
over_store_image_status(void *p, int i)
{
	struct msg_store_image_status	*m = p;

	switch (i) {
	case 0: m->image = name(OBJ_NAME_MAX + 1); break;
	case 1: m->ok = 2; break;
	case 2: m->text = codec_str(STORE_TEXT_MAX + 1); break;
	default: return -1;
	}
	return 0;
}

static void
fill_store_disk_create(void *p)
{
	struct msg_store_disk_create	*m = p;

	m->vm_id = VM_ID;
	m->image = name(OBJ_NAME_MAX);
}

static int
over_store_disk_create(void *p, int i)
{
	struct msg_store_disk_create	*m = p;

	switch (i) {
	case 0: m->vm_id = "job-0123456789abcdef"; break;
	case 1: m->image = name(OBJ_NAME_MAX + 1); break;
	case 2: m->image = "-a"; break;
	default: return -1;
	}
	return 0;
}

static void
fill_store_disk_open(void *p)
{
	fill_store_disk_create(p);
}

static int
over_store_disk_open(void *p, int i)
{
	return over_store_disk_create(p, i);
}

static void
fill_store_disk_delete(void *p)
{
	((struct msg_store_disk_delete *)p)->vm_id = VM_ID;
}

static int
over_store_disk_delete(void *p, int i)
{
	if (i > 0)
		return -1;
	((struct msg_store_disk_delete *)p)->vm_id = VM_ID "0";
	return 0;
}

static void
fill_store_disk_entry(void *p)
{
	((struct msg_store_disk_entry *)p)->vm_id = VM_ID;
}

static int
over_store_disk_entry(void *p, int i)
{
	if (i > 0)
		return -1;
	((struct msg_store_disk_entry *)p)->vm_id = VM_ID "0";
	return 0;
}

static void
fill_store_fd(void *p)
{
	((struct msg_store_fd *)p)->role = STORE_FD_MAX;
}

static int
over_store_fd(void *p, int i)
{
	struct msg_store_fd	*m = p;

	switch (i) {
	case 0: m->role = STORE_FD_MAX + 1; break;
	case 1: m->role = 0; break;
	default: return -1;
	}
	return 0;
}

static void
fill_store_result(void *p)
{
	struct msg_store_result	*m = p;

	m->status = UINT32_MAX;
	m->format = DISK_QCOW2;
	m->disk_bytes = UINT64_MAX;
	m->text = codec_str(STORE_TEXT_MAX);
}

static int
over_store_result(void *p, int i)
{
	struct msg_store_result	*m = p;

	switch (i) {
	case 0: m->format = DISK_QCOW2 + 1; break;
	case 1: m->text = codec_str(STORE_TEXT_MAX + 1); break;
	default: return -1;
	}
	return 0;
}

static void
fill_store_checkpoint(void *p)
{
	struct msg_store_checkpoint	*m = p;

	m->vm_id = VM_ID;
	m->write = 1;
	m->base = VM_ID;
}

static int
over_store_checkpoint(void *p, int i)
{
	struct msg_store_checkpoint	*m = p;

	switch (i) {
	case 0: m->vm_id = "vm-"; break;
	case 1: m->write = 2; break;
	case 2: m->base = "vm-"; break;
	case 3: m->write = 0; break;
	default: return -1;
	}
	return 0;
}

static void
fill_store_vm_ram(void *p)
{
	struct msg_store_vm_ram	*m = p;

	m->vm_id = VM_ID;
	m->mib = VM_MEMORY_MAX_MIB;
}

static int
over_store_vm_ram(void *p, int i)
{
	struct msg_store_vm_ram	*m = p;

	switch (i) {
	case 0: m->vm_id = "vm-"; break;
	case 1: m->mib = VM_MEMORY_MIN_MIB - 1; break;
	case 2: m->mib = VM_MEMORY_MAX_MIB + 1; break;
	default: return -1;
	}
	return 0;
}

static void
fill_store_disk_copy(void *p)
{
	struct msg_store_disk_copy	*m = p;

	m->vm_id = VM_ID;
	m->from = "vm-fedcba9876543210";
}

static int
over_store_disk_copy(void *p, int i)
{
	struct msg_store_disk_copy	*m = p;

	switch (i) {
	case 0: m->vm_id = "vm-"; break;
	case 1: m->from = "../vm-0123456789abcdef"; break;
	case 2: m->from = m->vm_id; break;
	default: return -1;
	}
	return 0;
}

static void
fill_store_vm_snapshot(void *p)
{
	struct msg_store_vm_snapshot	*m = p;

	m->vm_id = VM_ID;
	m->op = SVS_RESTORE;
	m->tag = name(OBJ_NAME_MAX);
}

static int
over_store_vm_snapshot(void *p, int i)
{
	struct msg_store_vm_snapshot	*m = p;

	switch (i) {
	case 0: m->vm_id = "vm-"; break;
	case 1: m->op = 0; break;
	case 2: m->op = SVS_DELETE + 1; break;
	case 3: m->tag = name(OBJ_NAME_MAX + 1); break;
	case 4: m->tag = "12"; break;
	case 5: m->tag = "../x"; break;
	default: return -1;
	}
	return 0;
}

static void
fill_store_image(void *p)
{
	struct msg_store_image	*m = p;

	m->op = SIO_CONVERT;
	m->ws = 7;
	m->name = "src";
	m->dest = "dst";
	m->base = "";
	m->tag = "";
	m->format = IMG_VMDK;
	m->flags = SIF_OVERWRITE | SIF_COMPRESS;
	m->bytes = 1 << 30;
	m->budget = 40ULL << 30;
	m->max_images = 64;
}

static int
over_store_image(void *p, int i)
{
	struct msg_store_image	*m = p;

	switch (i) {
	case 0: m->op = SIO_NOPS; break;
	case 1: m->ws = 0; break;
	case 2: m->name = ""; break;
	case 3: m->name = "../x"; break;
	case 4: m->dest = "A"; break;
	case 5: m->tag = name(OBJ_NAME_MAX + 1); break;
	case 6: m->format = IMG_NFORMATS; break;
	case 7: m->flags = 0x100; break;
	case 8: m->ws = (uint64_t)INT64_MAX + 1; break;
	default: return -1;
	}
	return 0;
}

static void
fill_store_image_entry(void *p)
{
	struct msg_store_image_entry	*m = p;

	m->name = "img";
	m->format = IMG_QCOW2;
	m->catalog = 0;
	m->virtual_bytes = 1 << 30;
	m->disk_bytes = 200704;
	m->backing = "debian";
	m->backing_catalog = 1;
	m->users = 2;
	m->snapshots = 3;
}

static int
over_store_image_entry(void *p, int i)
{
	struct msg_store_image_entry	*m = p;

	switch (i) {
	case 0: m->name = ""; break;
	case 1: m->format = IMG_NFORMATS; break;
	case 2: m->catalog = 2; break;
	case 3: m->backing = "a/b"; break;
	case 4: m->backing_catalog = 2; break;
	default: return -1;
	}
	return 0;
}

static void
fill_store_image_snap(void *p)
{
	struct msg_store_image_snap	*m = p;

	m->tag = "before";
	m->vm_bytes = 4096;
	m->date = 1796160000;
}

static int
over_store_image_snap(void *p, int i)
{
	struct msg_store_image_snap	*m = p;

	switch (i) {
	case 0: m->tag = ""; break;
	case 1: m->tag = "a b"; break;
	default: return -1;
	}
	return 0;
}

/* Distinct disk names, each at its largest. */
static char	 vm_disk_names[VM_DISKS_MAX][OBJ_NAME_MAX + 1];

static void
fill_store_vm_disks(void *p)
{
	struct msg_store_vm_disks	*m = p;
	unsigned int			 i;

	m->vm_id = VM_ID;
	m->ws = UINT64_MAX;
	m->create = 1;
	m->persistent = 1;
	m->firmware = FW_UEFI;
	m->ndisks = VM_DISKS_MAX;
	for (i = 0; i < VM_DISKS_MAX; i++) {
		memset(vm_disk_names[i], 'a', OBJ_NAME_MAX);
		vm_disk_names[i][0] = (char)('a' + i);
		vm_disk_names[i][OBJ_NAME_MAX] = '\0';
		m->disks[i] = vm_disk_names[i];
	}
	m->iso = codec_str(OBJ_NAME_MAX);
}

static int
over_store_vm_disks(void *p, int i)
{
	struct msg_store_vm_disks	*m = p;

	switch (i) {
	case 0: m->vm_id = "vm-"; break;
	case 1: m->ws = 0; break;
	case 2: m->create = 2; break;
	case 3: m->persistent = 2; break;
	case 4: m->firmware = FW_UEFI + 1; break;
	case 5: m->ndisks = 0; break;
	case 6: m->disks[1] = m->disks[0]; break;	/* twice */
	case 7: m->disks[2] = "a b"; break;
	case 8: m->iso = "a b"; break;
	case 9: m->iso = codec_str(OBJ_NAME_MAX + 1); break;
	default: return -1;
	}
	return 0;
}

static void
fill_store_vm_disk(void *p)
{
	struct msg_store_vm_disk	*m = p;

	m->index = VM_DISKS_MAX - 1;
	m->format = IMG_QCOW2;
	m->has_base = 1;
	m->base_format = IMG_RAW;
}

static int
over_store_vm_disk(void *p, int i)
{
	struct msg_store_vm_disk	*m = p;

	switch (i) {
	case 0: m->index = VM_DISKS_MAX; break;
	case 1: m->format = IMG_VMDK; break;
	case 2: m->has_base = 2; break;
	case 3: m->base_format = IMG_ISO; break;
	case 4: m->format = IMG_RAW; break;	/* a raw disk with a base */
	default: return -1;
	}
	return 0;
}

static void
fill_store_progress(void *p)
{
	struct msg_store_progress	*m = p;

	m->permille = 500;
}

static int
over_store_progress(void *p, int i)
{
	struct msg_store_progress	*m = p;

	if (i != 0)
		return -1;
	m->permille = 1001;
	return 0;
}

const struct codec codec_peers[] = {
	CODEC(IMSG_HELLO, hello, fill_hello, NULL),
	CODEC(IMSG_VERBOSE, verbose, fill_verbose, NULL),

	CODEC(IMSG_CTL_OK, ctl_ok, fill_ctl_ok, over_ctl_ok),
	CODEC(IMSG_CTL_FAIL, ctl_fail, fill_ctl_fail, over_ctl_fail),
	CODEC0(IMSG_CTL_END, ctl_end),
	CODEC0(IMSG_CTL_STATUS, ctl_status),
	CODEC(IMSG_CTL_STATUS_PROC, ctl_status_proc, fill_ctl_status_proc,
	    over_ctl_status_proc),
	CODEC(IMSG_CTL_TOKEN_ISSUE, ctl_token_issue, fill_ctl_token_issue,
	    over_ctl_token_issue),
	CODEC(IMSG_CTL_WS_REVOKE, ctl_ws_revoke, fill_ctl_ws_revoke,
	    over_ctl_ws_revoke),
	CODEC0(IMSG_CTL_WS_LIST, ctl_ws_list),
	CODEC(IMSG_CTL_WS_ENTRY, ctl_ws_entry, fill_ctl_ws_entry,
	    over_ctl_ws_entry),
	CODEC(IMSG_CTL_STATUS_NOTE, ctl_status_note, fill_ctl_status_note,
	    over_ctl_status_note),
	CODEC(IMSG_CTL_STATUS_WS, ctl_status_ws, fill_ctl_status_ws,
	    over_ctl_status_ws),
	CODEC0(IMSG_CTL_VM_LIST, ctl_vm_list),
	CODEC(IMSG_CTL_VM_ENTRY, ctl_vm_entry, fill_ctl_vm_entry,
	    over_ctl_vm_entry),
	CODEC(IMSG_CTL_VM_STOP, ctl_vm_stop, fill_ctl_vm_stop,
	    over_ctl_vm_stop),
	CODEC(IMSG_CTL_VM_DESTROY, ctl_vm_destroy, fill_ctl_vm_destroy,
	    over_ctl_vm_destroy),
	CODEC(IMSG_CTL_VM_ATTACH, ctl_vm_attach, fill_ctl_vm_attach,
	    over_ctl_vm_attach),
	CODEC(IMSG_CTL_VM_FORGET, ctl_vm_forget, fill_ctl_vm_forget,
	    over_ctl_vm_forget),
	CODEC(IMSG_CTL_QUOTA_SET, ctl_quota_set, fill_ctl_quota_set,
	    over_ctl_quota_set),

	CODEC0(IMSG_NET_PREFLIGHT, net_preflight),
	CODEC(IMSG_NET_PREFLIGHT_RESULT, net_preflight_result,
	    fill_net_preflight_result, over_net_preflight_result),
	CODEC(IMSG_NET_SETUP, net_setup, fill_net_setup, over_net_setup),
	CODEC(IMSG_NET_TEARDOWN, net_teardown, fill_net_teardown,
	    over_net_teardown),
	CODEC0(IMSG_NET_LIST, net_list),
	CODEC(IMSG_NET_ENTRY, net_entry, fill_net_entry, over_net_entry),
	CODEC(IMSG_NET_FD, net_fd, fill_net_fd, over_net_fd),
	CODEC(IMSG_NET_RESULT, net_result, fill_net_result, over_net_result),

	CODEC0(IMSG_STORE_PREFLIGHT, store_preflight),
	CODEC(IMSG_STORE_PREFLIGHT_RESULT, store_preflight_result,
	    fill_store_preflight_result, over_store_preflight_result),
	CODEC(IMSG_STORE_IMAGE_STATUS, store_image_status,
	    fill_store_image_status, over_store_image_status),
	CODEC(IMSG_STORE_DISK_CREATE, store_disk_create,
	    fill_store_disk_create, over_store_disk_create),
	CODEC(IMSG_STORE_DISK_OPEN, store_disk_open, fill_store_disk_open,
	    over_store_disk_open),
	CODEC(IMSG_STORE_DISK_DELETE, store_disk_delete,
	    fill_store_disk_delete, over_store_disk_delete),
	CODEC0(IMSG_STORE_DISK_LIST, store_disk_list),
	CODEC(IMSG_STORE_DISK_ENTRY, store_disk_entry, fill_store_disk_entry,
	    over_store_disk_entry),
	CODEC(IMSG_STORE_FD, store_fd, fill_store_fd, over_store_fd),
	CODEC(IMSG_STORE_RESULT, store_result, fill_store_result,
	    over_store_result),
	CODEC(IMSG_STORE_CHECKPOINT, store_checkpoint, fill_store_checkpoint,
	    over_store_checkpoint),
	CODEC(IMSG_STORE_VM_RAM, store_vm_ram, fill_store_vm_ram,
	    over_store_vm_ram),
	CODEC(IMSG_STORE_DISK_COPY, store_disk_copy, fill_store_disk_copy,
	    over_store_disk_copy),
	CODEC(IMSG_STORE_VM_SNAPSHOT, store_vm_snapshot,
	    fill_store_vm_snapshot, over_store_vm_snapshot),
	CODEC(IMSG_STORE_IMAGE, store_image, fill_store_image,
	    over_store_image),
	CODEC(IMSG_STORE_IMAGE_ENTRY, store_image_entry,
	    fill_store_image_entry, over_store_image_entry),
	CODEC(IMSG_STORE_IMAGE_SNAP, store_image_snap, fill_store_image_snap,
	    over_store_image_snap),
	CODEC(IMSG_STORE_PROGRESS, store_progress, fill_store_progress,
	    over_store_progress),
	CODEC0(IMSG_STORE_CANCEL, store_cancel),
	CODEC(IMSG_STORE_VM_DISKS, store_vm_disks, fill_store_vm_disks,
	    over_store_vm_disks),
	CODEC(IMSG_STORE_VM_DISK, store_vm_disk, fill_store_vm_disk,
	    over_store_vm_disk),
	CODEC_END
};
