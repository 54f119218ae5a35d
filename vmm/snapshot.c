/*
 * Live snapshots (IMSG_VMM_SNAPSHOT): QEMU 7.2's snapshot-save,
 * snapshot-load and snapshot-delete jobs, on every qcow2 node that holds
 * them (qmp.h: a catalogue VM's overlay or a raw disk's state node, or
 * the disks of a VM from its own disks), with the VM's state saved into
 * one of them: the state node, else the overlay, else the first disk.
 * A job runs in QEMU while the monitor polls query-jobs; its error is
 * read back from there, and the job is dismissed however it ended.
 * The monitor runs one job at a time, always named QMP_JOB_ID.  Its
 * steps:
 *
 *	snap_start	query-jobs			-> snap_seen
 *	snap_seen	a job left concluded by an op that ran out of time:
 *			job-dismiss			-> snap_cleared
 *			none: snap_look
 *	snap_look	query-named-block-nodes		-> snap_looked
 *	snap_looked	refuse a save of a tag there, or a load of one not
 *			there (the VM runs on untouched: QEMU stops the
 *			vCPUs before it looks, and a failed load leaves
 *			them stopped); a delete of one not there is done,
 *			and says it found none.
 *			held (a raw disk's save or load): stop	-> snap_run
 *			else snap_run
 *	snap_run	snapshot-save/load/delete	-> snap_started
 *	snap_started	snap_poll in SNAP_POLL_MS, or at QEMU's next
 *			JOB_STATUS_CHANGE event
 *	snap_poll	query-jobs			-> snap_polled
 *	snap_polled	concluded: job-dismiss		-> snap_dismissed
 *			else snap_poll again
 *	snap_dismissed	failed: a load, query-status	-> snap_after_load
 *			saved: query-named-block-nodes	-> snap_measured
 *			otherwise done
 *
 * A held op leaves the vCPUs stopped once it is done: QEMU resumes after
 * a job only what was running when it began.  mcvmd then clones the
 * disk and sends CONT, or CONT alone when the op failed after the stop.
 *
 * Every reply is QEMU's and read as untrusted (qmp.c); the op's
 * deadline is VMM_SNAP_TIMEOUT_MS.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "qmp.h"
#include "validate.h"
#include "vmm.h"

#define SNAP_POLL_MS	50

_Static_assert(QMP_SNAP_TAG_MAX == OBJ_NAME_MAX + 1,
    "a snapshot name of QEMU's holds a tag");

struct snap {
	uint32_t	 op;			/* VMM_SNAP_* */
	int		 hold;
	char		 nodes[QMP_NODES_MAX][QMP_NODE_NAME_MAX];
	size_t		 nnodes;		/* nodes[0] has the state */
	char		 tag[QMP_SNAP_TAG_MAX];
	int		 failed;
	char		 error[QMP_TEXT_MAX];
};

static void	 snap_seen(struct vmm_req *, const struct qmp_msg *);
static void	 snap_cleared(struct vmm_req *, const struct qmp_msg *);
static void	 snap_look(struct vmm_req *);
static void	 snap_looked(struct vmm_req *, const struct qmp_msg *);
static void	 snap_run(struct vmm_req *, const struct qmp_msg *);
static void	 snap_started(struct vmm_req *, const struct qmp_msg *);
static void	 snap_poll(struct vmm_req *);
static void	 snap_polled(struct vmm_req *, const struct qmp_msg *);
static void	 snap_dismissed(struct vmm_req *, const struct qmp_msg *);
static void	 snap_after_load(struct vmm_req *, const struct qmp_msg *);
static void	 snap_measured(struct vmm_req *, const struct qmp_msg *);

static const char *
snap_verb(uint32_t op)
{
	switch (op) {
	case VMM_SNAP_SAVE:
		return "save";
	case VMM_SNAP_LOAD:
		return "load";
	default:
		return "delete";
	}
}

/*
 * The node of m that holds the VM's state: the state node, else the
 * overlay, else the first of a VM's own disks.  NULL if m has none.
 */
static const struct qmp_node *
snap_state_node(const struct qmp_msg *m)
{
	const struct qmp_node	*best = NULL;
	size_t			 i;
	int			 rank, best_rank = 0;

	for (i = 0; i < m->nnodes; i++) {
		if (strcmp(m->nodes[i].name, QMP_STATE_NODE) == 0)
			rank = 3;
		else if (strcmp(m->nodes[i].name, QMP_SNAP_NODE) == 0)
			rank = 2;
		else
			rank = 1;
		if (best == NULL || rank > best_rank || (rank == best_rank &&
		    strcmp(m->nodes[i].name, best->name) < 0)) {
			best = &m->nodes[i];
			best_rank = rank;
		}
	}
	return best;
}

