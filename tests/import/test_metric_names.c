/*
 * test_metric_names.c: an imported run of tens of thousands of metric names (import.c,
 * name_index.c, trace_store_blocks.c, run_metrics.c, export.c). An import stores at most
 * LKS_IMPORT_MAX_NAMES, as many as a run read back holds: the name one too many is bad
 * input at its file:line, the same whether the file is read by one reader or in parts at
 * once, or followed (a golden file, which has no lines, names the file), and nothing of
 * that import is stored; a run of exactly that many reads back whole. Reading names back
 * finds them by hash: strcmp is wrapped (the link's -Wl,--wrap=strcmp,
 * tests/import/CMakeLists.txt) and its calls counted, so that the test shows compares growing as
 * n log n with the names (a linear look per name grew as n^2), not seconds. The logs are
 * jsonl written here: lines of a few names every line has, then lines of 30 names each
 * new.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run_bin.h"
#include "store_fixture.h"
#include "harness/import/import.h"
#include "harness/store/run.h"
#include "kernels/err.h"

/* ---- strcmp, counted ---- */

int __real_strcmp(const char *a, const char *b);
int __wrap_strcmp(const char *a, const char *b);

static long compares;

int __wrap_strcmp(const char *a, const char *b)
{
	compares++;
	return __real_strcmp(a, b);
}

/* ---- the logs ---- */

#define SAME 30     /* names every line of the first part has, "loss" too */
#define NEW 30      /* new names on each line after */

/* The names of a log of same lines (loss and c_0 .. c_29) then new names, NEW a line
   (n<line>_<k>, the last line fewer): names[i] the i-th distinct name as read. */
struct names_log {
	long same, lines;           /* lines of each part */
	long nnew;
};

static void new_name(char *buf, size_t n, long line, int k)
{
	snprintf(buf, n, "n%ld_%d", line, k);
}

/* The log at path: same lines (none: 0) and then nnew new names. */
static struct names_log write_names(const char *path, long same, long nnew)
{
	struct names_log g = { same, same + (nnew + NEW - 1) / NEW, nnew };
	FILE *f = fopen(path, "w");
	long line = 1;

	cr_assert_not_null(f);
	for (; line <= same; line++) {
		fprintf(f, "{\"step\": %ld, \"loss\": %ld.25", line, line);
		for (int k = 0; k < SAME; k++)
			fprintf(f, ", \"c_%d\": %d.5", k, k);
		fputs("}\n", f);
	}
	for (long done = 0; done < nnew; line++) {
		fprintf(f, "{\"step\": %ld", line);
		for (int k = 0; k < NEW && done < nnew; k++, done++) {
			char name[32];

			new_name(name, sizeof(name), line, k);
			fprintf(f, ", \"%s\": %d.75", name, k);
		}
		fputs("}\n", f);
	}
	cr_assert_eq(fclose(f), 0);
	return g;
}

/* The distinct names g holds. */
static long distinct(const struct names_log *g)
{
	return (g->same ? 1 + SAME : 0) + g->nnew;
}

/* The line and name of g's name of index i (0: the first read) among the new ones. */
static long line_of_new(const struct names_log *g, long i, char *name, size_t n)
{
	long j = i - (g->same ? 1 + SAME : 0);
	long line = g->same + 1 + j / NEW;

	new_name(name, n, line, (int)(j % NEW));
	return line;
}

static lks_import_opts opts(const char *run)
{
	return (lks_import_opts){ .fmt = lks_import_format_find("jsonl"), .case_name = "c",
	                          .run_name = run };
}

/* ---- too many names ---- */

/* What the refusal of g's name one too many must say: "'path':line: metric 'name'" and
   the limit. */
static void expect_refusal(const char *msg, const char *path, const struct names_log *g)
{
	char name[32], want[600], limit[32];
	long line = line_of_new(g, LKS_IMPORT_MAX_NAMES, name, sizeof(name));

	snprintf(want, sizeof(want), "'%s':%ld: metric '%s' ", path, line, name);
	snprintf(limit, sizeof(limit), "at most %d metric names", LKS_IMPORT_MAX_NAMES);
	cr_assert(strstr(msg, want), "want \"%s\" in: %s", want, msg);
	cr_assert(strstr(msg, limit), "want \"%s\" in: %s", limit, msg);
}

/* A test's files in its mkdtemp folder: the database, a small log and the log of many
   names. */
struct files {
	char db[512], small[512], log[512];
};

/* A new store (in a new folder) holding a good run "kept" (a few names), into which the
   test imports more. */
