/*
 * The VM controller: VM objects, and what mcvmd shows of them.
 *
 * A VM runs as two processes, both in the VM's cgroup and both as the VM
 * slot's uid: QEMU in its jail (jail.c, spawn.c) and the VM monitor
 * (mcvm-vmm), the only process that parses what QEMU and the guest send.
 * mcvmd reads typed imsg fields from the monitor and nothing else
 * (monitor.c).  Its state changes only through vm_fsm() (fsm.c).
 */
#include <sys/random.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hash.h"
#include "log.h"
#include "req.h"
#include "task.h"
#include "vm.h"

struct vm_list		 vms = TAILQ_HEAD_INITIALIZER(vms);

static struct event	 sweep_ev;

static void	 vm_disks_json(const struct vm *, json_t *);

/* A VM by id, visible only to its own workspace (ws 0: any). */
struct vm *
vm_find(const char *id, int64_t ws)
{
	struct vm	*vm;

	TAILQ_FOREACH(vm, &vms, entry)
		if (strcmp(vm->row.id, id) == 0 &&
		    (ws == 0 || vm->row.ws_id == ws))
			return vm;
	return NULL;
}

/*
 * The VM of workspace ws named name, in any state (its row holds the
 * name until it is destroyed).  Names are unique within a workspace.
 */
struct vm *
vm_find_name(const char *name, int64_t ws)
{
	struct vm	*vm;

	TAILQ_FOREACH(vm, &vms, entry)
		if (vm->row.ws_id == ws && !vm->tpl &&
		    strcmp(vm->row.name, name) == 0)
			return vm;
	return NULL;
}

/*
 * The VM ref names in workspace ws: ref is its id or its name.  No name
 * has the form of an id, so at most one VM answers.  A VM being destroyed
 * is gone already.
 */
struct vm *
vm_find_ref(const char *ref, int64_t ws)
{
	struct vm	*vm;

	vm = valid_id(ref, VM_ID_PREFIX) ? vm_find(ref, ws) :
	    vm_find_name(ref, ws);
	return vm != NULL && vm->state != VS_DESTROYING ? vm : NULL;
}

/* Its monitor is up, and the VM running or paused: QEMU answers. */
int
vm_live(const struct vm *vm)
{
	return vm->vmm_live && (vm->state == VS_RUNNING ||
	    vm->state == VS_PAUSED);
}

/*
 * A VM that no workspace owns and state.db holds no row of: a template,
 * or a warm clone no vm_create has taken yet.
 */
int
vm_unowned(const struct vm *vm)
{
	return vm->tpl || vm->warm;
}

json_t *
vm_json(const struct vm *vm)
{
	json_t	*j, *fwd;
	size_t	 i;

	j = json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:s, s:b, s:I, s:i, "
	    "s:s}",
	    "vm_id", vm->row.id,
	    "name", vm->row.name,
	    "state", vm_state_name(vm->state),
	    "image", vm->row.image,
	    "memory_mib", (int)vm->row.memory_mib,
	    "vcpus", (int)vm->row.vcpus,
	    "network", vm->row.network ? "on" : "off",
	    "display", vm->row.display ? 1 : 0,
	    "created", (json_int_t)vm->row.created,
	    "idle_seconds", (int)vm->row.idle_seconds,
	    "idle_mode", vm->row.idle_mode ? "pause" : "hibernate");
	if (j == NULL)
		fatalx("%s: json_pack", __func__);
	if (vm->row.reason[0] != '\0')
		json_object_set_new(j, "reason", json_string(vm->row.reason));
	if (vm->state == VS_HIBERNATED)
		json_object_set_new(j, "suspension", json_pack("{s:s, s:I, "
		    "s:s, s:I}", "mode", "hibernate", "since",
		    (json_int_t)vm->row.updated, "why", vm->row.reason,
		    "checkpoint_bytes", (json_int_t)vm->row.checkpoint_bytes));
	else if (vm->state == VS_PAUSED)
		json_object_set_new(j, "suspension", json_pack("{s:s, s:I, "
		    "s:s}", "mode", "pause", "since",
		    (json_int_t)vm->row.updated, "why", vm->row.reason));
	if (vm_own_disks(vm))
		vm_disks_json(vm, j);
	if (vm_attached(vm)) {
		json_object_set_new(j, "attached", json_true());
		json_object_set_new(j, "agent", json_boolean(vm->boot.agent));
	}
	if (vm->address[0] != '\0') {
		json_object_set_new(j, "address", json_string(vm->address));
		/* None inbound only: the guest has no route out. */
		if (vm->gateway[0] != '\0')
			json_object_set_new(j, "gateway",
			    json_string(vm->gateway));
		json_object_set_new(j, "mac", json_string(vm->mac));
		fwd = json_array();
		for (i = 0; i < vm->nfwd; i++)
			json_array_append_new(fwd, json_pack("{s:s, s:i, "
			    "s:i}", "host_address", VM_FORWARD_BIND,
			    "host_port", vm->fwd[i].host, "guest_port",
			    vm->fwd[i].guest));
		json_object_set_new(j, "port_forwards", fwd);
	}
	return j;
}

