/*
 * test_trace_names.c: a traced run's tensor names looked up by an index
 * (lks_store_trace_tensor, inside a step's write transaction), in new files and in files
 * made before the index. The cost is counted in SQLite's virtual machine steps of the
 * lookup, not timed: without the index a new name scans every earlier name of the run.
 */
#include "store_fixture.h"
#include "harness/store/tensor_trace.h"

#define NAMES 2000

static const lks_run_info names_info = {
	.case_name = "moe", .run_name = "r", .recipe = "trace", .backend = "trace",
	.world_size = 1,
};

/* NAMES names in one transaction; then the VM steps of looking up the last one, and of
   adding one more, which must not grow with NAMES. */
static void names_lookup_is_indexed(lks_store *s)
{
	sqlite3_stmt *look;
	int64_t run_id;
	char name[64];
	int seq, steps;

	cr_assert_eq(lks_store_trace_join(s, &names_info, 0, &run_id), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_trace_begin(s), 0, "%s", lks_errmsg());
	for (int i = 0; i < NAMES; i++) {
		snprintf(name, sizeof(name), "layers.%d.experts.%d.output", i / 64, i % 64);
		cr_assert_eq(lks_store_trace_tensor(s, run_id, name, LKS_PHASE_FORWARD, &seq), 0,
		             "%s", lks_errmsg());
		cr_assert_eq(seq, i);
	}
	look = s->stmt[LKS_Q_TRACE_TENSOR];
	cr_assert_not_null(look);
	sqlite3_stmt_status(look, SQLITE_STMTSTATUS_VM_STEP, 1);
	cr_assert_eq(lks_store_trace_tensor(s, run_id, name, LKS_PHASE_FORWARD, &seq), 0);
	cr_assert_eq(seq, NAMES - 1);
	steps = sqlite3_stmt_status(look, SQLITE_STMTSTATUS_VM_STEP, 1);
	/* a scan visits every earlier name, some steps each: far more than NAMES */
	cr_assert_lt(steps, NAMES / 10, "finding one name of %d took %d VM steps", NAMES, steps);
	cr_assert_eq(lks_store_trace_tensor(s, run_id, "new", LKS_PHASE_BACKWARD, &seq), 0);
	cr_assert_eq(seq, NAMES);
	steps = sqlite3_stmt_status(look, SQLITE_STMTSTATUS_VM_STEP, 1);
	cr_assert_lt(steps, NAMES / 10, "a new name after %d took %d VM steps", NAMES, steps);
	cr_assert_eq(lks_store_trace_commit(s), 0, "%s", lks_errmsg());
}

Test(trace_names, lookup_uses_an_index)
{
	char path[512];
	lks_store *s;

	mkdir_tmp();
	path_in_tmp(path, sizeof(path), "names.db");
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	names_lookup_is_indexed(s);
	lks_store_close(s);
	rm_tmp();
}

/* A file of the current version made before the index (the index dropped stands for it)
   gets it at its next open to write, and keeps what it holds. */
Test(trace_names, older_file_gets_the_index)
{
	char path[512];
	lks_store *s;

	mkdir_tmp();
	path_in_tmp(path, sizeof(path), "old.db");
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM sqlite_master WHERE type = 'index' "
	                        "AND name = 'tensors_by_name'"), 1);
	cr_assert_eq(sqlite3_exec(s->db, "DROP INDEX tensors_by_name", NULL, NULL, NULL), SQLITE_OK);
	lks_store_close(s);
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(sql_int(s, "PRAGMA user_version"), LKS_STORE_SCHEMA_VERSION);
	names_lookup_is_indexed(s);
	lks_store_close(s);
	rm_tmp();
}
