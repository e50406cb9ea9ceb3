/*
 * test_check.c: the checks (harness/verify/check.h) on real traces. A tiny case is trained into
 * a store in a temporary folder; then single stored values are altered with SQL (a hash,
 * an l2, a loss, a non-finite count) and each check must name exactly that step, rank and
 * tensor, the field, the values on both sides and the errors; where two places differ,
 * the first in (step, tensor seq, rank) order. Also: expect = fail with and without the
 * expected location, an unexpected pass, skipped checks, and the verdicts stored in the
 * checks table. (The ULP distance on known values: test_walk.c.)
 */
#include <criterion/criterion.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/engine/case.h"
#include "harness/verify/check.h"
#include "harness/engine/runner.h"
#include "harness/store/trace_store.h"
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

struct fx {
	char dir[64], path[128];
	lks_case c;
	lks_store *s;
	int64_t suite;
	int64_t ids[8];           /* by c.runs index */
};

/* Three replicas of one run, so that a majority can name the rank that differs. */
static const char three_ranks_text[] =
	"[case]\nsteps = 3\nseed = 7\nworld_size = 3\n"
	"[model]\nvocab = 32\nhidden = 16\nffn = 32\nlayers = 1\nseq = 4\nbatch = 1\n"
	"[run a]\nrecipe = bf16\n"
	"[check replicas]\nkind = ranks_agree\na = a\n";