/*
 * Whether the VM boots its workspace's own disks: no mcvm agent, but
 * qemu-guest-agent's port, whose agent may answer (vm->boot.agent).
 */
int
vm_own_disks(const struct vm *vm)
{
	return vm->row.disks[0] != '\0';
}

/*
 * The row's disk names, each checked: their number, 0 for none (or a
 * list that is not one vm_create made).
 */
unsigned int
vm_disk_names(const struct vm_row *row,
    char names[VM_DISKS_MAX][OBJ_NAME_MAX + 1])
{
	const char	*p = row->disks, *comma;
	unsigned int	 n = 0;
	size_t		 len;

	while (*p != '\0') {
		comma = strchr(p, ',');
		len = comma != NULL ? (size_t)(comma - p) : strlen(p);
		if (n == VM_DISKS_MAX || len == 0 || len > OBJ_NAME_MAX)
			return 0;
		memcpy(names[n], p, len);
		names[n][len] = '\0';
		if (!valid_object_name(names[n]))
			return 0;
		n++;
		p += len;
		if (*p == ',' && *++p == '\0')
			return 0;
	}
	return n;
}

static void
vm_disks_json(const struct vm *vm, json_t *j)
{
	char		 names[VM_DISKS_MAX][OBJ_NAME_MAX + 1];
	unsigned int	 i, n = vm_disk_names(&vm->row, names);
	json_t		*a = json_array();
	static const char *const install[] = { "none", "pending", "done" };

	for (i = 0; i < n; i++)
		json_array_append_new(a, json_string(names[i]));
	json_object_set_new(j, "disks", a);
	json_object_set_new(j, "persistent", json_boolean(vm->row.persistent));
	json_object_set_new(j, "firmware", json_string(vm->row.firmware ==
	    FW_UEFI ? "uefi" : "bios"));
	json_object_set_new(j, "machine", json_string(vm->row.machine ==
	    MACH_PC ? "pc" : "q35"));
	json_object_set_new(j, "agent", json_boolean(vm->boot.agent));
	if (vm->row.iso[0] != '\0') {
		json_object_set_new(j, "iso", json_string(vm->row.iso));
		json_object_set_new(j, "install", json_string(
		    install[vm->row.install <= VM_INSTALL_DONE ?
		    vm->row.install : 0]));
	}
}

/*
 * Whether the VM's guest agent is qemu-guest-agent, which may answer or
 * not (vm->boot.agent): a VM of its own disks, or an attached one.
 */
int
vm_speaks_qga(const struct vm *vm)
{
	return vm_own_disks(vm) || vm_attached(vm);
}

/* The guest agent the VM's monitor speaks: vm_status names it. */
const char *
vm_agent_kind(const struct vm *vm)
{
	return vm_speaks_qga(vm) ? "qga" : "mcvm";
}

/* What the agent's tools answer on a VM whose agent does not answer. */
void
vm_no_agent_text(const struct vm *vm, char *buf, size_t len)
{
	if (vm_attached(vm)) {
		(void)snprintf(buf, len, "%s is attached and no "
		    "qemu-guest-agent answers in its guest: install and start "
		    "qemu-guest-agent in the guest, and have the operator "
		    "attach it with --qga, the socket of its QEMU's "
		    QGA_PORT_NAME " port; then vm_exec, the job tools and the "
		    "file tools work through it. What works meanwhile: the "
		    "display, the snapshot tools, vm_status, "
		    "vm_suspend (pause) and vm_resume", vm->row.id);
		return;
	}
	(void)snprintf(buf, len, "%s boots its own disks and no "
	    "qemu-guest-agent answers in its guest: install and start "
	    "qemu-guest-agent in the guest (its port " QGA_PORT_NAME " is "
	    "there), then vm_exec, the job tools and the file tools work "
	    "through it. What works meanwhile: the display (vm_screenshot, "
	    "vm_send_keys, vm_type_text, vm_click, vm_mouse_move), "
	    "vm_serial_read, the snapshot tools and the lifecycle tools "
	    "(vm_status, vm_stop, vm_start, vm_suspend, vm_resume, "
	    "vm_destroy)", vm->row.id);
}

