/*
 * state.db's schema, versioned with PRAGMA user_version.  Step N takes a
 * database from version N-1 to N inside one transaction, so a failed
 * migration leaves the previous version intact.  Never edit a step that has
 * shipped: add the next one.
 */
#include <stdio.h>

#include "log.h"
#include "schema.h"

static const char *const schema_steps[SCHEMA_VERSION] = {
	/* 1: workspaces, their token hashes, the audit log. */
	"CREATE TABLE workspaces ("
	"  id INTEGER PRIMARY KEY,"
	"  name TEXT NOT NULL UNIQUE,"
	"  flags INTEGER NOT NULL DEFAULT 0,"
	"  created INTEGER NOT NULL,"
	"  revoked INTEGER NOT NULL DEFAULT 0"
	");"
	"CREATE TABLE tokens ("
	"  id INTEGER PRIMARY KEY,"
	"  workspace_id INTEGER NOT NULL REFERENCES workspaces(id),"
	"  hash BLOB NOT NULL UNIQUE CHECK (length(hash) = 32),"
	"  created INTEGER NOT NULL,"
	"  expires INTEGER NOT NULL DEFAULT 0,"
	"  revoked INTEGER NOT NULL DEFAULT 0"
	");"
	"CREATE INDEX tokens_ws ON tokens(workspace_id);"
	"CREATE TABLE audit ("
	"  id INTEGER PRIMARY KEY,"
	"  time INTEGER NOT NULL,"
	"  actor TEXT NOT NULL,"
	"  action TEXT NOT NULL,"
	"  detail TEXT NOT NULL"
	");",

	/* 2: VMs with their state machine, and request receipts. */
	"CREATE TABLE vms ("
	"  id TEXT PRIMARY KEY,"
	"  workspace_id INTEGER NOT NULL REFERENCES workspaces(id),"
	"  name TEXT NOT NULL,"
	"  state TEXT NOT NULL,"
	"  intent TEXT NOT NULL DEFAULT '',"
	"  slot INTEGER NOT NULL,"
	"  uid INTEGER NOT NULL,"
	"  memory_mib INTEGER NOT NULL,"
	"  vcpus INTEGER NOT NULL,"
	"  network INTEGER NOT NULL DEFAULT 0,"
	"  image TEXT NOT NULL,"
	"  created INTEGER NOT NULL,"
	"  updated INTEGER NOT NULL,"
	"  UNIQUE (workspace_id, name),"
	"  UNIQUE (slot)"
	");"
	"CREATE TABLE receipts ("
	"  workspace_id INTEGER NOT NULL REFERENCES workspaces(id),"
	"  request_id TEXT NOT NULL,"
	"  tool TEXT NOT NULL,"
	"  args_hash BLOB NOT NULL,"
	"  state TEXT NOT NULL,"
	"  result TEXT NOT NULL DEFAULT '',"
	"  created INTEGER NOT NULL,"
	"  PRIMARY KEY (workspace_id, request_id)"
	");"
	"ALTER TABLE workspaces ADD COLUMN max_vms INTEGER NOT NULL "
	"  DEFAULT 0;"
	"ALTER TABLE workspaces ADD COLUMN max_memory INTEGER NOT NULL "
	"  DEFAULT 0;"
	"ALTER TABLE workspaces ADD COLUMN max_storage INTEGER NOT NULL "
	"  DEFAULT 0;",

	/* 3: why a VM failed, its idle policy and disk; jobs seen; which
	 * VM a receipt belongs to, so that destroy removes it too. */
	"ALTER TABLE vms ADD COLUMN reason TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE vms ADD COLUMN idle_seconds INTEGER NOT NULL "
	"  DEFAULT 0;"
	"ALTER TABLE vms ADD COLUMN idle_mode INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE vms ADD COLUMN disk_bytes INTEGER NOT NULL DEFAULT 0;"
	"CREATE TABLE jobs ("
	"  id TEXT PRIMARY KEY,"
	"  vm_id TEXT NOT NULL REFERENCES vms(id) ON DELETE CASCADE,"
	"  guest_job INTEGER NOT NULL,"
	"  command TEXT NOT NULL,"
	"  created INTEGER NOT NULL,"
	"  UNIQUE (vm_id, guest_job)"
	");"
	"ALTER TABLE receipts ADD COLUMN vm_id TEXT NOT NULL DEFAULT '';",

	/* 4: whether a VM has a display and input devices; the VMs made
	 * before had none. */
	"ALTER TABLE vms ADD COLUMN display INTEGER NOT NULL DEFAULT 0;",

	/* 5: a VM's live snapshots: the bytes of state each saved, and
	 * when it was taken. */
	"CREATE TABLE vm_snapshots ("
	"  vm_id TEXT NOT NULL REFERENCES vms(id) ON DELETE CASCADE,"
	"  tag TEXT NOT NULL,"
	"  vm_size INTEGER NOT NULL,"
	"  created INTEGER NOT NULL,"
	"  PRIMARY KEY (vm_id, tag)"
	");",

	/* 6: what each workspace's images hold in stored, as it last
	 * said, for admission. */
	"ALTER TABLE workspaces ADD COLUMN image_bytes INTEGER NOT NULL "
	"  DEFAULT 0;",

	/* 7: VMs from a workspace's own disks: the images, the install
	 * CD and whether it was booted, firmware, machine, persistence.
	 * The VMs made before boot a catalog image, by BIOS, on q35. */
	"ALTER TABLE vms ADD COLUMN disks TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE vms ADD COLUMN iso TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE vms ADD COLUMN firmware INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE vms ADD COLUMN machine INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE vms ADD COLUMN persistent INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE vms ADD COLUMN install INTEGER NOT NULL DEFAULT 0;",

	/* 8: a hibernated VM's checkpoint: its bytes (0: none), and what
	 * it may be restored by (QEMU's digest, the device profile). */
	"ALTER TABLE vms ADD COLUMN checkpoint_bytes INTEGER NOT NULL "
	"  DEFAULT 0;"
	"ALTER TABLE vms ADD COLUMN checkpoint_profile TEXT NOT NULL "
	"  DEFAULT '';",

	/* 9: a workspace's vCPU quota beside its others (step 2's), each
	 * set by mcvmctl set-quota; 0 leaves it to the config's. */
	"ALTER TABLE workspaces ADD COLUMN max_vcpus INTEGER NOT NULL "
	"  DEFAULT 0;",

	/* 10: a job's id is its VM's: the VMs a fork makes keep the jobs
	 * that ran at the fork, under the same ids. */
	"CREATE TABLE jobs_new ("
	"  id TEXT NOT NULL,"
	"  vm_id TEXT NOT NULL REFERENCES vms(id) ON DELETE CASCADE,"
	"  guest_job INTEGER NOT NULL,"
	"  command TEXT NOT NULL,"
	"  created INTEGER NOT NULL,"
	"  PRIMARY KEY (vm_id, id),"
	"  UNIQUE (vm_id, guest_job)"
	");"
	"INSERT INTO jobs_new SELECT id, vm_id, guest_job, command, created "
	"  FROM jobs;"
	"DROP TABLE jobs;"
	"ALTER TABLE jobs_new RENAME TO jobs;",

	/* 11: MCP tasks: a long tool call answered at once, its result
	 * kept for its workspace to fetch until it expires. */
	"CREATE TABLE tasks ("
	"  id TEXT PRIMARY KEY,"
	"  workspace_id INTEGER NOT NULL REFERENCES workspaces(id),"
	"  call INTEGER NOT NULL,"
	"  tool TEXT NOT NULL,"
	"  status TEXT NOT NULL,"
	"  message TEXT NOT NULL DEFAULT '',"
	"  result TEXT NOT NULL DEFAULT '',"
	"  tool_status INTEGER NOT NULL DEFAULT 0,"
	"  created INTEGER NOT NULL,"
	"  updated INTEGER NOT NULL,"
	"  ttl_ms INTEGER NOT NULL"
	");"
	"CREATE INDEX tasks_ws ON tasks(workspace_id);",

	/* 12: a VM the operator attached: an external QEMU, known by its
	 * QMP socket (and its qemu-guest-agent's, or ''), and its pid. */
	"ALTER TABLE vms ADD COLUMN attach_qmp TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE vms ADD COLUMN attach_qga TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE vms ADD COLUMN attach_pid INTEGER NOT NULL DEFAULT 0;",
};