/* The case text trained into a fresh store. */
static void fx_setup_text(struct fx *f, const char *text)
{
	FILE *cf;

	memset(f, 0, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/lks-test-check-XXXXXX");
	cr_assert_not_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/tiny.ini", f->dir);
	cf = fopen(f->path, "w");
	cr_assert_not_null(cf);
	fputs(text, cf);
	fclose(cf);
	cr_assert_eq(lks_case_load(f->path, NULL, 0, &f->c), 0, "%s", lks_errmsg());
	snprintf(f->path, sizeof(f->path), "%s/t.db", f->dir);
	cr_assert_eq(lks_store_open(f->path, &f->s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_begin_suite(f->s, "test", &f->suite), 0, "%s", lks_errmsg());
	for (int i = 0; i < f->c.nruns; i++) {
		lks_runner_opts o = { .threads = 1, .suite_id = f->suite };
		lks_run_result res;

		cr_assert_eq(lks_run(&f->c, &f->c.runs[i], f->s, &o, &res), 0, "%s", lks_errmsg());
		f->ids[i] = res.run_id;
	}
}

static void fx_setup(struct fx *f)
{
	fx_setup_text(f, case_text);
}

static void fx_teardown(struct fx *f)
{
	char cmd[128];

	lks_store_close(f->s);
	lks_case_release(&f->c);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	cr_assert_eq(system(cmd), 0);
}

static int64_t id_of(const struct fx *f, const char *run)
{
	const lks_run_cfg *r = lks_case_run(&f->c, run);

	cr_assert_not_null(r, "no run '%s'", run);
	return f->ids[r - f->c.runs];
}

static lks_check_cfg check_of(const struct fx *f, const char *name)
{
	for (int i = 0; i < f->c.nchecks; i++)
		if (!strcmp(f->c.checks[i].name, name))
			return f->c.checks[i];
	cr_assert_fail("no check '%s'", name);
	return f->c.checks[0];
}

/* Runs one SQL statement on the store's connection; returns the rows it changed. */
static int sql(struct fx *f, const char *fmt, ...)
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

static int seq_of(struct fx *f, const char *run, const char *name, const char *phase)
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

static lks_stat_row stat_of(struct fx *f, const char *run, int step, int rank, int seq)
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

static void bump_hash(struct fx *f, const char *run, int step, int rank, int seq)
{
	cr_assert_eq(sql(f, "UPDATE stats SET hash = hash + 1 WHERE run_id = %lld AND step = %d "
	                 "AND rank = %d AND seq = %d", (long long)id_of(f, run), step, rank, seq), 1);
}

/* Sets one double column of one stats row to v exactly (bound, not printed). */
static void set_stat(struct fx *f, const char *run, int step, int rank, int seq, const char *col,
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

static lks_check_result eval(struct fx *f, const lks_check_cfg *k)
{
	lks_check_result r;

	cr_assert_eq(lks_check_eval(f->s, k, NULL, id_of(f, k->a), k->b[0] ? id_of(f, k->b) : 0, &r), 0,
	             "%s", lks_errmsg());
	return r;
}

/* The divergence is exactly (step, rank, tensor, phase). */
static void expect_at(const lks_check_result *r, int step, int rank, const char *tensor,
                      lks_phase phase)
{
	cr_assert(r->failed, "the check passed");
	cr_assert_eq(r->step, step, "step %d, not %d: %s", r->step, step, r->message);
	cr_assert_eq(r->rank, rank, "rank %d, not %d: %s", r->rank, rank, r->message);
	cr_assert_str_eq(r->tensor, tensor, "%s", r->message);
	cr_assert_eq(r->phase, (int)phase, "%s", r->message);
}

/* ---- bitwise ---- */

struct seen_checks {
	int n;
	char name[16][LKS_NAME_MAX], verdict[16][32], tensor[16][128], field[16][32];
	int step[16], rank[16];
	lks_value_type type[16];
	int64_t ia[16], ib[16];
	int64_t run_a[16], run_b[16];
};

static int collect_check(void *arg, const lks_check_rec *r)
{
	struct seen_checks *s = arg;

	if (s->n < 16) {
		snprintf(s->name[s->n], LKS_NAME_MAX, "%s", r->check_name);
		snprintf(s->verdict[s->n], 32, "%s", r->verdict);
		snprintf(s->tensor[s->n], 128, "%s", r->tensor ? r->tensor : "");
		snprintf(s->field[s->n], 32, "%s", r->field ? r->field : "");
		s->step[s->n] = r->step;
		s->rank[s->n] = r->rank;
		s->type[s->n] = r->type;
		s->ia[s->n] = r->ivalue_a;
		s->ib[s->n] = r->ivalue_b;
		s->run_a[s->n] = r->run_a;
		s->run_b[s->n] = r->run_b;
		s->n++;
	}
	return 0;
}

static int find_seen(const struct seen_checks *s, const char *name)
{
	for (int i = 0; i < s->n; i++)
		if (!strcmp(s->name[i], name))
			return i;
	cr_assert_fail("no stored verdict for '%s'", name);
	return -1;
}

Test(check, bitwise_names_an_altered_hash)
{
	struct fx f;
	lks_check_cfg k;
	lks_check_result r;
	lks_check_tally t = { 0 };
	struct seen_checks seen = { 0 };
	const char *tname = "blocks.0.mlp.up.weight.grad";
	char *out = NULL;
	size_t outlen = 0;
	FILE *mem;
	int seq, i;
	uint64_t h;

	fx_setup(&f);
	k = check_of(&f, "same");
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	cr_assert_eq(r.failed, 0);

	seq = seq_of(&f, "b", tname, "backward");
	h = stat_of(&f, "a", 1, 1, seq).hash;
	cr_assert_eq(stat_of(&f, "b", 1, 1, seq).hash, h);
	bump_hash(&f, "b", 1, 1, seq);
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL);
	expect_at(&r, 1, 1, tname, LKS_PHASE_BACKWARD);
	cr_assert_str_eq(r.field, "hash");
	cr_assert_eq(r.value_type, LKS_VALUE_INT);
	cr_assert_eq((uint64_t)r.ia, h);
	cr_assert_eq((uint64_t)r.ib, h + 1);
	cr_assert_eq(r.ulp, -1, "a hash has no ULP distance");
	cr_assert(strstr(r.message, tname) && strstr(r.message, "step 1") && strstr(r.message, "rank 1"),
	          "%s", r.message);

	/* the whole case: printed, stored, counted */
	mem = open_memstream(&out, &outlen);
	cr_assert_not_null(mem);
	cr_assert_eq(lks_check_case(f.s, f.suite, &f.c, f.ids, NULL, mem, &t), 0, "%s", lks_errmsg());
	fclose(mem);
	cr_assert_eq(t.total, 7);
	cr_assert_eq(t.failed, 1, "%s", out);
	cr_assert_eq(t.passed, 5, "%s", out);
	cr_assert_eq(t.unsupported, 1, "%s", out);
	cr_assert_eq(t.expected_fail + t.skipped, 0);
	cr_assert_not_null(strstr(out, "unsupported"), "%s", out);
	{
		char *line = strstr(out, "same ");

		cr_assert_not_null(line, "%s", out);
		cr_assert(strstr(line, "FAIL") && strstr(line, tname) < strchr(line, '\n'), "%s", out);
	}
	cr_assert_eq(lks_store_get_checks(f.s, f.suite, collect_check, &seen), 0, "%s", lks_errmsg());
	cr_assert_eq(seen.n, 7);
	i = find_seen(&seen, "same");
	cr_assert_str_eq(seen.verdict[i], "fail");
	cr_assert_eq(seen.step[i], 1);
	cr_assert_eq(seen.rank[i], 1);
	cr_assert_str_eq(seen.tensor[i], tname);
	cr_assert_str_eq(seen.field[i], "hash");
	cr_assert_eq(seen.type[i], LKS_VALUE_INT);
	cr_assert_eq((uint64_t)seen.ia[i], h);
	cr_assert_eq((uint64_t)seen.ib[i], h + 1);
	cr_assert_eq(seen.run_a[i], id_of(&f, "a"));
	cr_assert_eq(seen.run_b[i], id_of(&f, "b"));
	i = find_seen(&seen, "sq");
	cr_assert_str_eq(seen.verdict[i], "unsupported");
	i = find_seen(&seen, "finite");
	cr_assert_str_eq(seen.verdict[i], "pass");
	cr_assert_eq(seen.step[i], -1);
	cr_assert_eq(seen.run_b[i], 0);
	free(out);
	fx_teardown(&f);
}

Test(check, bitwise_names_field_values_and_errors)
{
	struct fx f;
	lks_check_cfg k;
	lks_check_result r;
	int seq;
	double l2, up;
	float amax, amax_up;

	fx_setup(&f);
	k = check_of(&f, "same");
	seq = seq_of(&f, "a", "head.logits", "forward");
	l2 = stat_of(&f, "b", 2, 0, seq).l2;
	up = nextafter(l2, INFINITY);
	set_stat(&f, "b", 2, 0, seq, "l2", up);
	r = eval(&f, &k);
	expect_at(&r, 2, 0, "head.logits", LKS_PHASE_FORWARD);
	cr_assert_str_eq(r.field, "l2");
	cr_assert_eq(r.value_type, LKS_VALUE_REAL);
	cr_assert_eq(r.value_f32, 0);
	cr_assert(r.a == l2 && r.b == up, "%.17g %.17g", r.a, r.b);
	cr_assert(r.abs_err == up - l2, "%g", r.abs_err);
	cr_assert(r.rel_err == (up - l2) / up, "%g", r.rel_err);
	cr_assert_eq(r.ulp, 1);

	/* a float field: the ULP distance counts floats, not doubles */
	set_stat(&f, "b", 2, 0, seq, "l2", l2);
	cr_assert_eq(eval(&f, &k).verdict, LKS_VERDICT_PASS);
	seq = seq_of(&f, "a", "blocks.0.mlp.down.fwd.x", "forward");
	amax = stat_of(&f, "a", 0, 1, seq).amax;
	amax_up = nextafterf(nextafterf(amax, INFINITY), INFINITY);
	set_stat(&f, "a", 0, 1, seq, "amax", amax_up);
	r = eval(&f, &k);
	expect_at(&r, 0, 1, "blocks.0.mlp.down.fwd.x", LKS_PHASE_FORWARD);
	cr_assert_str_eq(r.field, "amax");
	cr_assert_eq(r.value_f32, 1);
	cr_assert(r.a == amax_up && r.b == amax);
	cr_assert_eq(r.ulp, 2);
	cr_assert(r.abs_err == (double)amax_up - amax);
	fx_teardown(&f);
}

Test(check, bitwise_first_divergence_wins)
{
	struct fx f;
	lks_check_cfg k;
	lks_check_result r;
	int early, late;

	fx_setup(&f);
	k = check_of(&f, "same");
	early = seq_of(&f, "a", "blocks.0.norm.out", "forward");
	late = seq_of(&f, "a", "head.weight.grad", "backward");
	cr_assert_lt(early, late);
	/* an earlier step wins over an earlier tensor and a lower rank */
	bump_hash(&f, "a", 2, 0, early);
	bump_hash(&f, "a", 1, 1, late);
	r = eval(&f, &k);
	expect_at(&r, 1, 1, "head.weight.grad", LKS_PHASE_BACKWARD);
	/* same step and tensor: the lower rank */
	bump_hash(&f, "b", 1, 0, late);
	r = eval(&f, &k);
	expect_at(&r, 1, 0, "head.weight.grad", LKS_PHASE_BACKWARD);
	/* same step: the earlier tensor, though on a higher rank */
	bump_hash(&f, "b", 1, 1, early);
	r = eval(&f, &k);
	expect_at(&r, 1, 1, "blocks.0.norm.out", LKS_PHASE_FORWARD);
	cr_assert_str_eq(r.field, "hash");
	fx_teardown(&f);
}

/* ---- ranks_agree, recompute ---- */

/* Two replicas that differ: neither is named alone, both are, whichever was changed; and
   an expected rank cannot be matched by a pair. */
Test(check, ranks_agree_two_ranks_name_the_pair)
{
	struct fx f;
	lks_check_cfg k;
	lks_check_result r;
	const char *tname = "blocks.0.mlp.up.weight";
	int seq;
	uint64_t h0;

	fx_setup(&f);
	k = check_of(&f, "replicas");
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	seq = seq_of(&f, "a", tname, "update");
	h0 = stat_of(&f, "a", 1, 0, seq).hash;
	cr_assert_eq(stat_of(&f, "a", 1, 1, seq).hash, h0, "replicas differ before the change");
	bump_hash(&f, "a", 1, 1, seq);
	/* a later step on rank 1 too, and a gradient (not a parameter) at step 0 */
	bump_hash(&f, "a", 2, 1, seq_of(&f, "a", "head.weight", "update"));
	bump_hash(&f, "a", 0, 1, seq_of(&f, "a", "head.weight.grad", "backward"));
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL);
	expect_at(&r, 1, -1, tname, LKS_PHASE_UPDATE);
	cr_assert_str_eq(r.field, "hash");
	cr_assert_eq((uint64_t)r.ia, h0);
	cr_assert_eq((uint64_t)r.ib, h0 + 1);
	cr_assert(strstr(r.message, "rank 0=") && strstr(r.message, "rank 1="), "%s", r.message);
	cr_assert_not_null(strstr(r.message, "ranks 0 and 1 disagree"), "%s", r.message);
	cr_assert_not_null(strstr(r.message, "a golden or a clean run decides"), "%s", r.message);

	/* rank 0 changed instead: the same words, no rank blamed */
	sql(&f, "UPDATE stats SET hash = (SELECT hash FROM stats WHERE run_id = %lld AND step = 1 "
	    "AND rank = 0 AND seq = %d) WHERE run_id = %lld AND step = 1 AND rank = 1 AND seq = %d",
	    (long long)id_of(&f, "a"), seq, (long long)id_of(&f, "a"), seq);
	bump_hash(&f, "a", 1, 0, seq);
	r = eval(&f, &k);
	expect_at(&r, 1, -1, tname, LKS_PHASE_UPDATE);
	cr_assert_not_null(strstr(r.message, "ranks 0 and 1 disagree"), "%s", r.message);

	/* expect = fail: at the step and tensor it is found; a rank it cannot be */
	k.expect_fail = 1;
	k.exp_step = 1;
	snprintf(k.exp_tensor, sizeof(k.exp_tensor), "%s", tname);
	cr_assert_eq(eval(&f, &k).verdict, LKS_VERDICT_EXPECTED_FAIL);
	k.exp_rank = 0;
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL, "%s", r.message);
	cr_assert_not_null(strstr(r.message, "expected to fail at step 1"), "%s", r.message);
	fx_teardown(&f);
}

