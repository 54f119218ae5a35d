/*
 * state.db: mcvmd's durable state.  Only mcvmd opens it.  WAL journal,
 * synchronous=FULL: a transition that returned has reached the disk.
 * Request receipts and job rows are the exception (state_lazy_begin).
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "log.h"
#include "mcvmd.h"
#include "schema.h"

#define STATE_DB		"state.db"
#define STATE_BUSY_TIMEOUT_MS	5000
#define STATE_RECEIPTS_MAX	4096	/* kept per workspace */
#define STATE_STMTS_MAX		48	/* statements kept compiled */

static sqlite3	*db;

/*
 * Statements compiled once and kept: a vm_exec's path runs a dozen, and
 * compiling them was most of mcvmd's time in SQLite.  state_prepare
 * hands one out (a new one while that is in use) and state_finish gives
 * it back, reset and with its bindings cleared, so that it holds no
 * transaction open.  PRAGMAs are never kept: SQLite may run them when
 * they are compiled.
 */
static struct {
	char		*sql;
	sqlite3_stmt	*st;
	int		 busy;
} stmts[STATE_STMTS_MAX];

int
state_open(const char *statedir)
{
	char	 path[PATH_MAX];
	mode_t	 old;
	int	 n, rc;

	n = snprintf(path, sizeof(path), "%s/%s", statedir, STATE_DB);
	if (n < 0 || (size_t)n >= sizeof(path)) {
		log_warnx("state: path too long");
		return -1;
	}
	old = umask(077);
	rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW |
	    SQLITE_OPEN_FULLMUTEX, NULL);
	umask(old);
	if (rc != SQLITE_OK) {
		log_warnx("state: %s: %s", path, db != NULL ?
		    sqlite3_errmsg(db) : sqlite3_errstr(rc));
		state_close();
		return -1;
	}
	(void)sqlite3_busy_timeout(db, STATE_BUSY_TIMEOUT_MS);
	if (sqlite3_exec(db, "PRAGMA journal_mode = WAL;"
	    "PRAGMA synchronous = FULL;"
	    "PRAGMA foreign_keys = ON;"
	    "PRAGMA secure_delete = ON;", NULL, NULL, NULL) != SQLITE_OK ||
	    schema_migrate(db, SCHEMA_VERSION) == -1) {
		log_warnx("state: %s: %s", path, sqlite3_errmsg(db));
		state_close();
		return -1;
	}
	return 0;
}

void
state_close(void)
{
	size_t	 i;

	for (i = 0; i < STATE_STMTS_MAX; i++) {
		if (stmts[i].st != NULL)
			(void)sqlite3_finalize(stmts[i].st);
		free(stmts[i].sql);
		stmts[i].sql = NULL;
		stmts[i].st = NULL;
		stmts[i].busy = 0;
	}
	if (db != NULL)
		(void)sqlite3_close(db);
	db = NULL;
}

/* For the stores beside this one (task.c) that keep their rows here. */
sqlite3 *
state_db(void)
{
	return db;
}

int
state_schema_version(void)
{
	return schema_version(db);
}

static sqlite3_stmt *
state_prepare(const char *sql)
{
	sqlite3_stmt	*st;
	size_t		 i, free_at = STATE_STMTS_MAX;

	for (i = 0; i < STATE_STMTS_MAX; i++) {
		if (stmts[i].sql == NULL) {
			if (free_at == STATE_STMTS_MAX)
				free_at = i;
			continue;
		}
		if (!stmts[i].busy && strcmp(stmts[i].sql, sql) == 0) {
			stmts[i].busy = 1;
			return stmts[i].st;
		}
	}
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		log_warnx("state: %s", sqlite3_errmsg(db));
		return NULL;
	}
	if (free_at < STATE_STMTS_MAX && strncmp(sql, "PRAGMA", 6) != 0 &&
	    (stmts[free_at].sql = strdup(sql)) != NULL) {
		stmts[free_at].st = st;
		stmts[free_at].busy = 1;
	}
	return st;
}

/* A statement of state_prepare's, done with: kept, or finalized. */
static void
state_finish(sqlite3_stmt *st)
{
	size_t	 i;

	for (i = 0; i < STATE_STMTS_MAX; i++)
		if (stmts[i].st == st) {
			(void)sqlite3_reset(st);
			(void)sqlite3_clear_bindings(st);
			stmts[i].busy = 0;
			return;
		}
	(void)sqlite3_finalize(st);
}

/* One statement without parameters or rows (a PRAGMA compiled afresh). */
static int
state_exec(const char *sql)
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((st = state_prepare(sql)) == NULL)
		return -1;
	rc = sqlite3_step(st);
	state_finish(st);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
		log_warnx("state: %s", sqlite3_errmsg(db));
		return -1;
	}
	return 0;
}

/* Every write but the lazy transactions' waits for the disk. */
static void
state_full(void)
{
	if (state_exec("PRAGMA synchronous = FULL;") == -1)
		fatalx("state: synchronous=FULL cannot be restored");
}

/*
 * A transaction of receipts and job rows, on every vm_exec's path, does
 * not wait for the disk (synchronous=NORMAL).  In WAL mode it outlives a
 * crash of mcvmd, which is what a receipt guards against (a retry finds
 * it), and the next FULL commit takes it to the disk with its own.  Only
 * a crash of the host can lose the last of them, and that ends every VM
 * and job they name.  state_lazy_end commits or rolls back, and puts
 * FULL back for everything else.
 */
static int
state_lazy_begin(void)
{
	if (state_exec("PRAGMA synchronous = NORMAL;") == -1)
		return -1;
	if (state_exec("BEGIN IMMEDIATE;") == 0)
		return 0;
	state_full();
	return -1;
}

