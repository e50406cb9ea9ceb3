/*
 * test_export.c: 'lockstep export' as a user meets it, and the round trip it promises:
 * import(export(run)) stores the values of run bit for bit, for jsonl and for Megatron's
 * golden values, for imported runs (the fixtures in tests/import/data/, and a log of doubles of
 * random bit patterns written here) and for a run lockstep trained. Runs the built program
 * (LKS_BIN) in a mkdtemp folder and reads the database back through the store.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#include "run_bin.h"
#include "store_fixture.h"
#include "tiny_model.h"
#include "harness/store/run.h"
#include "harness/store/trace_store.h"
#include "kernels/err.h"

struct rows {
	int n, cap;
	lks_metric_row *row;
};

static int keep(void *arg, const lks_metric_row *r)
{
	struct rows *s = arg;

	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		cr_assert_not_null(s->row = realloc(s->row, (size_t)s->cap * sizeof(*s->row)));
	}
	s->row[s->n] = *r;
	cr_assert_not_null(s->row[s->n].name = strdup(r->name));
	s->n++;
	return 0;
}

static void rows_free(struct rows *s)
{
	for (int i = 0; i < s->n; i++)
		free((char *)s->row[i].name);
	free(s->row);
}

/* Equal as stored: same bits, or both NaN (NaN is stored NULL: one NaN). */
static int same_value(double a, double b)
{
	return (isnan(a) && isnan(b)) || !memcmp(&a, &b, sizeof(a));
}

static void metrics_equal(lks_store *s, int64_t a, int64_t b)
{
	struct rows x = { 0 }, y = { 0 };

	cr_assert_eq(lks_store_get_metrics(s, a, NULL, keep, &x), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_get_metrics(s, b, NULL, keep, &y), 0, "%s", lks_errmsg());
	cr_assert_gt(x.n, 0);
	cr_assert_eq(x.n, y.n, "run %lld: %d metric rows, run %lld: %d", (long long)a, x.n,
	             (long long)b, y.n);
	for (int i = 0; i < x.n; i++) {
		const lks_metric_row *p = &x.row[i], *q = &y.row[i];

		cr_assert(p->step == q->step && p->rank == q->rank && !strcmp(p->name, q->name)
		          && p->kind == q->kind, "row %d: %d/%d/%s against %d/%d/%s", i, p->step,
		          p->rank, p->name, q->step, q->rank, q->name);
		cr_assert(same_value(p->value, q->value), "%s at step %d rank %d: %a against %a",
		          p->name, p->step, p->rank, p->value, q->value);
	}
	rows_free(&x);
	rows_free(&y);
}