/* Three replicas: the one that disagrees with the other two is named, rank 0 as well as
   any other; three different values have no majority. Stored as found. */
Test(check, ranks_agree_names_the_rank_against_the_majority)
{
	struct fx f;
	lks_check_cfg k;
	lks_check_result r;
	lks_check_tally t = { 0 };
	struct seen_checks seen = { 0 };
	const char *tname = "blocks.0.mlp.down.weight";
	int seq, i;
	double l2;

	fx_setup_text(&f, three_ranks_text);
	k = check_of(&f, "replicas");
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	seq = seq_of(&f, "a", tname, "update");
	l2 = stat_of(&f, "a", 1, 0, seq).l2;

	/* rank 0 is the faulty one: comparing with rank 0 would blame rank 1 */
	set_stat(&f, "a", 1, 0, seq, "l2", 2.0 * l2);
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL);
	expect_at(&r, 1, 0, tname, LKS_PHASE_UPDATE);
	cr_assert_str_eq(r.field, "l2");
	cr_assert(r.a == 2.0 * l2 && r.b == l2, "%.17g %.17g", r.a, r.b);
	cr_assert(strstr(r.message, "rank 0=") && strstr(r.message, "majority="), "%s", r.message);
	cr_assert_not_null(strstr(r.message, "rank 0 disagrees with the other 2 of 3 ranks"), "%s",
	                   r.message);
	k.expect_fail = 1;
	k.exp_step = 1;
	k.exp_rank = 0;
	snprintf(k.exp_tensor, sizeof(k.exp_tensor), "%s", tname);
	cr_assert_eq(eval(&f, &k).verdict, LKS_VERDICT_EXPECTED_FAIL, "%s", eval(&f, &k).message);
	k.exp_rank = 1;
	cr_assert_eq(eval(&f, &k).verdict, LKS_VERDICT_FAIL);

	/* stored with its rank: rank 0, not "none" */
	cr_assert_eq(lks_check_case(f.s, f.suite, &f.c, f.ids, NULL, NULL, &t), 0, "%s", lks_errmsg());
	cr_assert_eq(t.failed, 1);
	cr_assert_eq(lks_store_get_checks(f.s, f.suite, collect_check, &seen), 0, "%s", lks_errmsg());
	i = find_seen(&seen, "replicas");
	cr_assert_str_eq(seen.verdict[i], "fail");
	cr_assert_eq(seen.step[i], 1);
	cr_assert_eq(seen.rank[i], 0);
	cr_assert_str_eq(seen.tensor[i], tname);

	/* rank 2 alone */
	set_stat(&f, "a", 1, 0, seq, "l2", l2);
	set_stat(&f, "a", 1, 2, seq, "l2", 3.0 * l2);
	k.exp_rank = -1;
	r = eval(&f, &k);
	expect_at(&r, 1, 2, tname, LKS_PHASE_UPDATE);
	cr_assert(r.a == 3.0 * l2 && r.b == l2);

	/* three different values: no majority, no rank, all three named */
	set_stat(&f, "a", 1, 1, seq, "l2", 2.0 * l2);
	r = eval(&f, &k);
	expect_at(&r, 1, -1, tname, LKS_PHASE_UPDATE);
	cr_assert_not_null(strstr(r.message, "no majority among ranks 0 to 2"), "%s", r.message);
	cr_assert(strstr(r.message, "rank 0=") && strstr(r.message, "rank 1="), "%s", r.message);
	fx_teardown(&f);
}