static int
state_lazy_end(int commit)
{
	if (commit && state_exec("COMMIT;") == -1)
		commit = 0;
	if (!commit)
		(void)state_exec("ROLLBACK;");
	state_full();
	return commit ? 0 : -1;
}

/* One statement with text and integer parameters, no result rows. */
static int
state_run(const char *sql, const char *t1, int64_t i1, int64_t i2)
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((st = state_prepare(sql)) == NULL)
		return -1;
	if (t1 != NULL)
		(void)sqlite3_bind_text(st, 1, t1, -1, SQLITE_STATIC);
	(void)sqlite3_bind_int64(st, 2, i1);
	(void)sqlite3_bind_int64(st, 3, i2);
	rc = sqlite3_step(st);
	state_finish(st);
	if (rc != SQLITE_DONE) {
		log_warnx("state: %s", sqlite3_errmsg(db));
		return -1;
	}
	return 0;
}

/* Never records a secret: callers pass names, ids and counts. */
int
state_audit(const char *actor, const char *action, const char *detail)
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((st = state_prepare("INSERT INTO audit (time, actor, action, "
	    "detail) VALUES (?1, ?2, ?3, ?4)")) == NULL)
		return -1;
	(void)sqlite3_bind_int64(st, 1, (int64_t)time(NULL));
	(void)sqlite3_bind_text(st, 2, actor, -1, SQLITE_STATIC);
	(void)sqlite3_bind_text(st, 3, action, -1, SQLITE_STATIC);
	(void)sqlite3_bind_text(st, 4, detail, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	state_finish(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

/*
 * Resolves a token hash to its workspace.  Returns 0 with out->status set,
 * or -1 on a database error.
 */
int
state_token_auth(const uint8_t hash[TOKEN_HASH_LEN], struct ws_auth *out)
{
	sqlite3_stmt	*st;
	int64_t		 now = (int64_t)time(NULL), expires;
	int		 rc;

	memset(out, 0, sizeof(*out));
	out->status = AUTH_UNKNOWN;
	if ((st = state_prepare("SELECT t.expires, t.revoked, w.id, w.name, "
	    "w.flags, w.revoked FROM tokens t JOIN workspaces w "
	    "ON w.id = t.workspace_id WHERE t.hash = ?1")) == NULL)
		return -1;
	(void)sqlite3_bind_blob(st, 1, hash, TOKEN_HASH_LEN, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		expires = sqlite3_column_int64(st, 0);
		if (sqlite3_column_int64(st, 1) != 0 ||
		    sqlite3_column_int64(st, 5) != 0)
			out->status = AUTH_REVOKED;
		else if (expires != 0 && expires <= now)
			out->status = AUTH_EXPIRED;
		else
			out->status = AUTH_OK;
		out->expires = expires;
		out->id = sqlite3_column_int64(st, 2);
		(void)snprintf(out->name, sizeof(out->name), "%s",
		    (const char *)sqlite3_column_text(st, 3));
		out->flags = (uint32_t)sqlite3_column_int64(st, 4);
		rc = SQLITE_DONE;
	}
	state_finish(st);
	if (rc != SQLITE_DONE) {
		log_warnx("state: %s", sqlite3_errmsg(db));
		return -1;
	}
	return 0;
}

/* Looks a workspace up by name: 1 found, 0 not found, -1 error. */
static int
state_ws_find(const char *name, int64_t *id, uint32_t *flags,
    int64_t *revoked)
{
	sqlite3_stmt	*st;
	int		 rc, found = 0;

	if ((st = state_prepare("SELECT id, flags, revoked FROM workspaces "
	    "WHERE name = ?1")) == NULL)
		return -1;
	(void)sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		*id = sqlite3_column_int64(st, 0);
		*flags = (uint32_t)sqlite3_column_int64(st, 1);
		*revoked = sqlite3_column_int64(st, 2);
		found = 1;
		rc = SQLITE_DONE;
	}
	state_finish(st);
	return rc == SQLITE_DONE ? found : -1;
}

/*
 * A workspace's id by name: 1 (revoked set if it is), 0 none, -1 error.
 */
int
state_ws_id(const char *name, int64_t *id, int *revoked)
{
	int64_t		 when = 0;
	uint32_t	 flags;
	int		 found;

	if ((found = state_ws_find(name, id, &flags, &when)) == 1)
		*revoked = when != 0;
	return found;
}

/*
 * Records a new token for a workspace, creating the workspace with flags
 * if it is new.  An existing workspace keeps its policy; with rotate, its
 * live tokens are revoked in the same transaction.  A revoked workspace
 * gets no new token.  msg receives what to tell the operator.
 */
int
state_token_issue(const char *ws, const uint8_t hash[TOKEN_HASH_LEN],
    uint64_t ttl, uint32_t flags, int rotate, uid_t actor, char *msg,
    size_t msglen)
{
	sqlite3_stmt	*st;
	char		 who[32], detail[160];
	int64_t		 now = (int64_t)time(NULL), id = 0, revoked = 0;
	uint32_t	 have = 0;
	int		 found, rc;

	if (state_exec("BEGIN IMMEDIATE;") == -1)
		return -1;
	if ((found = state_ws_find(ws, &id, &have, &revoked)) == -1)
		goto fail;
	if (found && revoked != 0) {
		(void)snprintf(msg, msglen, "workspace %s is revoked", ws);
		(void)state_exec("ROLLBACK;");
		return 1;
	}
	if (!found) {
		if (state_run("INSERT INTO workspaces (name, flags, created) "
		    "VALUES (?1, ?2, ?3)", ws, flags, now) == -1)
			goto fail;
		id = sqlite3_last_insert_rowid(db);
		have = flags;
	} else if (rotate && state_run("UPDATE tokens SET revoked = ?3 "
	    "WHERE workspace_id = ?2 AND revoked = 0", NULL, id, now) == -1)
		goto fail;
	if ((st = state_prepare("INSERT INTO tokens (workspace_id, hash, "
	    "created, expires) VALUES (?1, ?2, ?3, ?4)")) == NULL)
		goto fail;
	(void)sqlite3_bind_int64(st, 1, id);
	(void)sqlite3_bind_blob(st, 2, hash, TOKEN_HASH_LEN, SQLITE_STATIC);
	(void)sqlite3_bind_int64(st, 3, now);
	(void)sqlite3_bind_int64(st, 4, ttl > 0 ? now + (int64_t)ttl : 0);
	rc = sqlite3_step(st);
	state_finish(st);
	if (rc != SQLITE_DONE) {
		log_warnx("state: %s", sqlite3_errmsg(db));
		goto fail;
	}
	(void)snprintf(who, sizeof(who), "uid %u", (unsigned int)actor);
	(void)snprintf(detail, sizeof(detail), "workspace %s%s%s", ws,
	    found ? "" : " (new)", ttl > 0 ? " with expiry" : "");
	if (state_audit(who, rotate ? "token-rotate" : "token-issue",
	    detail) == -1 || state_exec("COMMIT;") == -1)
		goto fail;
	(void)snprintf(msg, msglen, "%s workspace %s; network %s%s",
	    found ? (rotate ? "rotated the token of" : "new token for") :
	    "created", ws, (have & WS_ALLOW_NETWORK) ? "allowed" : "off",
	    found && !rotate ? "; older tokens stay valid" : "");
	if (found && (flags & ~have) != 0)
		(void)snprintf(msg + strlen(msg), msglen - strlen(msg),
		    "; the workspace keeps its policy: use a new workspace "
		    "for wider permissions");
	return 0;
fail:
	(void)state_exec("ROLLBACK;");
	return -1;
}

/* Revokes a workspace and every token of it.  1 = refused (msg says). */
int
state_ws_revoke(const char *ws, uid_t actor, char *msg, size_t msglen)
{
	char		 who[32], detail[128];
	int64_t		 id = 0, revoked = 0, now = (int64_t)time(NULL);
	uint32_t	 flags;
	int		 found;

	if (state_exec("BEGIN IMMEDIATE;") == -1)
		return -1;
	if ((found = state_ws_find(ws, &id, &flags, &revoked)) == -1)
		goto fail;
	if (!found || revoked != 0) {
		(void)snprintf(msg, msglen, "workspace %s %s", ws,
		    found ? "is already revoked" : "does not exist");
		(void)state_exec("ROLLBACK;");
		return 1;
	}
	(void)snprintf(who, sizeof(who), "uid %u", (unsigned int)actor);
	(void)snprintf(detail, sizeof(detail), "workspace %s", ws);
	if (state_run("UPDATE workspaces SET revoked = ?3 WHERE id = ?2",
	    NULL, id, now) == -1 ||
	    state_run("UPDATE tokens SET revoked = ?3 WHERE workspace_id = ?2 "
	    "AND revoked = 0", NULL, id, now) == -1 ||
	    state_audit(who, "workspace-revoke", detail) == -1 ||
	    state_exec("COMMIT;") == -1)
		goto fail;
	(void)snprintf(msg, msglen, "revoked workspace %s and its tokens", ws);
	return 0;
fail:
	(void)state_exec("ROLLBACK;");
	return -1;
}

int
state_ws_list(int (*cb)(const struct ws_entry *, void *), void *arg)
{
	sqlite3_stmt	*st;
	struct ws_entry	 e;
	int64_t		 now = (int64_t)time(NULL);
	int		 rc;

	if ((st = state_prepare("SELECT w.name, w.flags, w.created, "
	    "w.revoked, (SELECT count(*) FROM tokens t WHERE "
	    "t.workspace_id = w.id AND t.revoked = 0 AND (t.expires = 0 OR "
	    "t.expires > ?1)), (SELECT min(t.expires) FROM tokens t WHERE "
	    "t.workspace_id = w.id AND t.revoked = 0 AND t.expires > ?1), "
	    "w.id FROM workspaces w ORDER BY w.name")) == NULL)
		return -1;
	(void)sqlite3_bind_int64(st, 1, now);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		memset(&e, 0, sizeof(e));
		(void)snprintf(e.name, sizeof(e.name), "%s",
		    (const char *)sqlite3_column_text(st, 0));
		e.flags = (uint32_t)sqlite3_column_int64(st, 1);
		e.created = sqlite3_column_int64(st, 2);
		e.revoked = sqlite3_column_int64(st, 3);
		e.live_tokens = (uint32_t)sqlite3_column_int64(st, 4);
		e.next_expiry = sqlite3_column_int64(st, 5);
		e.id = sqlite3_column_int64(st, 6);
		if (cb(&e, arg) == -1) {
			rc = SQLITE_DONE;
			break;
		}
	}
	state_finish(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

/* The limits set-quota set for workspace ws: 0 where it set none. */
int
state_ws_quota(int64_t ws, struct limits *q)
{
	sqlite3_stmt	*st;
	int		 rc;

	memset(q, 0, sizeof(*q));
	if ((st = state_prepare("SELECT max_vms, max_memory, max_vcpus, "
	    "max_storage FROM workspaces WHERE id = ?1")) == NULL)
		return -1;
	(void)sqlite3_bind_int64(st, 1, ws);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		q->max_vms = (uint32_t)sqlite3_column_int64(st, 0);
		q->max_memory = (uint64_t)sqlite3_column_int64(st, 1);
		q->max_vcpus = (uint32_t)sqlite3_column_int64(st, 2);
		q->max_storage = (uint64_t)sqlite3_column_int64(st, 3);
		rc = SQLITE_DONE;
	}
	state_finish(st);
	if (rc != SQLITE_DONE) {
		log_warnx("state: %s", sqlite3_errmsg(db));
		return -1;
	}
	return 0;
}

/*
 * Sets the limits of workspace ws that set names (QUOTA_*) to q's, 0
 * giving one back to the config.  The caller checked the values.
 * 1 = refused (msg says why).
 */
int
state_ws_quota_set(const char *ws, uint32_t set, const struct limits *q,
    uid_t actor, char *msg, size_t msglen)
{
	static const struct {
		uint32_t	 bit;
		const char	*name;
		const char	*sql;
	} cols[] = {
		{ QUOTA_VMS, "vms", "UPDATE workspaces SET max_vms = ?3 "
		    "WHERE id = ?2" },
		{ QUOTA_MEMORY, "memory", "UPDATE workspaces SET "
		    "max_memory = ?3 WHERE id = ?2" },
		{ QUOTA_VCPUS, "vcpus", "UPDATE workspaces SET max_vcpus = ?3 "
		    "WHERE id = ?2" },
		{ QUOTA_STORAGE, "storage", "UPDATE workspaces SET "
		    "max_storage = ?3 WHERE id = ?2" },
	};
	const int64_t	 val[] = { q->max_vms, (int64_t)q->max_memory,
			    q->max_vcpus, (int64_t)q->max_storage };
	char		 who[32], detail[WS_NAME_MAX + 160];
	int64_t		 id = 0, revoked = 0;
	uint32_t	 flags;
	size_t		 i, len;
	int		 found;

	if (state_exec("BEGIN IMMEDIATE;") == -1)
		return -1;
	if ((found = state_ws_find(ws, &id, &flags, &revoked)) == -1)
		goto fail;
	if (!found) {
		(void)snprintf(msg, msglen, "workspace %s does not exist: "
		    "see list-workspaces", ws);
		(void)state_exec("ROLLBACK;");
		return 1;
	}
	(void)snprintf(detail, sizeof(detail), "workspace %s (0: the "
	    "config's):", ws);
	for (i = 0; i < sizeof(cols) / sizeof(cols[0]); i++) {
		if ((set & cols[i].bit) == 0)
			continue;
		if (state_run(cols[i].sql, NULL, id, val[i]) == -1)
			goto fail;
		len = strlen(detail);
		(void)snprintf(detail + len, sizeof(detail) - len, " %s %lld",
		    cols[i].name, (long long)val[i]);
	}
	(void)snprintf(who, sizeof(who), "uid %u", (unsigned int)actor);
	if (state_audit(who, "quota-set", detail) == -1 ||
	    state_exec("COMMIT;") == -1)
		goto fail;
	(void)snprintf(msg, msglen, "set the quota of workspace %s; it "
	    "applies from its next vm_create", ws);
	return 0;
fail:
	(void)state_exec("ROLLBACK;");
	return -1;
}

/*
 * VMs.  A row is written before each action (the intent) and updated when
 * it is done, so that a crash leaves a visible marker.
 */
static void
state_vm_row(sqlite3_stmt *st, struct vm_row *v)
{
	memset(v, 0, sizeof(*v));
	(void)snprintf(v->id, sizeof(v->id), "%s",
	    (const char *)sqlite3_column_text(st, 0));
	v->ws_id = sqlite3_column_int64(st, 1);
	(void)snprintf(v->name, sizeof(v->name), "%s",
	    (const char *)sqlite3_column_text(st, 2));
	(void)snprintf(v->state, sizeof(v->state), "%s",
	    (const char *)sqlite3_column_text(st, 3));
	(void)snprintf(v->intent, sizeof(v->intent), "%s",
	    (const char *)sqlite3_column_text(st, 4));
	v->slot = (uint32_t)sqlite3_column_int64(st, 5);
	v->uid = (uint32_t)sqlite3_column_int64(st, 6);
	v->memory_mib = (uint32_t)sqlite3_column_int64(st, 7);
	v->vcpus = (uint32_t)sqlite3_column_int64(st, 8);
	v->network = (uint32_t)sqlite3_column_int64(st, 9);
	(void)snprintf(v->image, sizeof(v->image), "%s",
	    (const char *)sqlite3_column_text(st, 10));
	v->created = sqlite3_column_int64(st, 11);
	(void)snprintf(v->reason, sizeof(v->reason), "%s",
	    (const char *)sqlite3_column_text(st, 12));
	v->idle_seconds = (uint32_t)sqlite3_column_int64(st, 13);
	v->idle_mode = (uint32_t)sqlite3_column_int64(st, 14);
	v->disk_bytes = (uint64_t)sqlite3_column_int64(st, 15);
	(void)snprintf(v->ws, sizeof(v->ws), "%s",
	    (const char *)sqlite3_column_text(st, 16));
	v->display = (uint32_t)sqlite3_column_int64(st, 17);
	(void)snprintf(v->disks, sizeof(v->disks), "%s",
	    (const char *)sqlite3_column_text(st, 18));
	(void)snprintf(v->iso, sizeof(v->iso), "%s",
	    (const char *)sqlite3_column_text(st, 19));
	v->firmware = (uint32_t)sqlite3_column_int64(st, 20);
	v->machine = (uint32_t)sqlite3_column_int64(st, 21);
	v->persistent = (uint32_t)sqlite3_column_int64(st, 22);
	v->install = (uint32_t)sqlite3_column_int64(st, 23);
	v->updated = sqlite3_column_int64(st, 24);
	v->checkpoint_bytes = (uint64_t)sqlite3_column_int64(st, 25);
	(void)snprintf(v->checkpoint_profile, sizeof(v->checkpoint_profile),
	    "%s", (const char *)sqlite3_column_text(st, 26));
	(void)snprintf(v->attach_qmp, sizeof(v->attach_qmp), "%s",
	    (const char *)sqlite3_column_text(st, 27));
	(void)snprintf(v->attach_qga, sizeof(v->attach_qga), "%s",
	    (const char *)sqlite3_column_text(st, 28));
	v->attach_pid = (uint32_t)sqlite3_column_int64(st, 29);
}

#define VM_COLUMNS	"v.id, v.workspace_id, v.name, v.state, v.intent, "  \
	"v.slot, v.uid, v.memory_mib, v.vcpus, v.network, v.image, "	      \
	"v.created, v.reason, v.idle_seconds, v.idle_mode, v.disk_bytes, "    \
	"w.name, v.display, v.disks, v.iso, v.firmware, v.machine, "	      \
	"v.persistent, v.install, v.updated, v.checkpoint_bytes, "	      \
	"v.checkpoint_profile, v.attach_qmp, v.attach_qga, v.attach_pid "    \
	"FROM vms v JOIN workspaces w ON w.id = v.workspace_id"

int
state_vm_insert(const struct vm_row *v)
{
	sqlite3_stmt	*st;
	int64_t		 now = (int64_t)time(NULL);
	int		 rc;

	if ((st = state_prepare("INSERT INTO vms (id, workspace_id, name, "
	    "state, intent, slot, uid, memory_mib, vcpus, network, image, "
	    "created, updated, idle_seconds, idle_mode, disk_bytes, display, "
	    "disks, iso, firmware, machine, persistent, install, attach_qmp, "
	    "attach_qga, attach_pid) "
	    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12, "
	    "?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, "
	    "?25)")) == NULL)
		return -1;
	(void)sqlite3_bind_text(st, 1, v->id, -1, SQLITE_STATIC);
	(void)sqlite3_bind_int64(st, 2, v->ws_id);
	(void)sqlite3_bind_text(st, 3, v->name, -1, SQLITE_STATIC);
	(void)sqlite3_bind_text(st, 4, v->state, -1, SQLITE_STATIC);
	(void)sqlite3_bind_text(st, 5, v->intent, -1, SQLITE_STATIC);
	(void)sqlite3_bind_int64(st, 6, v->slot);
	(void)sqlite3_bind_int64(st, 7, v->uid);
	(void)sqlite3_bind_int64(st, 8, v->memory_mib);
	(void)sqlite3_bind_int64(st, 9, v->vcpus);
	(void)sqlite3_bind_int64(st, 10, v->network);
	(void)sqlite3_bind_text(st, 11, v->image, -1, SQLITE_STATIC);
	(void)sqlite3_bind_int64(st, 12, now);
	(void)sqlite3_bind_int64(st, 13, v->idle_seconds);
	(void)sqlite3_bind_int64(st, 14, v->idle_mode);
	(void)sqlite3_bind_int64(st, 15, (int64_t)v->disk_bytes);
	(void)sqlite3_bind_int64(st, 16, v->display);
	(void)sqlite3_bind_text(st, 17, v->disks, -1, SQLITE_STATIC);
	(void)sqlite3_bind_text(st, 18, v->iso, -1, SQLITE_STATIC);
	(void)sqlite3_bind_int64(st, 19, v->firmware);
	(void)sqlite3_bind_int64(st, 20, v->machine);
	(void)sqlite3_bind_int64(st, 21, v->persistent);
	(void)sqlite3_bind_int64(st, 22, v->install);
	(void)sqlite3_bind_text(st, 23, v->attach_qmp, -1, SQLITE_STATIC);
	(void)sqlite3_bind_text(st, 24, v->attach_qga, -1, SQLITE_STATIC);
	(void)sqlite3_bind_int64(st, 25, v->attach_pid);
	rc = sqlite3_step(st);
	state_finish(st);
	if (rc != SQLITE_DONE) {
		log_warnx("state: vm insert: %s", sqlite3_errmsg(db));
		return -1;
	}
	return 0;
}

/* Records a state (and the intent in progress, "" when none). */
int
state_vm_set(const char *id, const char *state, const char *intent,
    const char *reason)
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((st = state_prepare("UPDATE vms SET state = ?2, intent = ?3, "
	    "reason = coalesce(?4, reason), updated = ?5 WHERE id = ?1")) ==
	    NULL)
		return -1;
	(void)sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	(void)sqlite3_bind_text(st, 2, state, -1, SQLITE_STATIC);
	(void)sqlite3_bind_text(st, 3, intent, -1, SQLITE_STATIC);
	if (reason != NULL)
		(void)sqlite3_bind_text(st, 4, reason, -1, SQLITE_STATIC);
	(void)sqlite3_bind_int64(st, 5, (int64_t)time(NULL));
	rc = sqlite3_step(st);
	state_finish(st);
	if (rc != SQLITE_DONE) {
		log_warnx("state: vm %s: %s", id, sqlite3_errmsg(db));
		return -1;
	}
	return 0;
}