/* The snapshot tag of node n (NULL: none), or NULL. */
static const struct qmp_snap *
snap_find(const struct qmp_node *n, const char *tag)
{
	size_t	 i;

	for (i = 0; n != NULL && i < n->nsnaps; i++)
		if (strcmp(n->snaps[i].name, tag) == 0)
			return &n->snaps[i];
	return NULL;
}

/* The answer: SNAPSHOT_DONE, whatever the op. */
static void
snap_answer(struct vmm_req *r, uint64_t vm_size, int found)
{
	struct msg_vmm_snapshot_done	 d;
	struct ibuf			*b;

	d.vm_size = vm_size > VMM_SNAP_SIZE_MAX ? VMM_SNAP_SIZE_MAX :
	    vm_size;
	d.found = found ? 1 : 0;
	b = vmm_answer_begin(r, IMSG_VMM_SNAPSHOT_DONE);
	msg_vmm_snapshot_done_put(b, &d);
	vmm_answer_end(r, b);
}

static void
snap_start(struct vmm_req *r, const union vmm_args *a)
{
	struct snap	*s;

	if ((s = calloc(1, sizeof(*s))) == NULL) {
		vmm_fail(r, VMM_ERR_QMP, ENOMEM, "out of memory");
		return;
	}
	s->op = a->snapshot.op;
	s->hold = a->snapshot.hold != 0 && s->op != VMM_SNAP_DELETE;
	/* The codec checked the tag; it fits. */
	(void)snprintf(s->tag, sizeof(s->tag), "%s", a->snapshot.tag);
	r->state = s;
	vmm_qmp_send(r, "query-jobs", NULL, snap_seen);
}

static void
snap_seen(struct vmm_req *r, const struct qmp_msg *m)
{
	if (!m->has_job) {
		snap_look(r);
		return;
	}
	if (strcmp(m->job_status, "concluded") != 0) {
		vmm_fail(r, VMM_ERR_BUSY, EBUSY, "a snapshot job of this VM "
		    "is still running: retry once it is done");
		return;
	}
	vmm_qmp_send(r, "job-dismiss", vmm_qmp_args("{s:s}", "id",
	    QMP_JOB_ID), snap_cleared);
}

static void
snap_cleared(struct vmm_req *r, const struct qmp_msg *m)
{
	snap_look(r);
}

static void
snap_look(struct vmm_req *r)
{
	vmm_qmp_send(r, "query-named-block-nodes", vmm_qmp_args("{s:b}",
	    "flat", 1), snap_looked);
}

static void
snap_looked(struct vmm_req *r, const struct qmp_msg *m)
{
	struct snap		*s = r->state;
	const struct qmp_node	*state;
	char			 msg[128];
	size_t			 i;
	int			 there;

	if ((state = snap_state_node(m)) == NULL) {
		vmm_fail(r, VMM_ERR_QMP, ENODEV, "QEMU lists no qcow2 node "
		    "to snapshot: mcvm snapshots the qcow2 nodes named "
		    QMP_SNAP_NODE ", " QMP_SNAP_NODE "0 to " QMP_SNAP_NODE "3 "
		    "or " QMP_STATE_NODE " (QEMU's node-name)");
		return;
	}
	(void)snprintf(s->nodes[0], sizeof(s->nodes[0]), "%s", state->name);
	s->nnodes = 1;
	for (i = 0; i < m->nnodes; i++)
		if (&m->nodes[i] != state)
			(void)snprintf(s->nodes[s->nnodes++],
			    sizeof(s->nodes[0]), "%s", m->nodes[i].name);
	there = snap_find(state, s->tag) != NULL;
	switch (s->op) {
	case VMM_SNAP_SAVE:
		if (there) {
			/* Saved by a request whose answer was lost. */
			(void)snprintf(msg, sizeof(msg), "the disk has a "
			    "snapshot %s already: vm_snapshot_delete it first",
			    s->tag);
			vmm_fail(r, VMM_ERR_QMP, EEXIST, msg);
			return;
		}
		break;
	case VMM_SNAP_LOAD:
		if (!there) {
			(void)snprintf(msg, sizeof(msg), "the disk has no "
			    "snapshot %s: the VM runs on as it was", s->tag);
			vmm_fail(r, VMM_ERR_QMP, ENOENT, msg);
			return;
		}
		break;
	default:
		if (!there) {
			snap_answer(r, 0, 0);
			return;
		}
		break;
	}
	log_info("snapshot %s: %s, state on %s of %zu node%s%s",
	    snap_verb(s->op), s->tag, s->nodes[0], s->nnodes,
	    s->nnodes == 1 ? "" : "s", s->hold ? ", held" : "");
	if (s->hold)
		vmm_qmp_send(r, "stop", NULL, snap_run);
	else
		snap_run(r, m);
}