struct ints {
	const int *v;
	int calls;
};

static int same_int(void *arg, int i, int j)
{
	struct ints *x = arg;

	x->calls++;
	return x->v[i] == x->v[j];
}

/* The vote on its own: a value held by more than half, wherever it stands, else -1. */
Test(check, majority_vote)
{
	static const struct { int n, v[7], winner; } cases[] = {
		{ 1, { 5 }, 5 },
		{ 2, { 4, 4 }, 4 },
		{ 2, { 1, 2 }, -1 },              /* a pair that differs has no majority */
		{ 3, { 9, 2, 2 }, 2 },            /* the first is the odd one */
		{ 3, { 2, 9, 2 }, 2 },
		{ 3, { 2, 2, 9 }, 2 },
		{ 3, { 1, 2, 3 }, -1 },
		{ 4, { 1, 1, 2, 2 }, -1 },        /* a tie */
		{ 4, { 1, 2, 2, 2 }, 2 },
		{ 5, { 3, 1, 3, 2, 3 }, 3 },      /* the most common, and more than half */
		{ 5, { 1, 2, 1, 2, 3 }, -1 },     /* the most common, but not more than half */
		{ 7, { 8, 8, 8, 1, 2, 3, 4 }, -1 },
		{ 7, { 1, 8, 2, 8, 3, 8, 8 }, 8 },
	};

	cr_assert_eq(lks_majority(0, same_int, &(struct ints){ NULL, 0 }), -1);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ints x = { cases[i].v, 0 };
		int m = lks_majority(cases[i].n, same_int, &x);

		if (cases[i].winner < 0) {
			cr_assert_eq(m, -1, "case %zu: %d", i, m);
		} else {
			cr_assert(m >= 0 && m < cases[i].n, "case %zu: %d", i, m);
			cr_assert_eq(cases[i].v[m], cases[i].winner, "case %zu", i);
		}
		cr_assert_leq(x.calls, 2 * cases[i].n, "case %zu: %d comparisons", i, x.calls);
	}
}

Test(check, recompute_names_the_row)
{
	struct fx f;
	lks_check_cfg k, neutral;
	lks_check_result r;
	const char *tname = "blocks.0.mlp.act.out";
	int rseq, fseq;
	double l2;

	fx_setup(&f);
	k = check_of(&f, "recomputed");
	neutral = check_of(&f, "ac_neutral");
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	r = eval(&f, &neutral);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "checkpointed vs plain: %s", r.message);

	rseq = seq_of(&f, "ac", tname, "recompute");
	fseq = seq_of(&f, "ac", tname, "forward");
	cr_assert_gt(rseq, fseq);
	l2 = stat_of(&f, "ac", 2, 1, rseq).l2;
	set_stat(&f, "ac", 2, 1, rseq, "l2", 2.0 * l2);
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL);
	expect_at(&r, 2, 1, tname, LKS_PHASE_RECOMPUTE);
	cr_assert_str_eq(r.field, "l2");
	cr_assert(r.a == 2.0 * l2 && r.b == stat_of(&f, "ac", 2, 1, fseq).l2);
	cr_assert(strstr(r.message, "recompute=") && strstr(r.message, "forward="), "%s", r.message);
	/* bitwise leaves recompute rows alone: the plain run has none to hold them against */
	r = eval(&f, &neutral);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	/* a forward row changed: both checks see it */
	set_stat(&f, "ac", 2, 1, rseq, "l2", l2);
	bump_hash(&f, "ac", 1, 0, fseq);
	r = eval(&f, &k);
	expect_at(&r, 1, 0, tname, LKS_PHASE_RECOMPUTE);
	r = eval(&f, &neutral);
	expect_at(&r, 1, 0, tname, LKS_PHASE_FORWARD);
	fx_teardown(&f);
}

/* ---- close ---- */

Test(check, close_tolerances)
{
	static const struct { double rtol, atol; int pass; } tol[] = {
		{ 0.06, 0.0, 1 },   /* 0.1 <= 0.12 */
		{ 0.04, 0.0, 0 },   /* 0.1 > 0.08 */
		{ 0.0, 0.11, 1 },
		{ 0.0, 0.09, 0 },
		{ 0.03, 0.05, 1 },  /* atol and rtol add: 0.05 + 0.06 */
		{ 0.02, 0.05, 0 },  /* 0.05 + 0.04 */
	};
	struct fx f;
	lks_check_cfg k;
	lks_check_result r;

	fx_setup(&f);
	k = check_of(&f, "tracks");
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "FP8 vs BF16 within 2%%: %s", r.message);

	/* b's loss 2.0 on both ranks; a's 2.0 and 2.2: a step's loss is the mean, 2.1 */
	sql(&f, "UPDATE steps SET loss = 2.0 WHERE run_id = %lld", (long long)id_of(&f, "bf"));
	sql(&f, "UPDATE steps SET loss = 2.0 + 0.2 * rank WHERE run_id = %lld", (long long)id_of(&f, "a"));
	for (size_t i = 0; i < sizeof(tol) / sizeof(tol[0]); i++) {
		k.rtol = tol[i].rtol;
		k.atol = tol[i].atol;
		r = eval(&f, &k);
		cr_assert_eq(r.verdict, tol[i].pass ? LKS_VERDICT_PASS : LKS_VERDICT_FAIL,
		             "rtol %g atol %g: %s", k.rtol, k.atol, r.message);
		if (!tol[i].pass) {
			cr_assert_eq(r.step, 0);
			cr_assert_eq(r.rank, -1);
			cr_assert_str_eq(r.field, "loss");
			/* (2.0 + 2.2) / 2 and 2.2 - 2.0 in double: off by rounding only, far below 1e-12 */
			cr_assert_float_eq(r.a, 2.1, 1e-12);
			cr_assert(r.b == 2.0);
			cr_assert_float_eq(r.abs_err, 0.1, 1e-12);
		}
	}
	/* within tolerance until step 2 */
	k.rtol = 0.06;
	k.atol = 0.0;
	cr_assert_eq(sql(&f, "UPDATE steps SET loss = 3.0 WHERE run_id = %lld AND step = 2",
	                 (long long)id_of(&f, "a")), 2);
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL);
	cr_assert_eq(r.step, 2, "%s", r.message);
	cr_assert(r.a == 3.0 && r.b == 2.0, "%g %g", r.a, r.b);
	cr_assert(strstr(r.message, "step 2") && strstr(r.message, "a=3 ") && strstr(r.message, "bf=2 "),
	          "%s", r.message);

	/* grad_norm, global: the same on every rank */
	k = check_of(&f, "tracks");
	snprintf(k.metric, sizeof(k.metric), "grad_norm");
	snprintf(k.b, sizeof(k.b), "b");
	k.rtol = 0.0;
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "identical runs: %s", r.message);
	sql(&f, "UPDATE steps SET grad_norm = grad_norm * 1.01 WHERE run_id = %lld AND step >= 1",
	    (long long)id_of(&f, "b"));
	r = eval(&f, &k);
	cr_assert_eq(r.step, 1, "%s", r.message);
	cr_assert_str_eq(r.field, "grad_norm");
	/* grad_norm * 1.01 rounds once in SQLite: the relative error is 0.01 / 1.01 to ~1e-16 */
	cr_assert_float_eq(r.rel_err, 0.01 / 1.01, 1e-9);
	k.rtol = 0.011;
	cr_assert_eq(eval(&f, &k).verdict, LKS_VERDICT_PASS);

	fx_teardown(&f);
}