static lks_store *store_with_a_run(struct files *w, int64_t *kept)
{
	lks_import_opts o = opts("kept");
	const char *small = w->small;
	lks_import_result res;
	lks_store *s;

	mkdir_tmp();
	path_in_tmp(w->db, sizeof(w->db), "names.db");
	path_in_tmp(w->small, sizeof(w->small), "small.jsonl");
	path_in_tmp(w->log, sizeof(w->log), "many.jsonl");
	write_names(small, 3, 2 * NEW);
	cr_assert_eq(lks_store_open(w->db, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_import_files(s, &o, &small, 1, &res), 0, "%s", lks_errmsg());
	*kept = res.run_id;
	return s;
}

static int count_row(void *arg, const lks_metric_row *row)
{
	(void)row;
	++*(long *)arg;
	return 0;
}

/* The store holds run kept whole (3 same lines, 2 of new names) and no other. */
static void expect_only_kept(lks_store *s, int64_t kept)
{
	long rows = 0;

	cr_assert_eq(sql_int(s, "SELECT count(*) FROM runs"), 1, "no other run");
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM import_blocks WHERE run_id NOT IN (SELECT "
	                        "run_id FROM runs)"), 0, "no block of another run");
	cr_assert_eq(lks_store_get_metrics(s, kept, NULL, count_row, &rows), 0, "%s", lks_errmsg());
	cr_assert_eq(rows, 3 * (1 + SAME) + 2 * NEW);
}

/* The name past LKS_IMPORT_MAX_NAMES is refused at its own line (not at the end of the
   file, which goes on with more), by one reader and by a file read in 2, 3 and 5 parts
   (2: the second half holds more than the limit by itself, and is read again by one
   reader; 3, 5: the crossing is found where the parts join); the store keeps the run it
   had and nothing of the refused import. */
Test(metric_names, an_import_refuses_the_name_one_too_many_at_its_line)
{
	const int parts[] = { 1, 2, 3, 5 };
	struct files w;
	const char *file = w.log;
	struct names_log g;
	int64_t kept;
	lks_store *s = store_with_a_run(&w, &kept);

	g = write_names(w.log, 3000, 2300L * NEW);
	cr_assert_gt(distinct(&g), LKS_IMPORT_MAX_NAMES + 1000, "the file goes on past the limit");
	for (size_t t = 0; t < sizeof(parts) / sizeof(parts[0]); t++) {
		lks_import_opts o = opts("many");
		lks_import_result res;
		char n[16];

		snprintf(n, sizeof(n), "%d", parts[t]);
		setenv("LKS_IMPORT_PARTS", n, 1);
		setenv("LKS_IMPORT_SPLIT_MIN", parts[t] > 1 ? "1" : "1000000000", 1);
		cr_assert_eq(lks_import_files(s, &o, &file, 1, &res), LKS_E_BAD_INPUT,
		             "%d parts: %s", parts[t], lks_errmsg());
		expect_refusal(lks_errmsg(), w.log, &g);
		expect_only_kept(s, kept);
	}
	unsetenv("LKS_IMPORT_PARTS");
	unsetenv("LKS_IMPORT_SPLIT_MIN");
	lks_store_close(s);
	rm_tmp();
}

/* A megatron-golden file has no lines: the refusal names the file and the metric. Metric
   g<i> holds one value, at step i + 1, so the records come one metric each, in order. */
Test(metric_names, a_golden_file_refuses_the_name_one_too_many_by_file)
{
	char db[512], path[512], want[600];
	lks_import_opts o = { .fmt = lks_import_format_find("megatron-golden"), .case_name = "c",
	                      .run_name = "golden" };
	const char *file = path;
	lks_import_result res;
	lks_store *s;
	FILE *f;

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "golden.db");
	path_in_tmp(path, sizeof(path), "golden.json");
	cr_assert_not_null(f = fopen(path, "w"));
	fputs("{", f);
	for (long i = 0; i <= LKS_IMPORT_MAX_NAMES; i++)
		fprintf(f, "%s\"g%ld\": {\"start_step\": %ld, \"end_step\": %ld, \"step_interval\": 1, "
		        "\"values\": [0.5]}", i ? ", " : "", i, i, i + 1);
	fputs("}\n", f);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(lks_store_open(db, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_import_files(s, &o, &file, 1, &res), LKS_E_BAD_INPUT, "%s", lks_errmsg());
	snprintf(want, sizeof(want), "'%s': metric 'g%d' is one name too many", path,
	         LKS_IMPORT_MAX_NAMES);
	cr_assert(strstr(lks_errmsg(), want), "want \"%s\" in: %s", want, lks_errmsg());
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM runs"), 0, "nothing stored");
	lks_store_close(s);
	rm_tmp();
}

