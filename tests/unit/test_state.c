/*
 * state.c against a real database in a temporary directory: request
 * receipts are bounded per workspace, the oldest settled ones go first,
 * and a pending one (its call still running) is never dropped; job rows
 * are bounded per VM, a cancelled call's receipt can be forgotten, and
 * the receipts' lazy commits leave every other write synchronous.
 */
#include <sys/stat.h>

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "mcvmd.h"
#include "statedb.h"

#define RECEIPTS_KEPT	4096	/* README: receipts kept per workspace */

static enum receipt_state
begin(int64_t ws, const char *rid)
{
	uint8_t	 hash[SHA256_LEN];
	char	 result[64];

	memset(hash, 0x5a, sizeof(hash));
	return state_receipt_begin(ws, rid, "vm_exec", hash, "", result,
	    sizeof(result));
}

/* Runs a query of one integer on a connection of the test's own. */
static int64_t
query(const char *sql)
{
	sqlite3		*db;
	sqlite3_stmt	*st;
	char		 path[128];
	int64_t		 v = -1;

	(void)snprintf(path, sizeof(path), "%s/state.db", statedb_dir);
	cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL),
	    SQLITE_OK);
	cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK,
	    "%s", sqlite3_errmsg(db));
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

Test(state, receipts_bounded_per_workspace, .init = statedb_setup,
    .fini = statedb_teardown, .timeout = 120)
{
	char	 rid[32], sql[256];
	int64_t	 a, b;
	int	 i, n = RECEIPTS_KEPT + 104;

	a = statedb_workspace("alice", 1);
	b = statedb_workspace("bob", 2);
	for (i = 0; i < 3; i++) {
		(void)snprintf(rid, sizeof(rid), "b%d", i);
		cr_assert_eq(begin(b, rid), RECEIPT_NEW);
		cr_assert_eq(state_receipt_end(b, rid, 1, "", "{}"), 0);
	}
	/* The oldest of alice's stays pending: its call never ends. */
	cr_assert_eq(begin(a, "r0"), RECEIPT_NEW);
	for (i = 1; i <= n; i++) {
		(void)snprintf(rid, sizeof(rid), "r%d", i);
		cr_assert_eq(begin(a, rid), RECEIPT_NEW, "receipt %s", rid);
		cr_assert_eq(state_receipt_end(a, rid, i % 2, "", "{}"), 0);
	}

	(void)snprintf(sql, sizeof(sql), "SELECT count(*) FROM receipts "
	    "WHERE workspace_id = %lld", (long long)a);
	cr_assert_eq(query(sql), RECEIPTS_KEPT);
	cr_assert_eq(query("SELECT count(*) FROM receipts WHERE request_id = "
	    "'r0' AND state = 'pending'"), 1, "a pending receipt was dropped");
	/* r1 .. r(n - KEPT + 1) were the oldest settled: gone. */
	(void)snprintf(sql, sizeof(sql), "SELECT min(CAST(substr(request_id, "
	    "2) AS INTEGER)) FROM receipts WHERE workspace_id = %lld AND "
	    "request_id != 'r0'", (long long)a);
	cr_assert_eq(query(sql), n - RECEIPTS_KEPT + 2);
	/* The newest still replays. */
	(void)snprintf(rid, sizeof(rid), "r%d", n);
	cr_assert_eq(begin(a, rid), RECEIPT_FAILED);
	cr_assert_eq(begin(a, "r0"), RECEIPT_PENDING);
	/* Another workspace's receipts are its own. */
	(void)snprintf(sql, sizeof(sql), "SELECT count(*) FROM receipts "
	    "WHERE workspace_id = %lld", (long long)b);
	cr_assert_eq(query(sql), 3);
}

/* Only settled receipts go: a workspace of pending calls keeps them. */
Test(state, pending_receipts_never_dropped, .init = statedb_setup,
    .fini = statedb_teardown, .timeout = 120)
{
	char	 rid[32];
	int64_t	 a;
	int	 i;

	a = statedb_workspace("carol", 3);
	for (i = 0; i < RECEIPTS_KEPT + 8; i++) {
		(void)snprintf(rid, sizeof(rid), "p%d", i);
		cr_assert_eq(begin(a, rid), RECEIPT_NEW);
	}
	cr_assert_eq(query("SELECT count(*) FROM receipts WHERE state = "
	    "'pending'"), RECEIPTS_KEPT + 8);
	cr_assert_eq(begin(a, "p0"), RECEIPT_PENDING);
}

#define JOBS_KEPT	1024	/* README: job rows kept per VM */

