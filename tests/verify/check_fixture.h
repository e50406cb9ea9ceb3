/*
 * check_fixture.h: what the checks' tests (test_check.c, test_check_close.c) share: a tiny
 * case of four runs trained into a store in a mkdtemp folder, single stored values read and
 * altered with SQL, a check evaluated on the runs it names, and the place it must name.
 */
#ifndef LKS_TESTS_CHECK_FIXTURE_H
#define LKS_TESTS_CHECK_FIXTURE_H

#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/case.h"
#include "harness/verify/check.h"
#include "harness/engine/runner.h"
#include "harness/store/trace_store.h"
#include "harness/store/trace_store_impl.h"
#include "trained_fixture.h"
#include "kernels/err.h"

/* Two identical runs (a, b), the same with checkpointing (ac), and BF16 (bf); 2 ranks,
   3 steps. */
static const char case_text[] =
	"[case]\nsteps = 3\nseed = 7\nworld_size = 2\n"
	"[model]\nvocab = 32\nhidden = 16\nffn = 32\nlayers = 1\nseq = 4\nbatch = 2\n"
	"[run a]\nrecipe = fp8_rowwise\n"
	"[run b]\nrecipe = fp8_rowwise\n"
	"[run ac]\nrecipe = fp8_rowwise\ncheckpoint = blocks\n"
	"[run bf]\nrecipe = bf16\n"
	"[check same]\nkind = bitwise\na = a\nb = b\n"
	"[check ac_neutral]\nkind = bitwise\na = ac\nb = a\n"
	"[check replicas]\nkind = ranks_agree\na = a\n"
	"[check recomputed]\nkind = recompute\na = ac\n"
	"[check tracks]\nkind = close\na = a\nb = bf\nmetric = loss\nrtol = 0.02\n"
	"[check finite]\nkind = finite\na = a\n"
	"[check sq]\nkind = sqnr\na = a\nb = bf\n";

/* The case text trained into a fresh store, in a suite. */
static inline void fx_setup_text(struct fx *f, const char *text)
{
	fx_train(f, "check", text, NULL, 1);
}

static inline void fx_setup(struct fx *f)
{
	fx_setup_text(f, case_text);
}

static inline lks_check_cfg check_of(const struct fx *f, const char *name)
{
	for (int i = 0; i < f->c.nchecks; i++)
		if (!strcmp(f->c.checks[i].name, name))
			return f->c.checks[i];
	cr_assert_fail("no check '%s'", name);
	return f->c.checks[0];
}

/* Runs one SQL statement on the store's connection; returns the rows it changed. */
static inline int sql(struct fx *f, const char *fmt, ...)
{
	char q[512];
	va_list ap;
	char *msg = NULL;

	va_start(ap, fmt);
	vsnprintf(q, sizeof(q), fmt, ap);
	va_end(ap);
	cr_assert_eq(sqlite3_exec(lks_store_db(f->s), q, NULL, NULL, &msg), SQLITE_OK, "%s: %s", q,
	             msg ? msg : "?");
	return sqlite3_changes(lks_store_db(f->s));
}

static inline int seq_of(struct fx *f, const char *run, const char *name, const char *phase)
{
	sqlite3_stmt *st;
	int seq;

	cr_assert_eq(sqlite3_prepare_v2(lks_store_db(f->s), "SELECT seq FROM tensors WHERE run_id = ?1 "
	                                "AND name = ?2 AND phase = ?3", -1, &st, NULL), SQLITE_OK);
	sqlite3_bind_int64(st, 1, id_of(f, run));
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, phase, -1, SQLITE_STATIC);
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "no tensor '%s' (%s) in run '%s'", name, phase, run);
	seq = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return seq;
}

static inline lks_stat_row stat_of(struct fx *f, const char *run, int step, int rank, int seq)
{
	lks_stat_row rows[128];
	size_t n;

	cr_assert_eq(lks_store_get_stats(f->s, id_of(f, run), step, rank, rows, 128, &n), 0);
	for (size_t i = 0; i < n && i < 128; i++)
		if (rows[i].seq == seq)
			return rows[i];
	cr_assert_fail("no stats row %s/%d/%d/%d", run, step, rank, seq);
	return rows[0];
}

static inline void bump_hash(struct fx *f, const char *run, int step, int rank, int seq)
{
	cr_assert_eq(sql(f, "UPDATE stats SET hash = hash + 1 WHERE run_id = %lld AND step = %d "
	                 "AND rank = %d AND seq = %d", (long long)id_of(f, run), step, rank, seq), 1);
}

/* Sets one double column of one stats row to v exactly (bound, not printed). */
static inline void set_stat(struct fx *f, const char *run, int step, int rank, int seq, const char *col,
                     double v)
{
	sqlite3_stmt *st;
	char q[256];

	snprintf(q, sizeof(q), "UPDATE stats SET %s = ?1 WHERE run_id = ?2 AND step = ?3 AND rank = ?4 "
	         "AND seq = ?5", col);
	cr_assert_eq(sqlite3_prepare_v2(lks_store_db(f->s), q, -1, &st, NULL), SQLITE_OK);
	sqlite3_bind_double(st, 1, v);
	sqlite3_bind_int64(st, 2, id_of(f, run));
	sqlite3_bind_int(st, 3, step);
	sqlite3_bind_int(st, 4, rank);
	sqlite3_bind_int(st, 5, seq);
	cr_assert_eq(sqlite3_step(st), SQLITE_DONE);
	cr_assert_eq(sqlite3_changes(lks_store_db(f->s)), 1);
	sqlite3_finalize(st);
}

static inline lks_check_result eval(struct fx *f, const lks_check_cfg *k)
{
	lks_check_result r;

	cr_assert_eq(lks_check_eval(f->s, k, NULL, id_of(f, k->a), k->b[0] ? id_of(f, k->b) : 0, &r), 0,
	             "%s", lks_errmsg());
	return r;
}

/* The divergence is exactly (step, rank, tensor, phase). */
static inline void expect_at(const lks_check_result *r, int step, int rank, const char *tensor,
                      lks_phase phase)
{
	cr_assert(r->failed, "the check passed");
	cr_assert_eq(r->step, step, "step %d, not %d: %s", r->step, step, r->message);
	cr_assert_eq(r->rank, rank, "rank %d, not %d: %s", r->rank, rank, r->message);
	cr_assert_str_eq(r->tensor, tensor, "%s", r->message);
	cr_assert_eq(r->phase, (int)phase, "%s", r->message);
}

#endif