/* close on a tensor statistic: per step, tensor and rank, of the tensors the filter names;
   the divergence as bitwise names it, with the tolerance's bound. */
Test(check, close_on_a_tensor_statistic)
{
	struct fx f;
	lks_check_cfg k;
	lks_check_result r;
	const char *tname = "blocks.0.mlp.up.weight.grad";
	int seq, early;
	double l2;

	fx_setup(&f);
	k = check_of(&f, "tracks");
	snprintf(k.b, sizeof(k.b), "b");
	snprintf(k.metric, sizeof(k.metric), "l2");
	snprintf(k.tensors, sizeof(k.tensors), "blocks.*.mlp.up.weight.grad");
	k.rtol = 0.05;
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "identical runs: %s", r.message);

	seq = seq_of(&f, "b", tname, "backward");
	l2 = stat_of(&f, "b", 1, 1, seq).l2;
	set_stat(&f, "b", 1, 1, seq, "l2", 1.1 * l2);
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL);
	expect_at(&r, 1, 1, tname, LKS_PHASE_BACKWARD);
	cr_assert_str_eq(r.field, "l2");
	cr_assert(r.a == l2 && r.b == 1.1 * l2, "%.17g %.17g", r.a, r.b);
	/* |l2 - 1.1 l2| / 1.1 l2 = 0.1 / 1.1, to the rounding of three products (~1e-16) */
	cr_assert_float_eq(r.rel_err, 0.1 / 1.1, 1e-12);
	cr_assert(strstr(r.message, "step 1") && strstr(r.message, tname) && strstr(r.message, "rank 1")
	          && strstr(r.message, "a=") && strstr(r.message, "b=")
	          && strstr(r.message, "rtol 0.05"), "%s", r.message);
	k.rtol = 0.1;  /* 0.1 l2 <= 0.1 * 1.1 l2 */
	cr_assert_eq(eval(&f, &k).verdict, LKS_VERDICT_PASS);

	/* a tensor the filter leaves out is not compared; all tensors without a filter, the
	   first (step, tensor, rank) first */
	early = seq_of(&f, "a", "blocks.0.norm.out", "forward");
	cr_assert_lt(early, seq);
	set_stat(&f, "a", 1, 1, early, "l2", 2.0 * stat_of(&f, "a", 1, 1, early).l2);
	cr_assert_eq(eval(&f, &k).verdict, LKS_VERDICT_PASS, "filtered out");
	k.tensors[0] = 0;
	r = eval(&f, &k);
	expect_at(&r, 1, 1, "blocks.0.norm.out", LKS_PHASE_FORWARD);

	/* amax: a float, ULPs counted in float */
	snprintf(k.metric, sizeof(k.metric), "amax");
	k.rtol = 0.0;
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "amax untouched: %s", r.message);
	set_stat(&f, "a", 2, 0, seq, "amax", nextafterf(stat_of(&f, "a", 2, 0, seq).amax, INFINITY));
	r = eval(&f, &k);
	expect_at(&r, 2, 0, tname, LKS_PHASE_BACKWARD);
	cr_assert_str_eq(r.field, "amax");
	cr_assert_eq(r.value_f32, 1);
	cr_assert_eq(r.ulp, 1);
	fx_teardown(&f);
}

/* A NaN on either side is never close, however wide the tolerance: a run full of NaN fails
   every tensor statistic (it was "unsupported", a pass in effect). */
Test(check, close_nan_is_never_close)
{
	static const char *const metrics[] = { "l2", "amax", "scale" };
	struct fx f;
	lks_check_cfg k;
	lks_check_result r;
	int seq;

	fx_setup(&f);
	k = check_of(&f, "tracks");
	snprintf(k.b, sizeof(k.b), "b");
	k.rtol = 1e30;
	k.atol = 1e30;
	sql(&f, "UPDATE stats SET l2 = NULL, amax = NULL, scale = NULL, nonfinite = 1 WHERE run_id = %lld",
	    (long long)id_of(&f, "a"));
	for (size_t i = 0; i < 3; i++) {
		snprintf(k.metric, sizeof(k.metric), "%s", metrics[i]);
		r = eval(&f, &k);
		cr_assert_eq(r.verdict, LKS_VERDICT_FAIL, "%s: %s", metrics[i], r.message);
		cr_assert_eq(r.step, 0, "%s", metrics[i]);
		cr_assert(isnan(r.a), "%s: %g", metrics[i], r.a);
	}
	/* one NaN, on b's side, at a late step */
	sql(&f, "UPDATE stats SET l2 = (SELECT s.l2 FROM stats s WHERE s.run_id = %lld AND s.step = "
	    "stats.step AND s.rank = stats.rank AND s.seq = stats.seq), nonfinite = 0 WHERE run_id = %lld",
	    (long long)id_of(&f, "b"), (long long)id_of(&f, "a"));
	snprintf(k.metric, sizeof(k.metric), "l2");
	cr_assert_eq(eval(&f, &k).verdict, LKS_VERDICT_PASS, "%s", eval(&f, &k).message);
	seq = seq_of(&f, "a", "head.weight", "update");
	sql(&f, "UPDATE stats SET l2 = NULL WHERE run_id = %lld AND step = 2 AND rank = 1 AND seq = %d",
	    (long long)id_of(&f, "b"), seq);
	r = eval(&f, &k);
	expect_at(&r, 2, 1, "head.weight", LKS_PHASE_UPDATE);
	cr_assert(isnan(r.b));
	fx_teardown(&f);
}