static void
vm_row(int64_t ws, const char *id, uint32_t slot)
{
	struct vm_row	 row;

	memset(&row, 0, sizeof(row));
	(void)snprintf(row.id, sizeof(row.id), "%s", id);
	row.ws_id = ws;
	(void)snprintf(row.name, sizeof(row.name), "%s", id);
	(void)snprintf(row.state, sizeof(row.state), "running");
	(void)snprintf(row.image, sizeof(row.image), "debian");
	row.slot = slot;
	row.uid = 2000000 + slot;
	row.memory_mib = 512;
	row.vcpus = 1;
	cr_assert_eq(state_vm_insert(&row), 0);
}

static int
count_job(const char *id, uint32_t job, const char *cmd, int64_t created,
    void *arg)
{
	uint32_t	*last = arg;

	/* Newest first: guest job numbers fall. */
	cr_assert(last[1] == 0 || job < last[0], "job %u after %u", job,
	    last[0]);
	last[0] = job;
	last[1]++;
	return 0;
}

/* A VM runs any number of jobs; the host keeps the newest rows. */
Test(state, job_rows_bounded_per_vm, .init = statedb_setup,
    .fini = statedb_teardown,
    .timeout = 120)
{
	char		 id[32], rid[32], sql[256];
	uint32_t	 guest, seen[2] = { 0, 0 };
	int64_t		 a;
	int		 i, n = JOBS_KEPT + 40;

	a = statedb_workspace("dave", 4);
	vm_row(a, "vm-00000000000000aa", 0);
	vm_row(a, "vm-00000000000000bb", 1);
	cr_assert_eq(begin(a, "other"), RECEIPT_NEW);
	cr_assert_eq(state_job_start("job-f0000000000000ff",
	    "vm-00000000000000bb", 1, "true", a, "other", "{}"), 0);
	for (i = 1; i <= n; i++) {
		(void)snprintf(rid, sizeof(rid), "j%d", i);
		(void)snprintf(id, sizeof(id), "job-%016x", i);
		cr_assert_eq(begin(a, rid), RECEIPT_NEW);
		cr_assert_eq(state_job_start(id, "vm-00000000000000aa",
		    (uint32_t)i, "true", a, rid, "{}"), 0, "job %d", i);
	}
	(void)snprintf(sql, sizeof(sql), "SELECT count(*) FROM jobs WHERE "
	    "vm_id = 'vm-00000000000000aa'");
	cr_assert_eq(query(sql), JOBS_KEPT);
	cr_assert_eq(state_job_lookup("job-0000000000000001",
	    "vm-00000000000000aa", &guest), 0, "the oldest row stayed");
	(void)snprintf(id, sizeof(id), "job-%016x", n);
	cr_assert_eq(state_job_lookup(id, "vm-00000000000000aa", &guest), 1);
	cr_assert_eq(guest, (uint32_t)n);
	cr_assert_eq(state_job_lookup("job-f0000000000000ff",
	    "vm-00000000000000bb", &guest), 1, "another VM's row went");
	/* A listing is newest first, and stops at its limit. */
	cr_assert_eq(state_job_each("vm-00000000000000aa", 33, count_job,
	    seen), 0);
	cr_assert_eq(seen[1], 33);
	cr_assert_eq(seen[0], (uint32_t)(n - 32));
}

/* A cancelled call's pending receipt goes; a settled one stays. */
Test(state, receipt_forget_only_pending, .init = statedb_setup,
    .fini = statedb_teardown)
{
	int64_t	 a;

	a = statedb_workspace("erin", 5);
	cr_assert_eq(begin(a, "c1"), RECEIPT_NEW);
	cr_assert_eq(state_receipt_forget(a, "c1"), 0);
	cr_assert_eq(begin(a, "c1"), RECEIPT_NEW, "forgotten: runs again");
	cr_assert_eq(state_receipt_end(a, "c1", 1, "", "{}"), 0);
	cr_assert_eq(state_receipt_forget(a, "c1"), 0);
	cr_assert_eq(begin(a, "c1"), RECEIPT_DONE, "a settled one stays");
}

/*
 * set-quota: only the limits it names change, 0 gives one back to the
 * config, each workspace keeps its own, and a missing one is refused.
 */
