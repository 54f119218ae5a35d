/*
 * state.db's schema: migration from an empty database, and from version 1
 * with data in it, which must survive.
 */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>

#include "schema.h"

static sqlite3	*db;

static void
setup(void)
{
	cr_assert_eq(sqlite3_open(":memory:", &db), SQLITE_OK);
}

static void
teardown(void)
{
	sqlite3_close(db);
}

TestSuite(schema, .init = setup, .fini = teardown);

static int
count(const char *sql)
{
	sqlite3_stmt	*st;
	int		 n = -1;

	cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK,
	    "%s", sqlite3_errmsg(db));
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return n;
}

static int
has_table(const char *name)
{
	char	 sql[128];

	snprintf(sql, sizeof(sql), "SELECT count(*) FROM sqlite_master "
	    "WHERE type = 'table' AND name = '%s'", name);
	return count(sql);
}

Test(schema, from_empty)
{
	cr_assert_eq(schema_version(db), 0);
	cr_assert_eq(schema_migrate(db, SCHEMA_VERSION), 0);
	cr_assert_eq(schema_version(db), SCHEMA_VERSION);
	cr_assert_eq(has_table("workspaces"), 1);
	cr_assert_eq(has_table("tokens"), 1);
	cr_assert_eq(has_table("audit"), 1);
	cr_assert_eq(has_table("vms"), 1);
	cr_assert_eq(has_table("receipts"), 1);
	cr_assert_eq(has_table("jobs"), 1);
	/* Running it again changes nothing. */
	cr_assert_eq(schema_migrate(db, SCHEMA_VERSION), 0);
	cr_assert_eq(schema_version(db), SCHEMA_VERSION);
}

/* From version 2 (before the jobs table), through every later step. */
Test(schema, from_previous_version_keeps_data)
{
	cr_assert_eq(schema_migrate(db, 2), 0);
	cr_assert_eq(schema_version(db), 2);
	cr_assert_eq(has_table("jobs"), 0);
	cr_assert_eq(sqlite3_exec(db,
	    "INSERT INTO workspaces (name, flags, created) VALUES "
	    "('alice', 1, 100);"
	    "INSERT INTO tokens (workspace_id, hash, created) VALUES "
	    "(1, zeroblob(32), 100);"
	    "INSERT INTO audit (time, actor, action, detail) VALUES "
	    "(100, 'uid 0', 'token-issue', 'workspace alice');"
	    "INSERT INTO vms (id, workspace_id, name, state, slot, uid, "
	    "memory_mib, vcpus, image, created, updated) VALUES "
	    "('vm-0123456789abcdef', 1, 'box', 'stopped', 0, 2000000, 512, "
	    "1, 'debian', 100, 100);",
	    NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
	cr_assert_eq(schema_migrate(db, SCHEMA_VERSION), 0);
	cr_assert_eq(schema_version(db), SCHEMA_VERSION);
	cr_assert_eq(count("SELECT count(*) FROM workspaces WHERE "
	    "name = 'alice' AND flags = 1 AND max_vms = 0"), 1);
	cr_assert_eq(count("SELECT count(*) FROM tokens"), 1);
	cr_assert_eq(count("SELECT count(*) FROM audit"), 1);
	cr_assert_eq(count("SELECT count(*) FROM vms WHERE name = 'box' AND "
	    "state = 'stopped' AND reason = '' AND memory_mib = 512"), 1);
	/* A VM made before displays existed has none. */
	cr_assert_eq(count("SELECT count(*) FROM vms WHERE name = 'box' AND "
	    "display = 0"), 1);
	cr_assert_eq(has_table("jobs"), 1);
}

/* Every step in turn, from an empty database. */
Test(schema, one_step_at_a_time)
{
	int	 v;

	for (v = 1; v <= SCHEMA_VERSION; v++) {
		cr_assert_eq(schema_migrate(db, v), 0, "step %d", v);
		cr_assert_eq(schema_version(db), v);
	}
}

Test(schema, refuses_newer_database)
{
	cr_assert_eq(sqlite3_exec(db, "PRAGMA user_version = 99;", NULL, NULL,
	    NULL), SQLITE_OK);
	cr_assert_eq(schema_migrate(db, SCHEMA_VERSION), -1);
	cr_assert_eq(schema_version(db), 99);
}

Test(schema, token_hash_must_be_32_bytes)
{
	cr_assert_eq(schema_migrate(db, SCHEMA_VERSION), 0);
	cr_assert_eq(sqlite3_exec(db, "INSERT INTO workspaces (name, created) "
	    "VALUES ('a', 1);", NULL, NULL, NULL), SQLITE_OK);
	cr_assert_neq(sqlite3_exec(db, "INSERT INTO tokens (workspace_id, "
	    "hash, created) VALUES (1, zeroblob(31), 1);", NULL, NULL, NULL),
	    SQLITE_OK);
}

/* A step that fails leaves the previous version whole. */
Test(schema, failed_step_rolls_back)
{
	cr_assert_eq(schema_migrate(db, 1), 0);
	/* Make step 2 collide: a table it creates already exists. */
	cr_assert_eq(sqlite3_exec(db, "CREATE TABLE vms (x);", NULL, NULL,
	    NULL), SQLITE_OK);
	cr_assert_eq(schema_migrate(db, SCHEMA_VERSION), -1);
	cr_assert_eq(schema_version(db), 1);
	cr_assert_eq(has_table("receipts"), 0);
}