/* scale: only tensors that were quantized have one; a filter that leaves nothing to compare
   is bad input of the case, never a pass. */
Test(check, close_scale_and_filters_that_compare_nothing)
{
	struct fx f;
	lks_check_cfg k;
	lks_check_result r;
	const char *tname = "blocks.0.mlp.up.fwd.x";
	int seq;
	float sc;

	fx_setup(&f);
	k = check_of(&f, "tracks");
	snprintf(k.b, sizeof(k.b), "b");
	snprintf(k.metric, sizeof(k.metric), "scale");
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "tensors without a scale are left out: %s",
	             r.message);
	seq = seq_of(&f, "a", tname, "forward");
	sc = stat_of(&f, "a", 0, 1, seq).scale;
	cr_assert(isfinite(sc) && sc > 0.0f, "%g", sc);
	set_stat(&f, "b", 0, 1, seq, "scale", 2.0 * sc);
	r = eval(&f, &k);
	expect_at(&r, 0, 1, tname, LKS_PHASE_FORWARD);
	cr_assert_str_eq(r.field, "scale");
	cr_assert(r.a == sc && r.b == 2.0f * sc);
	/* a scale lost on one side (NaN where the other run quantized) is a divergence */
	set_stat(&f, "b", 0, 1, seq, "scale", sc);
	sql(&f, "UPDATE stats SET scale = NULL WHERE run_id = %lld AND step = 1 AND rank = 0 AND seq = %d",
	    (long long)id_of(&f, "a"), seq);
	r = eval(&f, &k);
	expect_at(&r, 1, 0, tname, LKS_PHASE_FORWARD);

	/* weight gradients have no scale: nothing to compare */
	snprintf(k.tensors, sizeof(k.tensors), "*.weight.grad");
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL);
	cr_assert_eq(r.bad_input, LKS_BAD_CASE);
	cr_assert_not_null(strstr(r.message, "no tensor with a scale"), "%s", r.message);

	/* a pattern that names no tensor, or only tensors b does not have */
	snprintf(k.metric, sizeof(k.metric), "l2");
	snprintf(k.tensors, sizeof(k.tensors), "blocks.9.*");
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL);
	cr_assert_eq(r.bad_input, LKS_BAD_CASE);
	cr_assert_not_null(strstr(r.message, "tensors = blocks.9.* names none of the"), "%s", r.message);
	k.expect_fail = 1;  /* whatever is expected: nothing was compared */
	cr_assert_eq(eval(&f, &k).verdict, LKS_VERDICT_FAIL);
	k.expect_fail = 0;
	snprintf(k.b, sizeof(k.b), "bf");
	snprintf(k.tensors, sizeof(k.tensors), "*.fwd.x");
	r = eval(&f, &k);
	cr_assert_eq(r.bad_input, LKS_BAD_CASE);
	cr_assert_not_null(strstr(r.message, "none of which run 'bf' traced"), "%s", r.message);
	fx_teardown(&f);
}

/* The metric's name is checked where it is written; the filter only where it can act. */
Test(check, close_metric_and_filter_validated_at_parse_time)
{
	static const struct { const char *keys, *says; } bad[] = {
		{ "metric = lsos\n", ":17: unknown metric 'lsos' in [check c] (loss, grad_norm, l2, "
		  "amax, scale)" },
		{ "metric = loss\ntensors = blocks.*\n", ":13: check 'c': tensors = blocks.* chooses the "
		  "tensors of a close check on a tensor statistic, not of close on loss" },
		/* a filter that no name of the model matches (up, not upp; one layer, block 0) */
		{ "metric = l2\ntensors = blocks.*.mlp.upp.*\n", ":13: check 'c': tensors = "
		  "blocks.*.mlp.upp.* names no tensor the model traces" },
		{ "metric = l2\ntensors = blocks.1.*\n", ":13: check 'c': tensors = blocks.1.* names "
		  "no tensor the model traces" },
		/* an expected divergence at a tensor the model does not have */
		{ "metric = l2\nexpect = fail\ntensor = blocks.0.mlp.up.outt\n", ":13: check 'c': "
		  "tensor = blocks.0.mlp.up.outt is no tensor the model traces" },
	};
	static const char head[] =
		"[case]\nsteps = 2\nworld_size = 2\n"
		"[model]\nvocab = 32\nhidden = 16\nffn = 32\nlayers = 1\nseq = 4\nbatch = 1\n";
	char dir[] = "/tmp/lks-test-metric-XXXXXX", path[128], text[1024];
	const char *sets[1];
	lks_case c;
	FILE *cf;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/m.ini", dir);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "%s[run a]\nrecipe = bf16\n[check c]\nkind = close\n"
		         "a = a\nb = a2\n%s[run a2]\nrecipe = bf16\n", head, bad[i].keys);
		cf = fopen(path, "w");
		cr_assert_not_null(cf);
		fputs(text, cf);
		fclose(cf);
		cr_assert_eq(lks_case_load(path, NULL, 0, &c), -1, "%s", bad[i].keys);
		cr_assert_not_null(strstr(lks_errmsg(), bad[i].says), "%s", lks_errmsg());
	}
	/* a good file, then a misspelt metric by --set, and rank on a 2-rank ranks_agree */
	/* filters that name what the model traces: parameters, FP8 operands (traced by FP8
	   runs), gradients */
	for (size_t i = 0; i < 3; i++) {
		static const char *const good[] = { "*.weight", "blocks.0.mlp.down.fwd.?",
		                                    "blocks.0.mlp.up.weight.grad" };

		snprintf(text, sizeof(text), "%s[run a]\nrecipe = bf16\n[check c]\nkind = close\n"
		         "a = a\nb = a2\nmetric = l2\ntensors = %s\n[run a2]\nrecipe = fp8_rowwise\n",
		         head, good[i]);
		cf = fopen(path, "w");
		cr_assert_not_null(cf);
		fputs(text, cf);
		fclose(cf);
		cr_assert_eq(lks_case_load(path, NULL, 0, &c), 0, "%s: %s", good[i], lks_errmsg());
		lks_case_release(&c);
	}
	snprintf(text, sizeof(text), "%s[run a]\nrecipe = bf16\n[run a2]\nrecipe = bf16\n"
	         "[check c]\nkind = close\na = a\nb = a2\nmetric = amax\ntensors = *.weight\n"
	         "[check r]\nkind = ranks_agree\na = a\nexpect = fail\n", head);
	cf = fopen(path, "w");
	cr_assert_not_null(cf);
	fputs(text, cf);
	fclose(cf);
	cr_assert_eq(lks_case_load(path, NULL, 0, &c), 0, "%s", lks_errmsg());
	cr_assert_str_eq(c.checks[0].tensors, "*.weight");
	lks_case_release(&c);
	sets[0] = "check.c.metric=l2x";
	cr_assert_eq(lks_case_load(path, sets, 1, &c), -1);
	cr_assert_not_null(strstr(lks_errmsg(), "unknown metric 'l2x'"), "%s", lks_errmsg());
	sets[0] = "check.r.rank=0";
	cr_assert_eq(lks_case_load(path, sets, 1, &c), -1);
	cr_assert_not_null(strstr(lks_errmsg(), "ranks_agree on 2 ranks names no single rank"), "%s",
	                   lks_errmsg());
	unlink(path);
	rmdir(dir);
}

