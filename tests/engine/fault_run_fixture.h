/*
 * fault_run_fixture.h: what the tests that run planted faults through the program
 * (test_fault_cli.c, test_fault_mesh.c) read back from its database: the verdicts of the
 * checks named caught..., and events.
 */
#ifndef LKS_TESTS_FAULT_RUN_FIXTURE_H
#define LKS_TESTS_FAULT_RUN_FIXTURE_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "harness/engine/case.h"
#include "harness/store/trace_store.h"
#include "harness/store/trace_store_impl.h"
#include "kernels/err.h"

struct verdicts {
	int n, expected_fail, pass;
	char seen[16][LKS_NAME_MAX];
	int step[16], rank[16];
	char tensor[16][128];
};

static inline int collect(void *arg, const lks_check_rec *r)
{
	struct verdicts *v = arg;

	if (v->n < 16 && !strncmp(r->check_name, "caught", 6)) {  /* caught, caught_by_... */
		snprintf(v->seen[v->n], LKS_NAME_MAX, "%s", r->case_name);
		v->step[v->n] = r->step;
		v->rank[v->n] = r->rank;
		snprintf(v->tensor[v->n], 128, "%s", r->tensor ? r->tensor : "");
		v->n++;
	}
	v->expected_fail += !strcmp(r->verdict, "expected_fail");
	v->pass += !strcmp(r->verdict, "pass");
	return 0;
}

static inline void read_verdicts(const char *db, struct verdicts *v)
{
	lks_store *s;

	memset(v, 0, sizeof(*v));
	cr_assert_eq(lks_store_open(db, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_get_checks(s, 0, collect, v), 0, "%s", lks_errmsg());
	lks_store_close(s);
}

static inline void remove_db(const char *db)
{
	char p[700];

	unlink(db);
	snprintf(p, sizeof(p), "%s-wal", db);
	unlink(p);
	snprintf(p, sizeof(p), "%s-shm", db);
	unlink(p);
}

struct event {
	int step, rank;
	char tensor[128], message[256];
};

/* An event's row (step, rank, tensor, message) from st into ev. */
static inline void event_of(sqlite3_stmt *st, struct event *ev)
{
	ev->step = sqlite3_column_int(st, 0);
	ev->rank = sqlite3_column_int(st, 1);
	snprintf(ev->tensor, sizeof(ev->tensor), "%s", (const char *)sqlite3_column_text(st, 2));
	snprintf(ev->message, sizeof(ev->message), "%s", (const char *)sqlite3_column_text(st, 3));
}


#endif