static void run_ok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void run_ok(const char *fmt, ...)
{
	char args[2048], out[8192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s: %s", args, out);
}

/* Imports file as run 1 of a new database, exports it in fmt (rank 0), imports that as
   run 2, and wants the two runs' metrics equal bit for bit. */
static void round_trip(const char *in_fmt, const char *file, const char *fmt)
{
	char db[512], out[512];
	lks_store *s;

	path_in_tmp(db, sizeof(db), "t.db");
	path_in_tmp(out, sizeof(out), "exported");
	run_ok("import --format %s '%s' --case c --run a --db '%s'", in_fmt, file, db);
	run_ok("export --format %s 1 --db '%s' -o '%s'", fmt, db, out);
	run_ok("import --format %s '%s' --case c --run b --db '%s'", fmt, out, db);
	cr_assert_eq(lks_store_open(db, &s), 0, "%s", lks_errmsg());
	metrics_equal(s, 1, 2);
	lks_store_close(s);
}

static void fixture(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s", LKS_IMPORT_DIR, name);
}

Test(export, jsonl_fixtures_round_trip_bit_for_bit)
{
	char f[512];

	mkdir_tmp();
	fixture(f, sizeof(f), "run.jsonl");  /* NaN, -inf, -1e-300, two ranks */
	round_trip("jsonl", f, "jsonl");
	rm_tmp();
	mkdir_tmp();
	fixture(f, sizeof(f), "titan_2ranks.log");  /* performance metrics too */
	round_trip("torchtitan", f, "jsonl");
	rm_tmp();
}

Test(export, megatron_golden_fixtures_round_trip_bit_for_bit)
{
	const char *files[] = { "golden_list.json", "golden_map.json" };

	for (int i = 0; i < 2; i++) {
		char f[512];

		mkdir_tmp();
		fixture(f, sizeof(f), files[i]);
		round_trip("megatron-golden", f, "megatron-golden");
		rm_tmp();
	}
}

/* A file of the test's folder holding text. */
static void put_tmp(char *path, size_t n, const char *name, const char *text)
{
	FILE *o;

	path_in_tmp(path, n, name);
	cr_assert_not_null(o = fopen(path, "w"));
	fputs(text, o);
	cr_assert_eq(fclose(o), 0);
}

/* A golden file holds one rank: a rank the run lacks is bad usage, before -o FILE is
   touched (it wrote '{}' over FILE, exit 0); a database that is not there is refused,
   not made. */
Test(export, a_rank_the_run_lacks_or_a_missing_database_exit_2_and_write_nothing)
{
	char db[512], args[2048], out[4096], f[512], dst[512], missing[600];

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "t.db");
	put_tmp(dst, sizeof(dst), "golden_values.json", "kept\n");
	put_tmp(f, sizeof(f), "ranks.jsonl", "{\"step\": 1, \"rank\": 0, \"loss\": 2.5}\n"
	        "{\"step\": 1, \"rank\": 1, \"loss\": 2.25}\n");  /* ranks 0 and 1 */
	run_ok("import --format jsonl '%s' --case c --run a --db '%s'", f, db);
	snprintf(args, sizeof(args), "export --format megatron-golden 1 --rank 2 --db '%s' -o '%s'",
	         db, dst);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert(strstr(out, "rank 2"), "%s", out);
	snprintf(args, sizeof(args), "cat '%s'", dst);
	cr_assert_eq(lks_run_sh(args, out, sizeof(out)), 0);
	cr_assert_str_eq(out, "kept\n");
	run_ok("export --format megatron-golden 1 --rank 1 --db '%s' -o '%s'", db, dst);
	snprintf(missing, sizeof(missing), "%s.missing", db);
	snprintf(args, sizeof(args), "export --format jsonl 1 --db '%s'", missing);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_neq(access(missing, F_OK), 0, "export made '%s'", missing);
	rm_tmp();
}

/* What a format cannot hold is refused (exit 2) and -o FILE is left as it was: a NaN in a
   golden file (Megatron's "nan" is a step not logged: it read back as no value), a tensor
   trace of a run that holds none (the file was emptied, exit 3). A symlink given as -o
   (/dev/stdout is one) is written through, not replaced by a file. */
Test(export, what_a_format_cannot_hold_exits_2_and_leaves_the_file)
{
	char db[512], args[2048], out[4096], log[512], dst[512], link[512];

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "t.db");
	put_tmp(log, sizeof(log), "nan.jsonl",
	        "{\"step\": 0, \"loss\": 1.5}\n{\"step\": 1, \"loss\": \"nan\"}\n");
	put_tmp(dst, sizeof(dst), "kept.json", "kept\n");
	path_in_tmp(link, sizeof(link), "link.json");
	run_ok("import --format jsonl '%s' --case c --run a --db '%s'", log, db);
	snprintf(args, sizeof(args), "export --format megatron-golden 1 --db '%s' -o '%s'", db, dst);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert(strstr(out, "step 1, metric 'loss'") && strstr(out, "NaN"), "%s", out);
	snprintf(args, sizeof(args), "export --format tensor-jsonl 1 --db '%s' -o '%s'", db, dst);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert(strstr(out, "no tensor trace"), "%s", out);
	snprintf(args, sizeof(args), "cat '%s'; ls -A \"$(dirname '%s')\" | grep -c tmp-", dst, dst);
	lks_run_sh(args, out, sizeof(out));
	cr_assert_str_eq(out, "kept\n0\n", "the file or a temporary: %s", out);
	cr_assert_eq(symlink("kept.json", link), 0);
	run_ok("export --format jsonl 1 --db '%s' -o '%s'", db, link);
	snprintf(args, sizeof(args), "test -L '%s' && cat '%s'", link, dst);
	cr_assert_eq(lks_run_sh(args, out, sizeof(out)), 0, "the link was replaced: %s", out);
	cr_assert(strstr(out, "\"loss\":\"nan\""), "%s", out);
	rm_tmp();
}