static int on_step(void *arg, const lks_import_rec *recs, int n)
{
	(void)arg, (void)recs, (void)n;
	return 0;
}

/* A followed log stops at the same line; the steps stored before it stay, the run is
   incomplete and reads back (every name it holds within the limit). */
Test(metric_names, a_followed_import_stops_at_the_name_one_too_many)
{
	char db[512], log[512], name[32];
	lks_import_opts o = opts("followed");
	lks_import_result res;
	struct names_log g;
	lks_stored_run r;
	lks_store *s;
	FILE *f;
	long line;

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "follow.db");
	path_in_tmp(log, sizeof(log), "many.jsonl");
	g = write_names(log, 10, (long)LKS_IMPORT_MAX_NAMES + 5 * NEW);
	line = line_of_new(&g, LKS_IMPORT_MAX_NAMES, name, sizeof(name));
	cr_assert_eq(lks_store_open(db, &s), 0, "%s", lks_errmsg());
	cr_assert_not_null(f = fopen(log, "r"));
	cr_assert_eq(lks_import_follow(s, &o, log, f, -1, on_step, NULL, NULL, &res),
	             LKS_E_BAD_INPUT, "%s", lks_errmsg());
	fclose(f);
	expect_refusal(lks_errmsg(), log, &g);
	cr_assert_eq(res.steps, line - 1, "every step before the line stored");
	lks_stored_run_init(&r);
	cr_assert_eq(lks_stored_run_load(s, res.run_id, LKS_LOAD_TRACE, &r), 0, "%s", lks_errmsg());
	cr_assert_str_eq(r.status, "incomplete");
	cr_assert_leq(r.nm, LKS_IMPORT_MAX_NAMES);
	cr_assert_eq(lks_stored_run_metric_find(&r, name), -1, "the name refused is not stored");
	lks_stored_run_release(&r);
	lks_store_close(s);
	rm_tmp();
}

/* lockstep import exits 2 with the message; export of the run the database had still
   reads it. */