/* A hibernated VM's checkpoint: its bytes and profile, 0 and "" once
 * it is gone. */
int
state_vm_checkpoint(const char *id, uint64_t bytes, const char *profile)
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((st = state_prepare("UPDATE vms SET checkpoint_bytes = ?2, "
	    "checkpoint_profile = ?3 WHERE id = ?1")) == NULL)
		return -1;
	(void)sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	(void)sqlite3_bind_int64(st, 2, (int64_t)bytes);
	(void)sqlite3_bind_text(st, 3, profile, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	state_finish(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

/* The VM booted its install CD once: from now on its disks alone. */
int
state_vm_install_done(const char *id)
{
	return state_run("UPDATE vms SET install = 2 WHERE id = ?1 AND "
	    "install = 1", id, 0, 0);
}

/* An attached VM's QEMU, as its listener proved to be. */
int
state_vm_attach_pid(const char *id, uint32_t pid)
{
	return state_run("UPDATE vms SET attach_pid = ?2 WHERE id = ?1", id,
	    pid, 0);
}

/* What a VM's disks count against the storage quota. */
int
state_vm_disk_bytes_set(const char *id, uint64_t bytes)
{
	return state_run("UPDATE vms SET disk_bytes = ?2 WHERE id = ?1", id,
	    (int64_t)bytes, 0);
}

/* Removes a VM with its jobs and receipts; the audit log stays. */
int
state_vm_delete(const char *id)
{
	if (state_exec("BEGIN IMMEDIATE;") == -1)
		return -1;
	if (state_run("DELETE FROM jobs WHERE vm_id = ?1", id, 0, 0) == -1 ||
	    state_run("DELETE FROM vm_snapshots WHERE vm_id = ?1", id, 0,
	    0) == -1 ||
	    state_run("DELETE FROM receipts WHERE vm_id = ?1", id, 0, 0) ==
	    -1 || state_run("DELETE FROM vms WHERE id = ?1", id, 0, 0) == -1 ||
	    state_exec("COMMIT;") == -1) {
		(void)state_exec("ROLLBACK;");
		return -1;
	}
	return 0;
}

/*
 * How the audit log records a VM's destruction: its id with its
 * workspace's, so that only that workspace learns it was destroyed.
 */
void
state_vm_destroyed_detail(const char *id, int64_t ws, char *buf,
    size_t size)
{
	(void)snprintf(buf, size, "%s workspace %lld", id, (long long)ws);
}

/* Whether workspace ws destroyed VM id: 1 yes, 0 no, -1 error. */
int
state_vm_destroyed(const char *id, int64_t ws)
{
	sqlite3_stmt	*st;
	char		 detail[ID_MAX + 64];
	int		 rc, found = 0;

	state_vm_destroyed_detail(id, ws, detail, sizeof(detail));
	if ((st = state_prepare("SELECT 1 FROM audit WHERE action = "
	    "'vm-destroy' AND detail = ?1 LIMIT 1")) == NULL)
		return -1;
	(void)sqlite3_bind_text(st, 1, detail, -1, SQLITE_STATIC);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		found = 1;
		rc = SQLITE_DONE;
	}
	state_finish(st);
	return rc == SQLITE_DONE ? found : -1;
}

int
state_vm_each(int (*cb)(const struct vm_row *, void *), void *arg)
{
	sqlite3_stmt	*st;
	struct vm_row	 v;
	int		 rc;

	if ((st = state_prepare("SELECT " VM_COLUMNS " ORDER BY v.created"))
	    == NULL)
		return -1;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		state_vm_row(st, &v);
		if (cb(&v, arg) == -1) {
			rc = SQLITE_DONE;
			break;
		}
	}
	state_finish(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

/* Jobs: the guest's job numbers behind the ids mcvm hands out. */
static int
state_job_insert(const char *id, const char *vm, uint32_t guest_job,
    const char *command)
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((st = state_prepare("INSERT INTO jobs (id, vm_id, guest_job, "
	    "command, created) VALUES (?1, ?2, ?3, ?4, ?5)")) == NULL)
		return -1;
	(void)sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	(void)sqlite3_bind_text(st, 2, vm, -1, SQLITE_STATIC);
	(void)sqlite3_bind_int64(st, 3, guest_job);
	(void)sqlite3_bind_text(st, 4, command, -1, SQLITE_STATIC);
	(void)sqlite3_bind_int64(st, 5, (int64_t)time(NULL));
	rc = sqlite3_step(st);
	state_finish(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

/* A job started: its row, and its request's receipt settled with result. */
int
state_job_start(const char *id, const char *vm, uint32_t guest_job,
    const char *command, int64_t ws, const char *rid, const char *result)
{
	int	 ok;

	if (state_lazy_begin() == -1)
		return -1;
	/* The guest keeps fewer jobs than this: older rows go. */
	ok = state_job_insert(id, vm, guest_job, command) == 0 &&
	    state_run("DELETE FROM jobs WHERE vm_id = ?1 AND id NOT IN "
	    "(SELECT id FROM jobs WHERE vm_id = ?1 ORDER BY created DESC, "
	    "guest_job DESC LIMIT ?2)", vm, STATE_JOBS_MAX, 0) == 0 &&
	    state_receipt_end(ws, rid, 1, vm, result) == 0;
	return state_lazy_end(ok);
}

/* 1 found, 0 not (or not this VM's), -1 error. */
int
state_job_lookup(const char *id, const char *vm, uint32_t *guest_job)
{
	sqlite3_stmt	*st;
	int		 rc, found = 0;

	if ((st = state_prepare("SELECT guest_job FROM jobs WHERE id = ?1 "
	    "AND vm_id = ?2")) == NULL)
		return -1;
	(void)sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	(void)sqlite3_bind_text(st, 2, vm, -1, SQLITE_STATIC);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		*guest_job = (uint32_t)sqlite3_column_int64(st, 0);
		found = 1;
		rc = SQLITE_DONE;
	}
	state_finish(st);
	return rc == SQLITE_DONE ? found : -1;
}

/* The VM's newest jobs first, at most limit of them. */
int
state_job_each(const char *vm, unsigned int limit, int (*cb)(const char *,
    uint32_t, const char *, int64_t, void *), void *arg)
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((st = state_prepare("SELECT id, guest_job, command, created FROM "
	    "jobs WHERE vm_id = ?1 ORDER BY created DESC, guest_job DESC "
	    "LIMIT ?2")) == NULL)
		return -1;
	(void)sqlite3_bind_text(st, 1, vm, -1, SQLITE_STATIC);
	(void)sqlite3_bind_int64(st, 2, limit);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (cb((const char *)sqlite3_column_text(st, 0),
		    (uint32_t)sqlite3_column_int64(st, 1),
		    (const char *)sqlite3_column_text(st, 2),
		    sqlite3_column_int64(st, 3), arg) == -1) {
			rc = SQLITE_DONE;
			break;
		}
	}
	state_finish(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

/*
 * Request receipts.  begin() looks the key up and, when it is new,
 * records it as pending in the same transaction, and drops the
 * workspace's oldest settled receipts beyond STATE_RECEIPTS_MAX.  A
 * pending one is never dropped: its call is still running.
 */
enum receipt_state
state_receipt_begin(int64_t ws, const char *rid, const char *tool,
    const uint8_t hash[SHA256_LEN], const char *vm, char *result,
    size_t resultlen)
{
	sqlite3_stmt		*st;
	enum receipt_state	 rs = RECEIPT_ERROR;
	const char		*state;
	int			 rc;

	if (state_lazy_begin() == -1)
		return RECEIPT_ERROR;
	if ((st = state_prepare("SELECT tool, args_hash, state, result FROM "
	    "receipts WHERE workspace_id = ?1 AND request_id = ?2")) == NULL)
		goto fail;
	(void)sqlite3_bind_int64(st, 1, ws);
	(void)sqlite3_bind_text(st, 2, rid, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		state = (const char *)sqlite3_column_text(st, 2);
		if (strcmp((const char *)sqlite3_column_text(st, 0), tool) != 0 ||
		    sqlite3_column_bytes(st, 1) != SHA256_LEN ||
		    memcmp(sqlite3_column_blob(st, 1), hash, SHA256_LEN) != 0)
			rs = RECEIPT_CONFLICT;
		else if (strcmp(state, "done") == 0)
			rs = RECEIPT_DONE;
		else if (strcmp(state, "failed") == 0)
			rs = RECEIPT_FAILED;
		else if (strcmp(state, "pending") == 0)
			rs = RECEIPT_PENDING;
		else
			rs = RECEIPT_UNKNOWN;
		(void)snprintf(result, resultlen, "%s",
		    (const char *)sqlite3_column_text(st, 3));
		state_finish(st);
		(void)state_lazy_end(0);
		return rs;
	}
	state_finish(st);
	if (rc != SQLITE_DONE)
		goto fail;
	if ((st = state_prepare("INSERT INTO receipts (workspace_id, "
	    "request_id, tool, args_hash, state, created, vm_id) VALUES "
	    "(?1, ?2, ?3, ?4, 'pending', ?5, ?6)")) == NULL)
		goto fail;
	(void)sqlite3_bind_int64(st, 1, ws);
	(void)sqlite3_bind_text(st, 2, rid, -1, SQLITE_STATIC);
	(void)sqlite3_bind_text(st, 3, tool, -1, SQLITE_STATIC);
	(void)sqlite3_bind_blob(st, 4, hash, SHA256_LEN, SQLITE_STATIC);
	(void)sqlite3_bind_int64(st, 5, (int64_t)time(NULL));
	(void)sqlite3_bind_text(st, 6, vm, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	state_finish(st);
	if (rc != SQLITE_DONE || state_run("DELETE FROM receipts WHERE rowid "
	    "IN (SELECT rowid FROM receipts WHERE workspace_id = ?2 AND "
	    "state != 'pending' ORDER BY created, rowid LIMIT max(0, (SELECT "
	    "count(*) FROM receipts WHERE workspace_id = ?2) - ?3))", NULL,
	    ws, STATE_RECEIPTS_MAX) == -1)
		goto fail;
	return state_lazy_end(1) == 0 ? RECEIPT_NEW : RECEIPT_ERROR;
fail:
	(void)state_lazy_end(0);
	return RECEIPT_ERROR;
}

/* Settles a pending receipt: "done" or "failed", with what to replay. */
int
state_receipt_end(int64_t ws, const char *rid, int ok, const char *vm,
    const char *result)
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((st = state_prepare("UPDATE receipts SET state = ?3, result = ?4, "
	    "vm_id = ?5 WHERE workspace_id = ?1 AND request_id = ?2 AND "
	    "state = 'pending'")) == NULL)
		return -1;
	(void)sqlite3_bind_int64(st, 1, ws);
	(void)sqlite3_bind_text(st, 2, rid, -1, SQLITE_STATIC);
	(void)sqlite3_bind_text(st, 3, ok ? "done" : "failed", -1,
	    SQLITE_STATIC);
	(void)sqlite3_bind_text(st, 4, result, -1, SQLITE_STATIC);
	(void)sqlite3_bind_text(st, 5, vm, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	state_finish(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

/* At start-up: whatever was pending when mcvmd died has an unknown end. */
/* A pending receipt goes, as if its call never came: it was cancelled. */
int
state_receipt_forget(int64_t ws, const char *rid)
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((st = state_prepare("DELETE FROM receipts WHERE workspace_id = ?1 "
	    "AND request_id = ?2 AND state = 'pending'")) == NULL)
		return -1;
	(void)sqlite3_bind_int64(st, 1, ws);
	(void)sqlite3_bind_text(st, 2, rid, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	state_finish(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

int
state_receipts_orphan(void)
{
	return state_exec("UPDATE receipts SET state = 'unknown' WHERE "
	    "state = 'pending';");
}

/* Counts against quotas: VMs, their memory, disks and vCPUs, per
 * workspace or (ws 0) for the host. */
int
state_usage(int64_t ws, uint32_t *vms, uint64_t *memory_mib,
    uint64_t *disk_bytes, uint64_t *vcpus)
{
	sqlite3_stmt	*st;
	int		 rc;

	/* Live snapshots' saved state and checkpoints are storage too.  An
	 * attached VM is the operator's, its disks too: none of it counts. */
	if ((st = state_prepare("SELECT count(*), coalesce(sum(memory_mib), "
	    "0), coalesce(sum(disk_bytes + checkpoint_bytes), 0) + (SELECT "
	    "coalesce(sum("
	    "s.vm_size), 0) FROM vm_snapshots s JOIN vms w ON w.id = s.vm_id "
	    "WHERE w.attach_qmp = '' AND (?1 = 0 OR w.workspace_id = ?1)), "
	    "coalesce(sum(vcpus), 0) FROM vms WHERE attach_qmp = '' AND "
	    "(?1 = 0 OR workspace_id = ?1)")) == NULL)
		return -1;
	(void)sqlite3_bind_int64(st, 1, ws);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*vms = (uint32_t)sqlite3_column_int64(st, 0);
		*memory_mib = (uint64_t)sqlite3_column_int64(st, 1);
		*disk_bytes = (uint64_t)sqlite3_column_int64(st, 2);
		*vcpus = (uint64_t)sqlite3_column_int64(st, 3);
	}
	state_finish(st);
	return rc == SQLITE_ROW ? 0 : -1;
}

/* What workspace ws's images hold, as stored last said. */
int
state_ws_image_bytes_set(int64_t ws, uint64_t bytes)
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((st = state_prepare("UPDATE workspaces SET image_bytes = ?2 "
	    "WHERE id = ?1")) == NULL)
		return -1;
	(void)sqlite3_bind_int64(st, 1, ws);
	(void)sqlite3_bind_int64(st, 2, (sqlite3_int64)bytes);
	rc = sqlite3_step(st);
	state_finish(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

/* The bytes of images of workspace ws, or of all when ws is 0. */
int
state_ws_image_bytes(int64_t ws, uint64_t *bytes)
{
	sqlite3_stmt	*st;
	int		 rc;

	*bytes = 0;
	if ((st = state_prepare("SELECT coalesce(sum(image_bytes), 0) FROM "
	    "workspaces WHERE ?1 = 0 OR id = ?1")) == NULL)
		return -1;
	(void)sqlite3_bind_int64(st, 1, ws);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW)
		*bytes = (uint64_t)sqlite3_column_int64(st, 0);
	state_finish(st);
	return rc == SQLITE_ROW ? 0 : -1;
}

/* A VM booted again: the guest numbers its jobs from scratch. */
int
state_jobs_forget(const char *vm)
{
	return state_run("DELETE FROM jobs WHERE vm_id = ?1", vm, 0, 0);
}

/* A fork's new VM to: the jobs of its source from, under their ids. */
int
state_jobs_copy(const char *from, const char *to)
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((st = state_prepare("INSERT INTO jobs (id, vm_id, guest_job, "
	    "command, created) SELECT id, ?2, guest_job, command, created "
	    "FROM jobs WHERE vm_id = ?1")) == NULL)
		return -1;
	(void)sqlite3_bind_text(st, 1, from, -1, SQLITE_STATIC);
	(void)sqlite3_bind_text(st, 2, to, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	state_finish(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

/* ---- live snapshots ----------------------------------------------------- */

/* A snapshot taken: 0, or -1 (one of that tag is there already). */
int
state_snapshot_insert(const char *vm, const char *tag, uint64_t vm_size,
    int64_t created)
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((st = state_prepare("INSERT INTO vm_snapshots (vm_id, tag, "
	    "vm_size, created) VALUES (?1, ?2, ?3, ?4)")) == NULL)
		return -1;
	(void)sqlite3_bind_text(st, 1, vm, -1, SQLITE_STATIC);
	(void)sqlite3_bind_text(st, 2, tag, -1, SQLITE_STATIC);
	(void)sqlite3_bind_int64(st, 3, (int64_t)vm_size);
	(void)sqlite3_bind_int64(st, 4, created);
	rc = sqlite3_step(st);
	state_finish(st);
	if (rc != SQLITE_DONE) {
		log_warnx("state: snapshot %s of %s: %s", tag, vm,
		    sqlite3_errmsg(db));
		return -1;
	}
	return 0;
}

/* 1 found (its size and date), 0 not, -1 error. */
int
state_snapshot_find(const char *vm, const char *tag, uint64_t *vm_size,
    int64_t *created)
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((st = state_prepare("SELECT vm_size, created FROM vm_snapshots "
	    "WHERE vm_id = ?1 AND tag = ?2")) == NULL)
		return -1;
	(void)sqlite3_bind_text(st, 1, vm, -1, SQLITE_STATIC);
	(void)sqlite3_bind_text(st, 2, tag, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*vm_size = (uint64_t)sqlite3_column_int64(st, 0);
		*created = sqlite3_column_int64(st, 1);
	}
	state_finish(st);
	return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

int
state_snapshot_delete(const char *vm, const char *tag)
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((st = state_prepare("DELETE FROM vm_snapshots WHERE vm_id = ?1 "
	    "AND tag = ?2")) == NULL)
		return -1;
	(void)sqlite3_bind_text(st, 1, vm, -1, SQLITE_STATIC);
	(void)sqlite3_bind_text(st, 2, tag, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	state_finish(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

/* Calls cb for each snapshot of vm, oldest first; -1 on error. */
int
state_snapshot_each(const char *vm, int (*cb)(const char *, uint64_t,
    int64_t, void *), void *arg)
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((st = state_prepare("SELECT tag, vm_size, created FROM "
	    "vm_snapshots WHERE vm_id = ?1 ORDER BY created, tag")) == NULL)
		return -1;
	(void)sqlite3_bind_text(st, 1, vm, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if (cb((const char *)sqlite3_column_text(st, 0),
		    (uint64_t)sqlite3_column_int64(st, 1),
		    sqlite3_column_int64(st, 2), arg) == -1)
			break;
	state_finish(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -1;
}

/*
 * A VM rolled back to a snapshot taken at since: the guest numbers its
 * jobs from where it was then, so the rows of later jobs go.
 */
int
state_jobs_forget_since(const char *vm, int64_t since)
{
	return state_run("DELETE FROM jobs WHERE vm_id = ?1 AND created >= "
	    "?2", vm, since, 0);
}
