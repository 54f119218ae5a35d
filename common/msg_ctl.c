/* The control socket's messages: see msg_ctl.h and msg_vmm.h. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "msg.h"
#include "msg_ctl.h"
#include "proto.h"
#include "validate.h"

static int
get_text(struct imsg *imsg, uint32_t type, const char **s)
{
	struct mreader	 r;

	*s = NULL;
	if (m_open(&r, imsg, type) == -1 ||
	    m_get_str(&r, s, CTL_TEXT_MAX) == -1)
		return -1;
	return m_end(&r);
}

void
msg_ctl_ok_put(struct ibuf *b, const struct msg_ctl_ok *m)
{
	m_add_str(b, m->message);
}

int
msg_ctl_ok_get(struct imsg *imsg, struct msg_ctl_ok *m)
{
	return get_text(imsg, IMSG_CTL_OK, &m->message);
}

void
msg_ctl_fail_put(struct ibuf *b, const struct msg_ctl_fail *m)
{
	m_add_str(b, m->message);
}

int
msg_ctl_fail_get(struct imsg *imsg, struct msg_ctl_fail *m)
{
	return get_text(imsg, IMSG_CTL_FAIL, &m->message);
}

int
msg_ctl_end_get(struct imsg *imsg)
{
	return m_empty(imsg, IMSG_CTL_END);
}

int
msg_ctl_status_get(struct imsg *imsg)
{
	return m_empty(imsg, IMSG_CTL_STATUS);
}

void
msg_ctl_status_proc_put(struct ibuf *b, const struct msg_ctl_status_proc *m)
{
	m_add_str(b, m->title);
	m_add_u32(b, m->pid);
	m_add_u32(b, m->uid);
	m_add_u64(b, m->capeff);
	m_add_u64(b, m->capprm);
	m_add_u32(b, m->seccomp);
	m_add_u32(b, m->nonewprivs);
	m_add_u32(b, m->restarts);
	m_add_str(b, m->state);
}

int
msg_ctl_status_proc_get(struct imsg *imsg, struct msg_ctl_status_proc *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_CTL_STATUS_PROC) == -1 ||
	    m_get_str(&r, &m->title, CTL_TITLE_MAX) == -1 ||
	    m_get_u32(&r, &m->pid) == -1 || m_get_u32(&r, &m->uid) == -1 ||
	    m_get_u64(&r, &m->capeff) == -1 ||
	    m_get_u64(&r, &m->capprm) == -1 ||
	    m_get_u32(&r, &m->seccomp) == -1 ||
	    m_get_u32(&r, &m->nonewprivs) == -1 ||
	    m_get_u32(&r, &m->restarts) == -1 ||
	    m_get_str(&r, &m->state, CTL_TITLE_MAX) == -1)
		return -1;
	return m_end(&r);
}

void
msg_ctl_status_note_put(struct ibuf *b, const struct msg_ctl_status_note *m)
{
	m_add_str(b, m->topic);
	m_add_str(b, m->text);
}

int
msg_ctl_status_note_get(struct imsg *imsg, struct msg_ctl_status_note *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_CTL_STATUS_NOTE) == -1 ||
	    m_get_str(&r, &m->topic, CTL_TITLE_MAX) == -1 ||
	    m_get_str(&r, &m->text, CTL_NOTE_MAX) == -1)
		return -1;
	return m_end(&r);
}

void
msg_ctl_status_ws_put(struct ibuf *b, const struct msg_ctl_status_ws *m)
{
	m_add_str(b, m->workspace);
	m_add_u32(b, m->quota);
	m_add_u32(b, m->vms);
	m_add_u32(b, m->max_vms);
	m_add_u64(b, m->memory);
	m_add_u64(b, m->max_memory);
	m_add_u32(b, m->vcpus);
	m_add_u32(b, m->max_vcpus);
	m_add_u64(b, m->storage);
	m_add_u64(b, m->max_storage);
}

int
msg_ctl_status_ws_get(struct imsg *imsg, struct msg_ctl_status_ws *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_CTL_STATUS_WS) == -1 ||
	    m_get_str(&r, &m->workspace, WS_NAME_MAX) == -1 ||
	    m_get_u32(&r, &m->quota) == -1 ||
	    m_get_u32(&r, &m->vms) == -1 ||
	    m_get_u32(&r, &m->max_vms) == -1 ||
	    m_get_u64(&r, &m->memory) == -1 ||
	    m_get_u64(&r, &m->max_memory) == -1 ||
	    m_get_u32(&r, &m->vcpus) == -1 ||
	    m_get_u32(&r, &m->max_vcpus) == -1 ||
	    m_get_u64(&r, &m->storage) == -1 ||
	    m_get_u64(&r, &m->max_storage) == -1)
		return -1;
	if ((m->quota & ~QUOTA_ALL) != 0)
		return m_fail();
	return m_end(&r);
}

void
msg_ctl_token_issue_put(struct ibuf *b, const struct msg_ctl_token_issue *m)
{
	m_add_str(b, m->workspace);
	m_add_bytes(b, m->hash, sizeof(m->hash));
	m_add_u64(b, m->ttl);
	m_add_u32(b, m->flags);
	m_add_u32(b, m->rotate);
}

int
msg_ctl_token_issue_get(struct imsg *imsg, struct msg_ctl_token_issue *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_CTL_TOKEN_ISSUE) == -1 ||
	    m_get_str(&r, &m->workspace, WS_NAME_MAX) == -1 ||
	    m_get_bytes_exact(&r, m->hash, sizeof(m->hash)) == -1 ||
	    m_get_u64(&r, &m->ttl) == -1 || m_get_u32(&r, &m->flags) == -1 ||
	    m_get_u32(&r, &m->rotate) == -1)
		return -1;
	return m_end(&r);
}

void
msg_ctl_ws_revoke_put(struct ibuf *b, const struct msg_ctl_ws_revoke *m)
{
	m_add_str(b, m->workspace);
	m_add_u32(b, m->vms);
}

int
msg_ctl_ws_revoke_get(struct imsg *imsg, struct msg_ctl_ws_revoke *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_CTL_WS_REVOKE) == -1 ||
	    m_get_str(&r, &m->workspace, WS_NAME_MAX) == -1 ||
	    m_get_u32(&r, &m->vms) == -1)
		return -1;
	if (m->vms > CTL_REVOKE_HIBERNATE)
		return m_fail();
	return m_end(&r);
}

int
msg_ctl_ws_list_get(struct imsg *imsg)
{
	return m_empty(imsg, IMSG_CTL_WS_LIST);
}

void
msg_ctl_ws_entry_put(struct ibuf *b, const struct msg_ctl_ws_entry *m)
{
	m_add_str(b, m->workspace);
	m_add_u32(b, m->flags);
	m_add_u64(b, m->created);
	m_add_u64(b, m->revoked);
	m_add_u32(b, m->live_tokens);
	m_add_u64(b, m->next_expiry);
}

int
msg_ctl_ws_entry_get(struct imsg *imsg, struct msg_ctl_ws_entry *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_CTL_WS_ENTRY) == -1 ||
	    m_get_str(&r, &m->workspace, WS_NAME_MAX) == -1 ||
	    m_get_u32(&r, &m->flags) == -1 ||
	    m_get_u64(&r, &m->created) == -1 ||
	    m_get_u64(&r, &m->revoked) == -1 ||
	    m_get_u32(&r, &m->live_tokens) == -1 ||
	    m_get_u64(&r, &m->next_expiry) == -1)
		return -1;
	return m_end(&r);
}

int
msg_ctl_vm_list_get(struct imsg *imsg)
{
	return m_empty(imsg, IMSG_CTL_VM_LIST);
}

void
msg_ctl_vm_entry_put(struct ibuf *b, const struct msg_ctl_vm_entry *m)
{
	m_add_str(b, m->id);
	m_add_str(b, m->name);
	m_add_str(b, m->workspace);
	m_add_str(b, m->state);
	m_add_u32(b, m->uid);
	m_add_u32(b, m->qemu_pid);
	m_add_u32(b, m->memory_mib);
	m_add_u32(b, m->vcpus);
	m_add_u64(b, m->uptime);
}

int
msg_ctl_vm_entry_get(struct imsg *imsg, struct msg_ctl_vm_entry *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_CTL_VM_ENTRY) == -1 ||
	    m_get_vm_id(&r, &m->id) == -1 ||
	    m_get_str(&r, &m->name, OBJ_NAME_MAX) == -1 ||
	    m_get_str(&r, &m->workspace, WS_NAME_MAX) == -1 ||
	    m_get_str(&r, &m->state, CTL_STATE_MAX) == -1 ||
	    m_get_u32(&r, &m->uid) == -1 ||
	    m_get_u32(&r, &m->qemu_pid) == -1 ||
	    m_get_u32(&r, &m->memory_mib) == -1 ||
	    m_get_u32(&r, &m->vcpus) == -1 ||
	    m_get_u64(&r, &m->uptime) == -1)
		return -1;
	return m_end(&r);
}

void
msg_ctl_vm_stop_put(struct ibuf *b, const struct msg_ctl_vm_stop *m)
{
	m_add_str(b, m->id);
	m_add_u32(b, m->force);
}

int
msg_ctl_vm_stop_get(struct imsg *imsg, struct msg_ctl_vm_stop *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_CTL_VM_STOP) == -1 ||
	    m_get_vm_id(&r, &m->id) == -1 ||
	    m_get_flag(&r, &m->force) == -1)
		return -1;
	return m_end(&r);
}

void
msg_ctl_vm_destroy_put(struct ibuf *b, const struct msg_ctl_vm_destroy *m)
{
	m_add_str(b, m->id);
}

int
msg_ctl_vm_destroy_get(struct imsg *imsg, struct msg_ctl_vm_destroy *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_CTL_VM_DESTROY) == -1 ||
	    m_get_vm_id(&r, &m->id) == -1)
		return -1;
	return m_end(&r);
}

void
msg_ctl_quota_set_put(struct ibuf *b, const struct msg_ctl_quota_set *m)
{
	m_add_str(b, m->workspace);
	m_add_u32(b, m->set);
	m_add_u32(b, m->vms);
	m_add_u64(b, m->memory);
	m_add_u32(b, m->vcpus);
	m_add_u64(b, m->storage);
}

/* The values' bounds are limit_check()'s, applied by mcvmd. */
int
msg_ctl_quota_set_get(struct imsg *imsg, struct msg_ctl_quota_set *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_CTL_QUOTA_SET) == -1 ||
	    m_get_str(&r, &m->workspace, WS_NAME_MAX) == -1 ||
	    m_get_u32(&r, &m->set) == -1 ||
	    m_get_u32(&r, &m->vms) == -1 ||
	    m_get_u64(&r, &m->memory) == -1 ||
	    m_get_u32(&r, &m->vcpus) == -1 ||
	    m_get_u64(&r, &m->storage) == -1)
		return -1;
	if (m->set == 0 || (m->set & ~QUOTA_ALL) != 0)
		return m_fail();
	return m_end(&r);
}