int
schema_version(sqlite3 *db)
{
	sqlite3_stmt	*st;
	int		 v = -1;

	if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st,
	    NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return v;
}

/*
 * Brings the database up to version target.  Refuses a database newer than
 * this program knows.  Returns 0 or -1.
 */
int
schema_migrate(sqlite3 *db, int target)
{
	char	 sql[64], *err = NULL;
	int	 v;

	if ((v = schema_version(db)) == -1) {
		log_warnx("state: cannot read schema version: %s",
		    sqlite3_errmsg(db));
		return -1;
	}
	if (target > SCHEMA_VERSION || v > SCHEMA_VERSION) {
		log_warnx("state: schema version %d is newer than this "
		    "mcvmd (%d)", v, SCHEMA_VERSION);
		return -1;
	}
	for (; v < target; v++) {
		(void)snprintf(sql, sizeof(sql), "PRAGMA user_version = %d;",
		    v + 1);
		if (sqlite3_exec(db, "BEGIN IMMEDIATE;", NULL, NULL,
		    &err) != SQLITE_OK ||
		    sqlite3_exec(db, schema_steps[v], NULL, NULL,
		    &err) != SQLITE_OK ||
		    sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK ||
		    sqlite3_exec(db, "COMMIT;", NULL, NULL, &err) != SQLITE_OK) {
			log_warnx("state: migration to version %d failed: %s",
			    v + 1, err != NULL ? err : "?");
			sqlite3_free(err);
			(void)sqlite3_exec(db, "ROLLBACK;", NULL, NULL, NULL);
			return -1;
		}
		log_info("state: schema migrated to version %d", v + 1);
	}
	return 0;
}