Test(state, quota_set_per_workspace, .init = statedb_setup,
    .fini = statedb_teardown)
{
	struct limits	 q, got;
	char		 msg[256];
	int64_t		 a = statedb_workspace("alice", 1);
	int64_t		 b = statedb_workspace("bob", 2);

	memset(&q, 0, sizeof(q));
	q.max_vms = 1;
	q.max_memory = 1ULL << 30;
	q.max_vcpus = 2;
	q.max_storage = 5ULL << 30;
	cr_assert_eq(state_ws_quota_set("carol", QUOTA_ALL, &q, 0, msg,
	    sizeof(msg)), 1);
	cr_assert_not_null(strstr(msg, "does not exist"));
	cr_assert_eq(state_ws_quota_set("alice", QUOTA_ALL, &q, 0, msg,
	    sizeof(msg)), 0, "%s", msg);
	cr_assert_eq(state_ws_quota(a, &got), 0);
	cr_assert_eq(got.max_vms, 1);
	cr_assert_eq(got.max_memory, 1ULL << 30);
	cr_assert_eq(got.max_vcpus, 2);
	cr_assert_eq(got.max_storage, 5ULL << 30);

	q.max_vms = 3;
	q.max_memory = 0;
	cr_assert_eq(state_ws_quota_set("alice", QUOTA_VMS | QUOTA_MEMORY, &q,
	    0, msg, sizeof(msg)), 0, "%s", msg);
	cr_assert_eq(state_ws_quota(a, &got), 0);
	cr_assert_eq(got.max_vms, 3);
	cr_assert_eq(got.max_memory, 0, "back to the config's");
	cr_assert_eq(got.max_vcpus, 2, "not named: kept");
	cr_assert_eq(got.max_storage, 5ULL << 30);

	cr_assert_eq(state_ws_quota(b, &got), 0);
	cr_assert_eq(got.max_vms + got.max_memory + got.max_vcpus +
	    got.max_storage, 0, "another workspace's quota is its own");
	cr_assert_eq(query("SELECT count(*) FROM audit WHERE action = "
	    "'quota-set'"), 2);
}

/* mcvmd's connection's synchronous setting: 2 is FULL. */
static int64_t
synchronous(void)
{
	sqlite3_stmt	*st;
	int64_t		 v = -1;

	cr_assert_eq(sqlite3_prepare_v2(state_db(), "PRAGMA synchronous;", -1,
	    &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/*
 * Receipts and job rows commit without waiting for the disk, yet are
 * committed; every other write still waits (synchronous FULL), after
 * those transactions and after their failures alike.
 */
Test(state, lazy_commits_leave_full, .init = statedb_setup,
    .fini = statedb_teardown)
{
	int64_t	 a;

	a = statedb_workspace("fred", 6);
	vm_row(a, "vm-00000000000000cc", 0);
	cr_assert_eq(synchronous(), 2);
	cr_assert_eq(begin(a, "s1"), RECEIPT_NEW);
	cr_assert_eq(synchronous(), 2);
	cr_assert_eq(query("SELECT count(*) FROM receipts WHERE request_id = "
	    "'s1' AND state = 'pending'"), 1, "another connection sees it");
	cr_assert_eq(begin(a, "s1"), RECEIPT_PENDING);
	cr_assert_eq(synchronous(), 2);
	cr_assert_eq(state_job_start("job-00000000000000c1",
	    "vm-00000000000000cc", 1, "true", a, "s1", "{}"), 0);
	cr_assert_eq(synchronous(), 2);
	cr_assert_eq(query("SELECT count(*) FROM jobs WHERE id = "
	    "'job-00000000000000c1'"), 1);
	/* The same job id again breaks the key: rolled back. */
	cr_assert_eq(begin(a, "s2"), RECEIPT_NEW);
	cr_assert_eq(state_job_start("job-00000000000000c1",
	    "vm-00000000000000cc", 2, "true", a, "s2", "{}"), -1);
	cr_assert_eq(synchronous(), 2);
	cr_assert_eq(query("SELECT count(*) FROM receipts WHERE request_id = "
	    "'s2' AND state = 'pending'"), 1, "s2's settling rolled back");
}

static int
count_ws(const struct ws_entry *e, void *arg)
{
	(*(int *)arg)++;
	return 0;
}

/* Each row of the outer listing lists the workspaces again. */
static int
nested_ws(const struct ws_entry *e, void *arg)
{
	int	*n = arg;

	n[0]++;
	cr_assert_eq(state_ws_list(count_ws, &n[1]), 0);
	return 0;
}

/*
 * mcvmd keeps its statements compiled: one in use (a listing whose
 * callback lists again) is not handed out twice, and a kept one gives
 * the same rows each time.
 */
Test(state, kept_statements_nest_and_repeat, .init = statedb_setup,
    .fini = statedb_teardown)
{
	int	 n[2] = { 0, 0 }, i, k;

	(void)statedb_workspace("gail", 7);
	(void)statedb_workspace("hank", 8);
	cr_assert_eq(state_ws_list(nested_ws, n), 0);
	cr_assert_eq(n[0], 2);
	cr_assert_eq(n[1], 4);
	for (i = 0; i < 3; i++) {
		k = 0;
		cr_assert_eq(state_ws_list(count_ws, &k), 0);
		cr_assert_eq(k, 2, "listing %d", i);
	}
}