/* ---- finite ---- */

Test(check, finite_names_the_first_nonfinite)
{
	struct fx f;
	lks_check_cfg k;
	lks_check_result r;
	const char *tname = "blocks.0.mlp.up.out.grad";
	int seq;

	fx_setup(&f);
	k = check_of(&f, "finite");
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	seq = seq_of(&f, "a", tname, "backward");
	cr_assert_eq(sql(&f, "UPDATE stats SET nonfinite = 3 WHERE run_id = %lld AND step = 1 "
	                 "AND rank = 1 AND seq = %d", (long long)id_of(&f, "a"), seq), 1);
	sql(&f, "UPDATE stats SET nonfinite = 1 WHERE run_id = %lld AND step = 2 AND seq = 0",
	    (long long)id_of(&f, "a"));
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL);
	expect_at(&r, 1, 1, tname, LKS_PHASE_BACKWARD);
	cr_assert_str_eq(r.field, "nonfinite");
	cr_assert_eq(r.ia, 3);
	cr_assert_not_null(strstr(r.message, "nonfinite 3"), "%s", r.message);

	/* a NaN loss (stored as NULL) with every tensor finite */
	sql(&f, "UPDATE stats SET nonfinite = 0 WHERE run_id = %lld", (long long)id_of(&f, "a"));
	cr_assert_eq(eval(&f, &k).verdict, LKS_VERDICT_PASS);
	sql(&f, "UPDATE steps SET loss = NULL WHERE run_id = %lld AND step = 2 AND rank = 1",
	    (long long)id_of(&f, "a"));
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL);
	cr_assert_eq(r.step, 2);
	cr_assert_eq(r.rank, 1);
	cr_assert_str_eq(r.tensor, "");
	cr_assert_str_eq(r.field, "loss");
	cr_assert(isnan(r.a));
	fx_teardown(&f);
}

/* ---- expect = fail, unexpected pass, skipped ---- */

Test(check, expect_fail_verdicts)
{
	struct fx f;
	lks_check_cfg k;
	lks_check_result r;
	lks_check_tally t = { 0 };
	struct seen_checks seen = { 0 };
	const char *tname = "final_norm.in.grad";
	int64_t ids[8];
	int seq;

	fx_setup(&f);
	seq = seq_of(&f, "a", tname, "backward");
	bump_hash(&f, "b", 1, 1, seq);
	k = check_of(&f, "same");
	k.expect_fail = 1;
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_EXPECTED_FAIL, "no location given: %s", r.message);
	expect_at(&r, 1, 1, tname, LKS_PHASE_BACKWARD);
	k.exp_step = 1;
	k.exp_rank = 1;
	snprintf(k.exp_tensor, sizeof(k.exp_tensor), "%s", tname);
	cr_assert_eq(eval(&f, &k).verdict, LKS_VERDICT_EXPECTED_FAIL);
	k.exp_step = 2;
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL, "wrong step");
	cr_assert(strstr(r.message, "expected") && strstr(r.message, "step 2"), "%s", r.message);
	k.exp_step = 1;
	k.exp_rank = 0;
	cr_assert_eq(eval(&f, &k).verdict, LKS_VERDICT_FAIL, "wrong rank");
	k.exp_rank = -1;
	snprintf(k.exp_tensor, sizeof(k.exp_tensor), "head.weight.grad");
	cr_assert_eq(eval(&f, &k).verdict, LKS_VERDICT_FAIL, "wrong tensor");
	snprintf(k.exp_tensor, sizeof(k.exp_tensor), "%s", tname);
	cr_assert_eq(eval(&f, &k).verdict, LKS_VERDICT_EXPECTED_FAIL, "step and tensor only");

	k = check_of(&f, "ac_neutral");
	k.expect_fail = 1;
	r = eval(&f, &k);
	cr_assert_eq(r.verdict, LKS_VERDICT_UNEXPECTED_PASS);
	cr_assert_eq(r.failed, 0);

	/* counted over a case: expected failure apart, unexpected pass as a failure */
	for (int i = 0; i < f.c.nchecks; i++) {
		lks_check_cfg *c = &f.c.checks[i];

		if (!strcmp(c->name, "same")) {
			c->expect_fail = 1;
			c->exp_step = 1;
			snprintf(c->exp_tensor, sizeof(c->exp_tensor), "%s", tname);
		} else if (!strcmp(c->name, "replicas")) {
			c->expect_fail = 1;
		}
	}
	cr_assert_eq(lks_check_case(f.s, f.suite, &f.c, f.ids, NULL, NULL, &t), 0, "%s", lks_errmsg());
	cr_assert_eq(t.total, 7);
	cr_assert_eq(t.expected_fail, 1);
	cr_assert_eq(t.failed, 1);
	cr_assert_eq(t.passed, 4);
	cr_assert_eq(t.unsupported, 1);
	cr_assert_eq(lks_store_get_checks(f.s, f.suite, collect_check, &seen), 0);
	cr_assert_str_eq(seen.verdict[find_seen(&seen, "same")], "expected_fail");
	cr_assert_eq(seen.step[find_seen(&seen, "same")], 1);
	cr_assert_str_eq(seen.verdict[find_seen(&seen, "replicas")], "unexpected_pass");

	/* run b not run: the checks that need it are skipped, the others evaluated */
	memcpy(ids, f.ids, sizeof(ids));
	ids[lks_case_run(&f.c, "b") - f.c.runs] = 0;
	memset(&t, 0, sizeof(t));
	cr_assert_eq(lks_check_case(f.s, f.suite, &f.c, ids, NULL, NULL, &t), 0, "%s", lks_errmsg());
	cr_assert_eq(t.skipped, 1);
	cr_assert_eq(t.total, 7);
	cr_assert_eq(t.failed, 1, "the unexpected pass of 'replicas' again");
	fx_teardown(&f);
}

