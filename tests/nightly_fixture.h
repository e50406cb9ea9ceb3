/*
 * nightly_fixture.h: the night-over-night verdicts of a suite as a test reads them back
 * (lks_store_get_nightly): per run its verdict, keys, divergence and the run and suite it
 * was compared with, up to NIGHT_MAX runs.
 */
#ifndef LKS_TESTS_NIGHTLY_FIXTURE_H
#define LKS_TESTS_NIGHTLY_FIXTURE_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "harness/store/trace_store.h"
#include "kernels/err.h"

#define NIGHT_MAX 8

struct seen {
	int n;
	char run[NIGHT_MAX][32], verdict[NIGHT_MAX][16], keys[NIGHT_MAX][256];
	char tensor[NIGHT_MAX][64], field[NIGHT_MAX][16], message[NIGHT_MAX][512];
	int fp_equal[NIGHT_MAX], step[NIGHT_MAX], rank[NIGHT_MAX];
	int64_t run_id[NIGHT_MAX], prev_run_id[NIGHT_MAX], prev_suite[NIGHT_MAX];
};

static inline int see_verdict(void *arg, const lks_nightly_rec *r)
{
	struct seen *s = arg;
	int i = s->n++;

	cr_assert_lt(i, NIGHT_MAX);
	snprintf(s->run[i], sizeof(s->run[i]), "%s", r->run_name);
	snprintf(s->verdict[i], sizeof(s->verdict[i]), "%s", r->verdict);
	snprintf(s->keys[i], sizeof(s->keys[i]), "%s", r->fp_keys);
	snprintf(s->tensor[i], sizeof(s->tensor[i]), "%s", r->tensor ? r->tensor : "");
	snprintf(s->field[i], sizeof(s->field[i]), "%s", r->field ? r->field : "");
	snprintf(s->message[i], sizeof(s->message[i]), "%s", r->message ? r->message : "");
	s->fp_equal[i] = r->fp_equal;
	s->step[i] = r->step;
	s->rank[i] = r->rank;
	s->run_id[i] = r->run_id;
	s->prev_run_id[i] = r->prev_run_id;
	s->prev_suite[i] = r->prev_suite_id;
	return 0;
}

/* The verdicts of suite in the database at dbpath. */
static inline struct seen night_verdicts(const char *dbpath, int64_t suite)
{
	struct seen s = { 0 };
	lks_store *st;

	cr_assert_eq(lks_store_open_readonly(dbpath, &st), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_get_nightly(st, suite, see_verdict, &s), 0, "%s", lks_errmsg());
	lks_store_close(st);
	return s;
}

/* The verdict of run name in s; fails when there is none. */
static inline int find(const struct seen *s, const char *name)
{
	for (int i = 0; i < s->n; i++)
		if (!strcmp(s->run[i], name))
			return i;
	cr_assert_fail("no verdict for run '%s'", name);
	return -1;
}

#endif