static void
snap_run(struct vmm_req *r, const struct qmp_msg *m)
{
	struct snap	*s = r->state;
	json_t		*devices;
	size_t		 i;

	if ((devices = json_array()) == NULL)
		fatalx("%s: json_array", __func__);
	for (i = 0; i < s->nnodes; i++)
		if (json_array_append_new(devices,
		    json_string(s->nodes[i])) == -1)
			fatalx("%s: json", __func__);
	if (s->op == VMM_SNAP_DELETE)
		vmm_qmp_send(r, "snapshot-delete", vmm_qmp_args(
		    "{s:s, s:s, s:o}", "job-id", QMP_JOB_ID, "tag", s->tag,
		    "devices", devices), snap_started);
	else
		vmm_qmp_send(r, s->op == VMM_SNAP_SAVE ? "snapshot-save" :
		    "snapshot-load", vmm_qmp_args("{s:s, s:s, s:s, s:o}",
		    "job-id", QMP_JOB_ID, "tag", s->tag, "vmstate",
		    s->nodes[0], "devices", devices), snap_started);
}

static void
snap_started(struct vmm_req *r, const struct qmp_msg *m)
{
	vmm_req_poll(r, SNAP_POLL_MS, snap_poll);
}

static void
snap_poll(struct vmm_req *r)
{
	vmm_qmp_send(r, "query-jobs", NULL, snap_polled);
}

static void
snap_polled(struct vmm_req *r, const struct qmp_msg *m)
{
	struct snap	*s = r->state;

	if (!m->has_job) {
		vmm_fail(r, VMM_ERR_QMP, EBADMSG, "the snapshot job is gone "
		    "from query-jobs");
		return;
	}
	if (strcmp(m->job_status, "concluded") != 0) {
		vmm_req_poll(r, SNAP_POLL_MS, snap_poll);
		return;
	}
	if (m->has_job_error) {
		s->failed = 1;
		(void)snprintf(s->error, sizeof(s->error), "%s",
		    m->job_error);
	}
	vmm_qmp_send(r, "job-dismiss", vmm_qmp_args("{s:s}", "id",
	    QMP_JOB_ID), snap_dismissed);
}

static void
snap_dismissed(struct vmm_req *r, const struct qmp_msg *m)
{
	struct snap	*s = r->state;
	char		 msg[QMP_TEXT_MAX + 64];

	if (s->failed && s->op == VMM_SNAP_LOAD) {
		vmm_qmp_send(r, "query-status", NULL, snap_after_load);
		return;
	}
	if (s->failed) {
		(void)snprintf(msg, sizeof(msg), "QEMU's snapshot %s "
		    "failed: %s", snap_verb(s->op), s->error);
		vmm_fail(r, VMM_ERR_QMP, EIO, msg);
		return;
	}
	if (s->op == VMM_SNAP_SAVE) {
		vmm_qmp_send(r, "query-named-block-nodes",
		    vmm_qmp_args("{s:b}", "flat", 1), snap_measured);
		return;
	}
	log_info("snapshot %s done: %s", snap_verb(s->op), s->tag);
	snap_answer(r, 0, 1);
}

/* A failed load may have left the vCPUs stopped: say so. */
static void
snap_after_load(struct vmm_req *r, const struct qmp_msg *m)
{
	struct snap	*s = r->state;
	char		 msg[QMP_TEXT_MAX + 96];

	(void)snprintf(msg, sizeof(msg), "QEMU's snapshot load failed: %s%s",
	    s->error, m->has_running && !m->running ? " (QEMU left the VM "
	    "paused)" : "");
	vmm_fail(r, VMM_ERR_QMP, EIO, msg);
}

static void
snap_measured(struct vmm_req *r, const struct qmp_msg *m)
{
	struct snap		*s = r->state;
	const struct qmp_snap	*sn;

	if ((sn = snap_find(snap_state_node(m), s->tag)) == NULL) {
		vmm_fail(r, VMM_ERR_QMP, EBADMSG, "the saved snapshot is not "
		    "listed on the disk");
		return;
	}
	log_info("snapshot saved: %s, %llu bytes of state", s->tag,
	    (unsigned long long)sn->vm_size);
	snap_answer(r, sn->vm_size, 1);
}

static void
snap_end(struct vmm_req *r)
{
	free(r->state);
	r->state = NULL;
}

VMM_GET_ARGS(snapshot)
VMM_OP(snapshot, IMSG_VMM_SNAPSHOT, "snapshot", VMM_CHAN_QMP,
    VMM_OP_QMP_UP | VMM_OP_ONE, VMM_SNAP_TIMEOUT_MS, get_snapshot,
    snap_start, snap_end);