/* A VM object for row, in the state the row records. */
struct vm *
vm_new(const struct vm_row *row)
{
	struct vm	*vm;
	int		 i;

	if ((vm = calloc(1, sizeof(*vm))) == NULL)
		fatal("%s", __func__);
	vm->row = *row;
	vm->state = vm_state_parse(row->state);
	for (i = 0; i <= STORE_FD_MAX; i++)
		vm->store_fds[i] = -1;
	for (i = 0; i <= NET_FD_TAP; i++)
		vm->net_fds[i] = -1;
	TAILQ_INIT(&vm->wakes);
	TAILQ_INSERT_TAIL(&vms, vm, entry);
	return vm;
}

void
vm_free(struct vm *vm)
{
	vm_timer_clear(vm);
	req_vm_gone(vm, 1, "the VM is gone");
	vm_close_store_fds(vm);
	vm_template_unuse(vm);
	vm_fork_gone(vm);
	vm_console_forget(vm);
	vm_wake_drop(vm);
	TAILQ_REMOVE(&vms, vm, entry);
	free(vm);
}

void
vm_random_id(const char *prefix, char *out, size_t len)
{
	uint8_t	 raw[ID_HEX_LEN / 2];
	char	 hex[ID_HEX_LEN + 1];

	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		fatal("getrandom");
	hex_encode(raw, sizeof(raw), hex);
	(void)snprintf(out, len, "%s%s", prefix, hex);
}

/* ---- start-up and reconciliation ---------------------------------------- */

static int
vm_load_row(const struct vm_row *row, void *arg)
{
	struct vm	*vm;
	char		 why[200];

	vm = vm_new(row);
	switch (vm->state) {
	case VS_STOPPED:
	case VS_FAILED:
	case VS_DESTROYING:
	case VS_HIBERNATED:	/* its checkpoint is whole: fsynced first */
		break;
	default:
		/* Its processes died with the old mcvmd, or are killed
		 * below: never guess that it is still fine. */
		(void)snprintf(why, sizeof(why), "mcvmd restarted while the "
		    "VM was %s (intent %s); its processes were stopped",
		    row->state, row->intent[0] != '\0' ? row->intent : "none");
		vm_fsm(vm, VE_FAIL, why);
		break;
	}
	return 0;
}

/*
 * Loads the VMs state.db knows, marks the interrupted ones failed, kills
 * whatever processes the previous mcvmd left in VM cgroups, and settles
 * receipts whose outcome is now unknown.
 */
void
vm_init(void)
{
	vm_spawn_init();
	if (state_vm_each(vm_load_row, NULL) == -1)
		fatalx("cannot load VMs from state.db");
	vm_spawn_leftovers();
	if (state_receipts_orphan() == -1)
		fatalx("cannot settle request receipts");
}

/* What mcvmctl status shows beyond the processes. */
void
vm_status_notes(void (*note)(const char *, const char *, void *), void *arg)
{
	note("vms", vm_cgroups_why(), arg);
	vm_store_notes(note, arg);
	note("network", vm_net_preflight(), arg);
	vm_template_notes(note, arg);
	vm_warm_notes(note, arg);
}

/* ---- deadlines ---------------------------------------------------------- */

/*
 * Once a second: every request to stored, netd or a monitor that is past
 * its deadline fails, so that no call waits for ever on a hung process,
 * and so does a vm_create that waited too long for its image; and the
 * VMs idle too long are suspended (idle.c).
 */
static void
vm_sweep(int fd, short event, void *arg)
{
	struct timeval	 tv = { 1, 0 };

	req_sweep();
	vm_idle_sweep();
	vm_warm_sweep();
	task_sweep();
	evtimer_add(&sweep_ev, &tv);
}

/* After event_init: the deadline sweep. */
void
vm_timers_init(void)
{
	struct timeval	 tv = { 1, 0 };

	evtimer_set(&sweep_ev, vm_sweep, NULL);
	evtimer_add(&sweep_ev, &tv);
}
