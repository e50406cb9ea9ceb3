/*
 * trained_fixture.h: a case text trained into a fresh store in a mkdtemp folder, for the
 * tests of what reads stored runs (check_fixture.h, golden_fixture.h): the folder, the
 * loaded case, the store, the run ids by the case's run index, and the checks' options.
 */
#ifndef LKS_TESTS_TRAINED_FIXTURE_H
#define LKS_TESTS_TRAINED_FIXTURE_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/case.h"
#include "harness/engine/runner.h"
#include "harness/store/trace_store.h"
#include "harness/verify/check.h"
#include "kernels/err.h"

struct fx {
	char dir[64], path[160], golden[128];
	lks_check_opts opts;      /* the checks', with golden when the test sets it */
	lks_case c;
	lks_store *s;
	int64_t suite;            /* 0: the runs are stored in no suite */
	int64_t ids[8];           /* by c.runs index */
};

/* text as /tmp/lks-test-<tag>-XXXXXX/tiny.ini, loaded, and every run trained single-threaded
   into its t.db with fingerprint (NULL: none), in a suite of its own when suite is set. */
static inline void fx_train(struct fx *f, const char *tag, const char *text,
                            const char *fingerprint, int suite)
{
	FILE *cf;

	memset(f, 0, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/lks-test-%s-XXXXXX", tag);
	cr_assert_not_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/tiny.ini", f->dir);
	cr_assert_not_null(cf = fopen(f->path, "w"));
	fputs(text, cf);
	fclose(cf);
	cr_assert_eq(lks_case_load(f->path, NULL, 0, &f->c), 0, "%s", lks_errmsg());
	cr_assert_leq(f->c.nruns, (int)(sizeof(f->ids) / sizeof(f->ids[0])));
	snprintf(f->path, sizeof(f->path), "%s/t.db", f->dir);
	cr_assert_eq(lks_store_open(f->path, &f->s), 0, "%s", lks_errmsg());
	if (suite)
		cr_assert_eq(lks_store_begin_suite(f->s, "test", &f->suite), 0, "%s", lks_errmsg());
	for (int i = 0; i < f->c.nruns; i++) {
		lks_runner_opts o = { .threads = 1, .suite_id = f->suite, .fingerprint = fingerprint };
		lks_run_result res;

		cr_assert_eq(lks_run(&f->c, &f->c.runs[i], f->s, &o, &res), 0, "%s", lks_errmsg());
		f->ids[i] = res.run_id;
	}
}

static inline void fx_teardown(struct fx *f)
{
	char cmd[128];

	lks_store_close(f->s);
	lks_case_release(&f->c);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	cr_assert_eq(system(cmd), 0);
}

/* The id of the stored run called run. */
static inline int64_t id_of(const struct fx *f, const char *run)
{
	const lks_run_cfg *r = lks_case_run(&f->c, run);

	cr_assert_not_null(r, "no run '%s'", run);
	return f->ids[r - f->c.runs];
}

#endif