/* A string read back into a check's field: NULL is none, which the case keeps as "";
   "" itself is never stored. */
static void put_text(char *dst, size_t size, const char *stored, const char *what)
{
	cr_assert(!stored || stored[0], "%s: \"\" stored for none", what);
	snprintf(dst, size, "%s", stored ? stored : "");
}

struct params_seen {
	int n;
	lks_check_cfg k[8];       /* each verdict's parameters, put back into a check */
};

static int collect_params(void *arg, const lks_check_rec *r)
{
	struct params_seen *s = arg;
	lks_check_cfg *k = &s->k[s->n++];

	cr_assert_lt(s->n, 8);
	cr_assert_not_null(r->params.expect, "'%s' stored without its parameters", r->check_name);
	snprintf(k->name, sizeof(k->name), "%s", r->check_name);
	cr_assert_eq(lks_check_kind_parse(r->kind, &k->kind), 0, "%s", r->kind);
	put_text(k->a, sizeof(k->a), r->params.a, "a");
	put_text(k->b, sizeof(k->b), r->params.b, "b");
	put_text(k->metric, sizeof(k->metric), r->params.metric, "metric");
	put_text(k->tensors, sizeof(k->tensors), r->params.tensors, "tensors");
	put_text(k->exp_tensor, sizeof(k->exp_tensor), r->params.exp_tensor, "tensor");
	k->rtol = r->params.rtol;
	k->atol = r->params.atol;
	k->floor_db = r->params.floor_db;
	k->expect_fail = strcmp(r->params.expect, "fail") == 0;
	k->exp_step = r->params.exp_step;
	k->exp_rank = r->params.exp_rank;
	return 0;
}

/* A check's parameters are stored with its verdict, as the case has them (its defaults
   included), so that the report and diff read them back instead of parsing the case; a
   check not run (skipped) keeps them too. */
Test(check, verdicts_stored_with_their_parameters)
{
	static const char text[] =
		"[case]\nsteps = 3\nseed = 7\nworld_size = 2\n"
		"[model]\nvocab = 32\nhidden = 16\nffn = 32\nlayers = 1\nseq = 4\nbatch = 2\n"
		"[run a]\nrecipe = fp8_rowwise\n"
		"[run b]\nrecipe = bf16\n"
		"[check tracks]\nkind = close\na = a\nb = b\nmetric = l2\n"
		"tensors = blocks.*.mlp.up.weight.grad\nrtol = 0.05\natol = 1e-7\n"
		"[check loss]\nkind = close\na = a\nb = b\n"
		"[check same]\nkind = bitwise\na = a\nb = b\nexpect = fail\nstep = 1\nrank = 1\n"
		"tensor = final_norm.in.grad\n"
		"[check sq]\nkind = sqnr\na = a\nb = b\nfloor_db = 20.5\n"
		"[check finite]\nkind = finite\na = a\n";
	char dir[] = "/tmp/lks-test-check-XXXXXX", path[128], cmd[160];
	int64_t ids[2] = { 0, 0 }, suite;
	struct params_seen seen = { 0 };
	lks_check_tally t = { 0 };
	lks_store *s;
	lks_case c;
	FILE *f;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/params.ini", dir);
	cr_assert_not_null(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
	cr_assert_eq(lks_case_load(path, NULL, 0, &c), 0, "%s", lks_errmsg());
	snprintf(path, sizeof(path), "%s/t.db", dir);
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_begin_suite(s, "test", &suite), 0, "%s", lks_errmsg());
	/* no run stored: every check is skipped, and stored with its parameters */
	cr_assert_eq(lks_check_case(s, suite, &c, ids, NULL, NULL, &t), 0, "%s", lks_errmsg());
	cr_assert_eq(t.skipped, c.nchecks);
	cr_assert_eq(lks_store_get_checks(s, suite, collect_params, &seen), 0, "%s", lks_errmsg());
	cr_assert_eq(seen.n, c.nchecks);
	for (int i = 0; i < c.nchecks; i++) {
		const lks_check_cfg *want = &c.checks[i], *got = &seen.k[i];

		cr_assert_str_eq(got->name, want->name);
		cr_assert_eq(got->kind, want->kind, "%s", want->name);
		cr_assert_str_eq(got->a, want->a, "%s", want->name);
		cr_assert_str_eq(got->b, want->b, "%s", want->name);
		cr_assert_str_eq(got->metric, want->metric, "%s", want->name);
		cr_assert_str_eq(got->tensors, want->tensors, "%s", want->name);
		cr_assert_str_eq(got->exp_tensor, want->exp_tensor, "%s", want->name);
		/* bit for bit: a tolerance read back is the one the check used */
		cr_assert_eq(memcmp(&got->rtol, &want->rtol, sizeof(double)), 0, "%s", want->name);
		cr_assert_eq(memcmp(&got->atol, &want->atol, sizeof(double)), 0, "%s", want->name);
		cr_assert_eq(memcmp(&got->floor_db, &want->floor_db, sizeof(double)), 0, "%s",
		             want->name);
		cr_assert_eq(got->expect_fail, want->expect_fail, "%s", want->name);
		cr_assert_eq(got->exp_step, want->exp_step, "%s", want->name);
		cr_assert_eq(got->exp_rank, want->exp_rank, "%s", want->name);
	}
	/* what the case gave, seen through the comparison above: not all defaults */
	cr_assert_str_eq(seen.k[1].metric, "loss", "the default metric of close");
	cr_assert(seen.k[2].expect_fail && seen.k[2].exp_rank == 1 && seen.k[0].rtol == 0.05
	          && seen.k[3].floor_db == 20.5);
	lks_store_close(s);
	lks_case_release(&c);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}