void
msg_ctl_vm_attach_put(struct ibuf *b, const struct msg_ctl_vm_attach *m)
{
	m_add_str(b, m->workspace);
	m_add_str(b, m->name);
	m_add_str(b, m->qmp);
	m_add_str(b, m->qga);
	m_add_u32(b, m->pid);
}

/* A socket path: absolute, or "" where none may be. */
static int
ctl_sock_path(const char *s, int may_be_empty)
{
	return (s[0] == '\0' && may_be_empty) || s[0] == '/';
}

int
msg_ctl_vm_attach_get(struct imsg *imsg, struct msg_ctl_vm_attach *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_CTL_VM_ATTACH) == -1 ||
	    m_get_str(&r, &m->workspace, WS_NAME_MAX) == -1 ||
	    m_get_str(&r, &m->name, OBJ_NAME_MAX) == -1 ||
	    m_get_str(&r, &m->qmp, CTL_SOCK_PATH_MAX) == -1 ||
	    m_get_str(&r, &m->qga, CTL_SOCK_PATH_MAX) == -1 ||
	    m_get_u32(&r, &m->pid) == -1)
		return -1;
	if (!valid_workspace_name(m->workspace) ||
	    !valid_object_name(m->name) || !ctl_sock_path(m->qmp, 0) ||
	    !ctl_sock_path(m->qga, 1) || m->pid > INT32_MAX)
		return m_fail();
	return m_end(&r);
}

void
msg_ctl_vm_forget_put(struct ibuf *b, const struct msg_ctl_vm_forget *m)
{
	m_add_str(b, m->id);
}

int
msg_ctl_vm_forget_get(struct imsg *imsg, struct msg_ctl_vm_forget *m)
{
	struct mreader	 r;

	memset(m, 0, sizeof(*m));
	if (m_open(&r, imsg, IMSG_CTL_VM_FORGET) == -1 ||
	    m_get_vm_id(&r, &m->id) == -1)
		return -1;
	return m_end(&r);
}