/* An import killed mid-write leaves pages of its run in the file and the hot journal that
   undoes them: export, diff and report refuse the file (exit 3: a writer must roll it
   back, and the message says which file and what does it) and touch nothing; they showed
   the killed run, reading the file immutable. The next import rolls it back: its run is
   run 2, as the killed one never was. */
Test(export, a_killed_import_is_refused_to_readers_until_a_writer_rolls_it_back,
     .timeout = 120)
{
	char db[512], f[512], rep[600], args[2048], out[8192], first[8192];
	char *before, *after;
	const char *cmds[] = { "export --format jsonl 2", "export --format jsonl 1", "diff 1 2",
	                       rep };

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "t.db");
	fixture(f, sizeof(f), "run.jsonl");
	run_ok("import --format jsonl '%s' --case c --run a --db '%s'", f, db);
	kill_mid_import(db, "ghost");
	snprintf(rep, sizeof(rep), "report -o '%s/rep'", tmpdir);
	before = lks_dir_state(tmpdir);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(*cmds); i++) {
		snprintf(args, sizeof(args), "%s --db '%s'", cmds[i], db);
		cr_expect_eq(lks_run_bin(NULL, args, out, sizeof(out)), 3, "%s: %s", args, out);
		cr_expect(strstr(out, "/t.db-journal'"), "%s: %s", args, out);
		cr_expect(strstr(out, "rolls it back"), "%s: %s", args, out);
	}
	after = lks_dir_state(tmpdir);
	cr_expect_str_eq(after, before, "a refused reader wrote to the folder");
	free(before);
	free(after);

	run_ok("import --format jsonl '%s' --case c --run b --db '%s'", f, db);
	snprintf(args, sizeof(args), "export --format jsonl 1 --db '%s'", db);
	cr_assert_eq(lks_run_bin(NULL, args, first, sizeof(first)), 0, "%s", first);
	snprintf(args, sizeof(args), "export --format jsonl 2 --db '%s'", db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_str_eq(out, first, "run 2 is not the import after the killed one");
	snprintf(args, sizeof(args), "export --format jsonl 3 --db '%s'", db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	rm_tmp();
}

/* Doubles of random bit patterns (a fixed xorshift, so a failure comes back): every
   exponent, subnormals and the largest values, which a writer of fewer than 17 digits
   or a reader that is not correctly rounded gets wrong. */
static uint64_t xorshift(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static void random_log(const char *path, int steps, int ranks, int metrics)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	for (int step = 1; step <= steps; step++)
		for (int rank = 0; rank < ranks; rank++) {
			fprintf(f, "{\"step\": %d, \"rank\": %d", step, rank);
			for (int m = 0; m < metrics; m++) {
				uint64_t bits = xorshift(&x);
				double v;

				if (m == 1)
					bits &= 0x800fffffffffffffull;  /* a subnormal */
				memcpy(&v, &bits, sizeof(v));
				if (isnan(v) || isinf(v))
					fprintf(f, ", \"m%d\": \"%s\"", m, isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
				else
					fprintf(f, ", \"m%d\": %.17g", m, v);
			}
			fputs("}\n", f);
		}
	fclose(f);
}

Test(export, doubles_of_random_bits_round_trip_in_both_formats)
{
	char log[512];

	mkdir_tmp();
	path_in_tmp(log, sizeof(log), "random.jsonl");
	random_log(log, 50, 2, 8);
	round_trip("jsonl", log, "jsonl");
	rm_tmp();
	mkdir_tmp();
	path_in_tmp(log, sizeof(log), "random.jsonl");
	random_log(log, 50, 1, 8);  /* one rank: a golden file holds one */
	round_trip("jsonl", log, "megatron-golden");
	rm_tmp();
}

static const char case_text[] =
	"[case]\n"
	"description = tiny case for lockstep export\n"
	"steps = 4\n"
	"seed = 11\n"
	"world_size = 2\n"
	LKS_TINY_MODEL
	"[run bf16]\n"
	"recipe = bf16\n";

/* loss, grad norm and lr of run a's step rows equal run b's, bit for bit: every rank
   (rank -1), or rank of a against b's one rank, 0 (a golden file names no rank). */
static void steps_equal(lks_store *s, int64_t a, int64_t b, int rank)
{
	lks_stored_run x, y;
	int n = 0;

	lks_stored_run_init(&x);
	lks_stored_run_init(&y);
	cr_assert_eq(lks_stored_run_load(s, a, LKS_LOAD_TRACE, &x), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_stored_run_load(s, b, LKS_LOAD_TRACE, &y), 0, "%s", lks_errmsg());
	for (int i = 0; i < x.nsteprows; i++) {
		const lks_step_row *p = &x.steprows[i], *q;

		if (rank >= 0 && p->rank != rank)
			continue;
		cr_assert_not_null(q = lks_stored_run_step_row(&y, p->step, rank >= 0 ? 0 : p->rank),
		                   "no step %d rank %d", p->step, p->rank);
		cr_assert(same_value(p->loss, q->loss) && same_value(p->grad_norm, q->grad_norm)
		          && same_value(p->lr, q->lr), "step %d rank %d: %a %a %a against %a %a %a",
		          p->step, p->rank, p->loss, p->grad_norm, p->lr, q->loss, q->grad_norm, q->lr);
		n++;
	}
	cr_assert_eq(n, y.nsteprows);
	cr_assert_geq(n, 4);
	lks_stored_run_release(&x);
	lks_stored_run_release(&y);
}

Test(export, a_lockstep_run_round_trips_its_loss_grad_norm_and_lr)
{
	char ini[512], db[512], out[512], gold[512];
	lks_store *s;
	FILE *f;

	mkdir_tmp();
	path_in_tmp(ini, sizeof(ini), "tiny.ini");
	path_in_tmp(db, sizeof(db), "t.db");
	path_in_tmp(out, sizeof(out), "run.jsonl");
	path_in_tmp(gold, sizeof(gold), "golden.json");
	cr_assert_not_null(f = fopen(ini, "w"));
	fputs(case_text, f);
	fclose(f);
	run_ok("run '%s' --db '%s' --quiet", ini, db);
	run_ok("export --format jsonl 1 --db '%s' -o '%s'", db, out);
	run_ok("import --format jsonl '%s' --case c --run j --db '%s'", out, db);
	run_ok("export --format megatron-golden 1 --rank 1 --db '%s' -o '%s'", db, gold);
	run_ok("import --format megatron-golden '%s' --case c --run g --db '%s'", gold, db);
	cr_assert_eq(lks_store_open(db, &s), 0, "%s", lks_errmsg());
	steps_equal(s, 1, 2, -1);
	steps_equal(s, 1, 3, 1);
	lks_store_close(s);
	/* the export followed against the trained run itself: every loss, grad_norm and lr of
	   4 steps x 2 ranks compared, and equal */
	{
		char args[2048], text[4096];

		snprintf(args, sizeof(args), "import --follow --format jsonl '%s' --case c --run f "
		         "--db '%s' --reference 1 --idle 0.2", out, db);
		cr_assert_eq(lks_run_bin(NULL, args, text, sizeof(text)), 0, "%s", text);
		cr_assert(strstr(text, "24 values equal to the reference"), "%s", text);
	}
	rm_tmp();
}

Test(export, bad_usage_and_unknown_runs_exit_2)
{
	char db[512], args[1024], out[4096], f[512];

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "t.db");
	fixture(f, sizeof(f), "run.jsonl");
	run_ok("import --format jsonl '%s' --case c --run a --db '%s'", f, db);
	snprintf(args, sizeof(args), "export --format jsonl 7 --db '%s'", db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert(strstr(out, "no run 7"), "%s", out);
	snprintf(args, sizeof(args), "export --format torchtitan 1 --db '%s'", db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert(strstr(out, "format 'torchtitan' is read, not written"), "%s", out);
	/* a format no one knows is named against the three export writes, not the importers'
	   (it said "unknown import format" and listed sixteen) */
	snprintf(args, sizeof(args), "export --format bogus 1 --db '%s'", db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert(strstr(out, "unknown export format 'bogus' (known: jsonl, megatron-golden, "
	                 "tensor-jsonl)\n"), "%s", out);
	cr_assert_null(strstr(out, "torchtitan"), "%s", out);
	snprintf(args, sizeof(args), "export --format jsonl x --db '%s'", db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	/* to standard output: the first line is step 1 of rank 0 */
	snprintf(args, sizeof(args), "export --format jsonl 1 --db '%s'", db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert(!strncmp(out, "{\"step\":1,\"rank\":0,", 19), "%s", out);
	rm_tmp();
}

/* The whole of file path (at most n - 1 bytes) in buf. */
static void slurp(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "r");
	size_t len;

	cr_assert_not_null(f, "no '%s'", path);
	len = fread(buf, 1, n - 1, f);
	buf[len] = 0;
	fclose(f);
}

Test(export, case_slash_run_names_the_latest_such_run)
{
	char db[512], f1[512], f2[512], out[512], args[1024], text[4096];
	static char by_id[1 << 16], by_name[1 << 16], first[1 << 16];

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "t.db");
	path_in_tmp(out, sizeof(out), "out.jsonl");
	fixture(f1, sizeof(f1), "run.jsonl");
	fixture(f2, sizeof(f2), "titan_2ranks.log");
	/* c/a twice: runs 1 and 2, and c/b (run 3) */
	run_ok("import --format jsonl '%s' --case c --run a --db '%s'", f1, db);
	run_ok("import --format torchtitan '%s' --case c --run a --db '%s'", f2, db);
	run_ok("import --format jsonl '%s' --case c --run b --db '%s'", f1, db);
	run_ok("export --format jsonl 1 --db '%s' -o '%s'", db, out);
	slurp(out, first, sizeof(first));
	run_ok("export --format jsonl 2 --db '%s' -o '%s'", db, out);
	slurp(out, by_id, sizeof(by_id));
	run_ok("export --format jsonl c/a --db '%s' -o '%s'", db, out);
	slurp(out, by_name, sizeof(by_name));
	cr_assert_gt(strlen(by_id), 0);
	cr_assert_str_eq(by_name, by_id, "c/a is run 2, the latest");
	cr_assert_str_neq(by_name, first);
	/* a name that is no stored run, and one that is no name: exit 2, saying which */
	snprintf(args, sizeof(args), "export --format jsonl c/nosuch --db '%s'", db);
	cr_assert_eq(lks_run_bin(NULL, args, text, sizeof(text)), 2, "%s", text);
	cr_assert(strstr(text, "export: no stored run 'c/nosuch'"), "%s", text);
	snprintf(args, sizeof(args), "export --format jsonl c/a/x --db '%s'", db);
	cr_assert_eq(lks_run_bin(NULL, args, text, sizeof(text)), 2, "%s", text);
	cr_assert(strstr(text, "'c/a/x' is neither a run id nor CASE/RUN"), "%s", text);
	rm_tmp();
}

/* A golden file as Megatron-LM writes them today, which its checker's model requires:
   every metric has start_step, end_step, step_interval (the greatest common divisor of the
   steps' differences) and values as a map from step to value; steps 1, 3, 7 and 11 give
   interval 2. */
Test(export, megatron_golden_is_written_as_megatron_writes_it)
{
	static const int steps[] = { 1, 3, 7, 11 };
	char db[512], log[512], gold[512];
	json_error_t e;
	json_t *doc, *m, *v;
	FILE *f;

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "t.db");
	path_in_tmp(log, sizeof(log), "uneven.jsonl");
	path_in_tmp(gold, sizeof(gold), "golden_values.json");
	cr_assert_not_null(f = fopen(log, "w"));
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		fprintf(f, "{\"step\": %d, \"loss\": %d.5, \"num_zeros\": %d}\n", steps[i], 10 - (int)i,
		        (int)i);
	fclose(f);
	run_ok("import --format jsonl '%s' --case c --run a --db '%s'", log, db);
	run_ok("export --format megatron-golden 1 --db '%s' -o '%s'", db, gold);
	cr_assert_not_null(doc = json_load_file(gold, 0, &e), "%s", e.text);
	cr_assert_eq(json_object_size(doc), 2, "lm loss and num-zeros");
	for (void *it = json_object_iter(doc); it; it = json_object_iter_next(doc, it)) {
		const char *name = json_object_iter_key(it);

		m = json_object_iter_value(it);
		cr_assert_eq(json_integer_value(json_object_get(m, "start_step")), 1, "%s", name);
		cr_assert_eq(json_integer_value(json_object_get(m, "end_step")), 11, "%s", name);
		cr_assert_eq(json_integer_value(json_object_get(m, "step_interval")), 2, "%s", name);
		v = json_object_get(m, "values");
		cr_assert(json_is_object(v), "%s: values not a map", name);
		cr_assert_eq(json_object_size(v), 4, "%s", name);
	}
	m = json_object_get(doc, "lm loss");
	cr_assert_eq(json_real_value(json_object_get(json_object_get(m, "values"), "7")), 8.5);
	json_decref(doc);
	/* and it reads back, bit for bit */
	run_ok("import --format megatron-golden '%s' --case c --run g --db '%s'", gold, db);
	rm_tmp();
}

static int run_rc(char *out, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int run_rc(char *out, size_t n, const char *fmt, ...)
{
	char args[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	return lks_run_bin(NULL, args, out, n);
}

/* The lines of text that hold key, in order, joined (each with its newline). */
static void lines_with(const char *text, const char *key, char *buf, size_t n)
{
	size_t len = 0;

	buf[0] = 0;
	for (const char *p = text; *p;) {
		const char *end = strchr(p, '\n');
		size_t l = end ? (size_t)(end - p + 1) : strlen(p);

		char line[1024];

		cr_assert_lt(l, sizeof(line));
		memcpy(line, p, l);
		line[l] = 0;
		if (strstr(line, key)) {
			cr_assert_lt(len + l, n);
			memcpy(buf + len, line, l + 1);
			len += l;
		}
		p += l;
	}
}

/* --rank R writes rank R's lines alone in jsonl and tensor-jsonl, as it writes rank R's
   metrics alone in a golden file (it was ignored: every rank, exit 0, even for a rank
   the run lacks); a rank the run lacks is exit 2, and -o FILE left as it was. */
Test(export, rank_writes_that_ranks_lines_in_jsonl_and_tensor_jsonl)
{
	static const char *const fmts[] = { "jsonl", "tensor-jsonl" };
	char db[512], m[512], t[512], dst[512], out[4096];
	static char all[8192], one[8192], want[8192];

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "t.db");
	put_tmp(dst, sizeof(dst), "kept.jsonl", "kept\n");
	put_tmp(m, sizeof(m), "m.jsonl", "{\"step\": 1, \"rank\": 0, \"loss\": 2.5}\n"
	        "{\"step\": 1, \"rank\": 1, \"loss\": 2.25}\n{\"step\": 2, \"rank\": 0, \"loss\": 2}\n"
	        "{\"step\": 2, \"rank\": 1, \"loss\": 1.75}\n");
	put_tmp(t, sizeof(t), "t.jsonl",
	        "{\"step\":0,\"rank\":0,\"tensor\":\"x.out\",\"l2\":1.0,\"amax\":0.5}\n"
	        "{\"step\":0,\"rank\":1,\"tensor\":\"x.out\",\"l2\":2.0,\"amax\":0.5}\n"
	        "{\"step\":1,\"rank\":0,\"tensor\":\"x.out\",\"l2\":3.0,\"amax\":0.5}\n"
	        "{\"step\":1,\"rank\":1,\"tensor\":\"x.out\",\"l2\":4.0,\"amax\":0.5}\n");
	run_ok("import --format jsonl '%s' --case c --run m --db '%s'", m, db);
	run_ok("import --format tensor-jsonl '%s' --case c --run t --db '%s'", t, db);
	for (int i = 0; i < 2; i++) {
		const char *run = i ? "c/t" : "c/m";

		cr_assert_eq(run_rc(all, sizeof(all), "export --format %s %s --db '%s'", fmts[i], run,
		                    db), 0, "%s", all);
		for (int rank = 0; rank < 2; rank++) {
			char key[32];

			snprintf(key, sizeof(key), "\"rank\":%d,", rank);
			lines_with(all, key, want, sizeof(want));
			cr_assert_eq(run_rc(one, sizeof(one), "export --format %s %s --rank %d --db '%s'",
			                    fmts[i], run, rank, db), 0, "%s", one);
			cr_assert_gt(strlen(want), 0, "%s: no line of rank %d in %s", fmts[i], rank, all);
			cr_assert_str_eq(one, want, "%s --rank %d", fmts[i], rank);
		}
		cr_assert_eq(run_rc(out, sizeof(out), "export --format %s %s --rank 2 --db '%s' -o '%s'",
		                    fmts[i], run, db, dst), 2, "%s", out);
		cr_assert(strstr(out, "has ranks 0 to 1, not rank 2"), "%s: %s", fmts[i], out);
		slurp(dst, out, sizeof(out));
		cr_assert_str_eq(out, "kept\n", "%s", fmts[i]);
	}
	/* a log of ranks 0 and 2: rank 1 is below its world size, and has no line */
	put_tmp(m, sizeof(m), "r02.jsonl", "{\"step\": 1, \"rank\": 0, \"loss\": 2.5}\n"
	        "{\"step\": 1, \"rank\": 2, \"loss\": 2.25}\n");
	run_ok("import --format jsonl '%s' --case c --run r02 --ranks 0,2 --db '%s'", m, db);
	cr_assert_eq(run_rc(out, sizeof(out), "export --format jsonl c/r02 --rank 1 --db '%s'", db),
	             2, "%s", out);
	cr_assert(strstr(out, "holds no values of rank 1, only of other ranks"), "%s", out);
	rm_tmp();
}

/* No export writes an empty file with exit 0 (the importers refuse one): a run with no
   metric values is refused saying what it holds (a tensor trace: jsonl wrote an empty
   file, megatron-golden blamed "its log" for ranks left out), and a golden file of a run
   of performance metrics alone ('{}') likewise. */
Test(export, a_run_with_nothing_to_write_is_refused_not_written_empty)
{
	static const char *const fmts[] = { "jsonl", "megatron-golden" };
	char db[512], t[512], p[512], dst[512], out[4096], cmd[2048];

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "t.db");
	put_tmp(dst, sizeof(dst), "kept.json", "kept\n");
	put_tmp(t, sizeof(t), "t.jsonl",
	        "{\"step\":0,\"rank\":0,\"tensor\":\"x.out\",\"l2\":1.0,\"amax\":0.5}\n");
	put_tmp(p, sizeof(p), "p.jsonl", "{\"step\": 1, \"tps\": 2.5, \"mfu\": 0.5}\n");
	run_ok("import --format tensor-jsonl '%s' --case c --run t --db '%s'", t, db);
	run_ok("import --format jsonl '%s' --case c --run p --db '%s'", p, db);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(run_rc(out, sizeof(out), "export --format %s c/t --db '%s' -o '%s'",
		                    fmts[i], db, dst), 2, "%s: %s", fmts[i], out);
		cr_assert(strstr(out, "run 1 holds no metric values: it holds a tensor trace "
		                 "(export --format tensor-jsonl)"), "%s: %s", fmts[i], out);
		cr_assert_null(strstr(out, "its log"), "%s", out);
		/* to standard output: nothing at all */
		snprintf(cmd, sizeof(cmd), "'%s' export --format %s c/t --db '%s' 2>/dev/null", LKS_BIN,
		         fmts[i], db);
		cr_assert_eq(lks_run_sh(cmd, out, sizeof(out)), 2, "%s", out);
		cr_assert_str_eq(out, "", "%s", fmts[i]);
	}
	cr_assert_eq(run_rc(out, sizeof(out), "export --format megatron-golden c/p --db '%s' -o '%s'",
	                    db, dst), 2, "%s", out);
	cr_assert(strstr(out, "holds only performance metrics"), "%s", out);
	slurp(dst, out, sizeof(out));
	cr_assert_str_eq(out, "kept\n");
	run_ok("export --format jsonl c/p --db '%s' -o '%s'", db, dst);
	rm_tmp();
}

/* A run lockstep trained, begun with its steps declared and ended by hand: steps [0,
   held) of 10 stored, then ended with status (NULL: left incomplete, as a kill leaves it;
   "failed": as a failed run is). */
static void stored_run(const char *db, const char *name, int held, const char *status)
{
	lks_run_info info = run_info(name, 10);
	lks_store *s;
	int64_t run;

	cr_assert_eq(lks_store_open(db, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_begin_run(s, &info, &run), 0, "%s", lks_errmsg());
	put_tensors(s, run, 10);
	put_steps(s, run, 0, held, 10);
	if (status && !strcmp(status, "failed"))
		cr_assert_eq(lks_store_fail_run(s, run, "a rank died"), 0, "%s", lks_errmsg());
	else if (status)
		cr_assert_eq(lks_store_end_run(s, run, status), 0, "%s", lks_errmsg());
	lks_store_close(s);
}

/* A run not complete (killed: incomplete; failed) is refused in every format, saying its
   status and the steps it holds, and -o FILE left as it was: it exited 0, and a golden
   file of a killed run's first steps, or its jsonl imported back, passed for a complete
   run. --partial writes it as far as it holds, saying so; one with no value is still
   refused. A complete run of the same database exports. */
Test(export, a_run_not_complete_is_refused_saying_its_status_and_steps)
{
	static const char *const fmts[] = { "jsonl", "megatron-golden", "tensor-jsonl" };
	char db[512], dst[512], out[4096], key[32];
	static char text[1 << 16];
	int lines = 0;

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "t.db");
	put_tmp(dst, sizeof(dst), "kept.json", "kept\n");
	stored_run(db, "killed", 3, NULL);
	stored_run(db, "failed", 0, "failed");
	stored_run(db, "done", 10, "complete");
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(run_rc(out, sizeof(out), "export --format %s 1 --db '%s' -o '%s'", fmts[i],
		                    db, dst), 2, "%s: %s", fmts[i], out);
		cr_assert(strstr(out, "run 1 (tiny/killed) is stored 'incomplete': it holds 3 of its "
		                 "10 steps"), "%s: %s", fmts[i], out);
		cr_assert_eq(run_rc(out, sizeof(out), "export --format %s 2 --db '%s' -o '%s'", fmts[i],
		                    db, dst), 2, "%s: %s", fmts[i], out);
		cr_assert(strstr(out, "run 2 (tiny/failed) is stored 'failed': it holds 0 of its 10 "
		                 "steps"), "%s: %s", fmts[i], out);
		slurp(dst, out, sizeof(out));
		cr_assert_str_eq(out, "kept\n", "%s", fmts[i]);
	}
	/* --partial: the steps held, every rank, and the status said */
	cr_assert_eq(run_rc(out, sizeof(out), "export --format jsonl 1 --partial --db '%s' -o '%s'",
	                    db, dst), 0, "%s", out);
	cr_assert(strstr(out, "is stored 'incomplete': it holds 3 of its 10 steps; written as far "
	                 "as it holds (--partial)"), "%s", out);
	slurp(dst, text, sizeof(text));
	for (int step = 0; step < 3; step++)
		for (int rank = 0; rank < RANKS; rank++) {
			snprintf(key, sizeof(key), "{\"step\":%d,\"rank\":%d,", step, rank);
			cr_assert(strstr(text, key), "no %s in %s", key, text);
		}
	for (const char *c = text; (c = strchr(c, '\n')); c++)
		lines++;
	cr_assert_eq(lines, 3 * RANKS, "%s", text);
	cr_assert_eq(run_rc(out, sizeof(out), "export --format jsonl 2 --partial --db '%s' -o '%s'",
	                    db, dst), 2, "%s", out);
	cr_assert(strstr(out, "run 2 holds no metric values"), "%s", out);
	run_ok("export --format megatron-golden 3 --db '%s' -o '%s'", db, dst);
	rm_tmp();
}