Test(metric_names, lockstep_import_exits_2_and_the_database_keeps_its_runs)
{
	char args[2048], out[4096];
	struct files w;
	struct names_log g;
	int64_t kept;
	lks_store *s = store_with_a_run(&w, &kept);

	lks_store_close(s);
	g = write_names(w.log, 0, (long)LKS_IMPORT_MAX_NAMES + 3 * NEW);
	snprintf(args, sizeof(args), "import --quiet --format jsonl '%s' --case c --run many "
	         "--db '%s'", w.log, w.db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	expect_refusal(out, w.log, &g);
	snprintf(args, sizeof(args), "export --format jsonl c/kept --db '%s' -o /dev/null", w.db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_eq(lks_store_open(w.db, &s), 0, "%s", lks_errmsg());
	expect_only_kept(s, kept);
	lks_store_close(s);
	rm_tmp();
}

/* ---- exactly the limit, read back ---- */

/* Rows read back in order: each record's metrics by name (strcmp order), every value the
   log wrote. */
struct readback {
	long rows;
	int step;
	char last[LKS_IMPORT_NAME_MAX];
	int bad;
};

static int check_row(void *arg, const lks_metric_row *row)
{
	struct readback *b = arg;
	double want;

	if (row->step != b->step)
		b->last[0] = 0;
	b->step = row->step;
	if (b->last[0] && __real_strcmp(b->last, row->name) >= 0)
		b->bad++;  /* not by name */
	snprintf(b->last, sizeof(b->last), "%s", row->name);
	if (row->name[0] == 'n')
		want = atoi(strchr(row->name, '_') + 1) + 0.75;
	else if (row->name[0] == 'c')
		want = atoi(row->name + 2) + 0.5;
	else
		want = row->step + 0.25;
	b->bad += row->value != want;
	b->rows++;
	return 0;
}

/* A run of LKS_IMPORT_MAX_NAMES names imports, and reads back whole: every row, in order,
   as the log wrote it, and every name found in the stored run. */
Test(metric_names, a_run_of_exactly_the_limit_reads_back_whole)
{
	char db[512], log[512];
	const char *file = log;
	lks_import_opts o = opts("full");
	lks_import_result res;
	struct names_log g;
	struct readback b = { .step = -1 };
	lks_stored_run r;
	lks_store *s;

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "full.db");
	path_in_tmp(log, sizeof(log), "full.jsonl");
	g = write_names(log, 5, (long)LKS_IMPORT_MAX_NAMES - (1 + SAME));
	cr_assert_eq(distinct(&g), LKS_IMPORT_MAX_NAMES);
	cr_assert_eq(lks_store_open(db, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_import_files(s, &o, &file, 1, &res), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_get_metrics(s, res.run_id, NULL, check_row, &b), 0, "%s",
	             lks_errmsg());
	cr_assert_eq(b.rows, g.same * (1 + SAME) + g.nnew);
	cr_assert_eq(b.bad, 0, "rows out of order or with other values");
	lks_stored_run_init(&r);
	cr_assert_eq(lks_stored_run_load(s, res.run_id, LKS_LOAD_TRACE, &r), 0, "%s", lks_errmsg());
	cr_assert_eq(r.nm, LKS_IMPORT_MAX_NAMES);
	for (long i = 1 + SAME; i < LKS_IMPORT_MAX_NAMES; i += 997) {
		char name[32];
		long line = line_of_new(&g, i, name, sizeof(name));
		int m = lks_stored_run_metric_find(&r, name);
		const double *v;

		cr_assert_geq(m, 0, "%s", name);
		cr_assert_str_eq(r.mnames[m], name);
		cr_assert_not_null(v = lks_stored_run_metric(&r, (int)line, 0, m), "%s", name);
		cr_assert_eq(*v, atoi(strchr(name, '_') + 1) + 0.75);
	}
	lks_stored_run_release(&r);
	lks_store_close(s);
	rm_tmp();
}

/* ---- the compares a read makes ---- */

/* What is read back: the rows by (step, rank, name) as export reads them, a stored run's
   load, and each name found in it; or a golden file written (lockstep export --format
   megatron-golden: a series a metric). */
enum reading { READ_BACK, EXPORT_GOLDEN };

static void read_back(lks_store *s, int64_t run, const struct names_log *g)
{
	struct readback b = { .step = -1 };
	lks_stored_run r;
	char name[32];

	cr_assert_eq(lks_store_get_metrics(s, run, NULL, check_row, &b), 0, "%s", lks_errmsg());
	cr_assert_eq(b.rows, g->nnew);
	cr_assert_eq(b.bad, 0);
	lks_stored_run_init(&r);
	cr_assert_eq(lks_stored_run_load(s, run, LKS_LOAD_TRACE, &r), 0, "%s", lks_errmsg());
	cr_assert_eq(r.nm, g->nnew);
	for (long i = 0; i < g->nnew; i++) {
		int m;

		line_of_new(g, i, name, sizeof(name));
		m = lks_stored_run_metric_find(&r, name);
		cr_assert(m >= 0 && !__real_strcmp(r.mnames[m], name), "%s", name);
	}
	lks_stored_run_release(&r);
}

static void export_golden(lks_store *s, int64_t run, const struct names_log *g)
{
	FILE *out = fopen("/dev/null", "w");
	long written = 0;

	cr_assert_not_null(out);
	cr_assert_eq(lks_export_run(s, run, LKS_IMPORT_MEGATRON_GOLDEN, 0, out, &written), 0, "%s",
	             lks_errmsg());
	fclose(out);
	cr_assert_eq(written, g->nnew, "a series a metric");
}

/* The strcmp calls of reading back an import of n new names as how says. */
static long compares_to_read(long n, enum reading how)
{
	char db[512], log[512];
	const char *file = log;
	lks_import_opts o = opts("r");
	lks_import_result res;
	struct names_log g;
	lks_store *s;
	long before;

	path_in_tmp(db, sizeof(db), "count.db");
	path_in_tmp(log, sizeof(log), "count.jsonl");
	unlink(db);
	g = write_names(log, 0, n);
	cr_assert_eq(lks_store_open(db, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_import_files(s, &o, &file, 1, &res), 0, "%s", lks_errmsg());
	before = compares;
	(how == READ_BACK ? read_back : export_golden)(s, res.run_id, &g);
	before = compares - before;
	lks_store_close(s);
	return before;
}

/* Twice the names, about twice the compares: a sort's n log n (the ratio near 2.2 here)
   and a few a name, where a linear look per name (and an insertion sort by name) made it
   four times as many. */
static void expect_n_log_n(enum reading how)
{
	long n = 6000, once, twice;

	mkdir_tmp();
	once = compares_to_read(n, how);
	twice = compares_to_read(2 * n, how);
	cr_assert_gt(once, n, "the wrap counts the store's compares");
	cr_assert_lt((double)twice / (double)once, 3.0, "%ld compares for %ld names, %ld for %ld",
	             once, n, twice, 2 * n);
	rm_tmp();
}

Test(metric_names, reading_back_compares_names_as_n_log_n)
{
	expect_n_log_n(READ_BACK);
}

Test(metric_names, a_golden_export_compares_names_as_n_log_n)
{
	expect_n_log_n(EXPORT_GOLDEN);
}
