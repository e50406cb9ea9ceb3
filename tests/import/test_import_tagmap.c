/*
 * test_import_tagmap.c: a user's own labels (--tag-map, a case run's import_tag_map) in
 * TensorBoard tags and torchtitan lines, read the same way before and after imports
 * without a map in the same thread (the remembered labels must not outlive their map), and
 * bad maps refused; and TensorBoard folders per rank (torchtitan's rank_N), each rank a
 * stream of its own. The event files are written here (tb_events.h); every test works in
 * its own mkdtemp folder, removed at its end. add_scalars' series folders are read with
 * the run's file of their launch. Also run with every log read in parts
 * (test_import_check_parts): the part threads read with the map too.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "run_bin.h"
#include "tb_events.h"
#include "harness/import/import.h"
#include "kernels/err.h"

static char root[64];

static const char *new_root(void)
{
	snprintf(root, sizeof(root), "/tmp/lks-tagmap-XXXXXX");
	cr_assert_not_null(mkdtemp(root));
	return root;
}

static void drop_root(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	cr_assert_eq(system(cmd), 0);
}

/* root/name (made a folder where dir is set) */
static const char *in_root(char *buf, size_t n, const char *name, int dir)
{
	snprintf(buf, n, "%s/%s", root, name);
	if (dir)
		cr_assert_eq(mkdir(buf, 0700), 0, "%s", buf);
	return buf;
}

/* text written to path (mode "w" or "a") */
static void put_text(const char *path, const char *text, const char *mode)
{
	FILE *f = fopen(path, mode);

	cr_assert_not_null(f, "cannot write '%s'", path);
	cr_assert_eq(fputs(text, f) < 0 || fclose(f), 0, "'%s'", path);
}

static lks_store *open_db(const char *name)
{
	char db[128];
	lks_store *s;

	cr_assert_eq(lks_store_open(in_root(db, sizeof(db), name, 0), &s), 0, "%s", lks_errmsg());
	return s;
}

/* files[0..n) of fmt imported as run name, with the map of map_text (NULL: none) and the
   ranks given (NULL: all): the import's answer; *res what it read. */
static int import_as(lks_store *s, const char *fmt, const char *const *files, int n,
                     const char *name, const char *map_text, const char *ranks,
                     lks_import_result *res)
{
	lks_import_opts o = { .fmt = lks_import_format_find(fmt), .case_name = "c",
	                      .run_name = name, .ranks = ranks };
	lks_import_tag_map *map = NULL;
	int rc;

	cr_assert_not_null(o.fmt);
	if (map_text)
		cr_assert_eq(lks_import_tag_map_parse(map_text, NULL, &map), 0, "%s", lks_errmsg());
	o.tag_map = map;
	rc = lks_import_files(s, &o, files, n, res);
	lks_import_tag_map_free(map);
	return rc;
}

/* The stored metrics of a run, looked up by (step, rank, name). */
struct rows {
	int n;
	struct { int step, rank; char name[64]; lks_metric_kind kind; double value; } r[4096];
};

static int keep(void *arg, const lks_metric_row *m)
{
	struct rows *x = arg;

	cr_assert_lt(x->n, 4096);
	x->r[x->n].step = m->step;
	x->r[x->n].rank = m->rank;
	snprintf(x->r[x->n].name, sizeof(x->r[0].name), "%s", m->name);
	x->r[x->n].kind = m->kind;
	x->r[x->n++].value = m->value;
	return 0;
}

static struct rows *rows_of(lks_store *s, int64_t run)
{
	struct rows *x = calloc(1, sizeof(*x));

	cr_assert_eq(lks_store_get_metrics(s, run, NULL, keep, x), 0, "%s", lks_errmsg());
	return x;
}

/* The index of (step, rank, name) in x, -1 without one. */
static int row(const struct rows *x, int step, int rank, const char *name)
{
	for (int i = 0; i < x->n; i++)
		if (x->r[i].step == step && x->r[i].rank == rank && !strcmp(x->r[i].name, name))
			return i;
	return -1;
}

static int rows_named(const struct rows *x, const char *name)
{
	int n = 0;

	for (int i = 0; i < x->n; i++)
		n += !strcmp(x->r[i].name, name);
	return n;
}

/* ---- the map ---- */

static const struct tb_scalar tb_own[] = {
	{ 1, "my/train_loss", 2.5f }, { 1, "lm loss", 7.25f }, { 1, "my/clock", 0.5f },
	{ 1, "my/custom", 3.0f }, { 1, "x/grad", 1.5f },
	{ 2, "my/train_loss", 2.25f }, { 2, "lm loss", 7.125f }, { 2, "my/clock", 0.75f },
	{ 2, "my/custom", 4.0f }, { 2, "x/grad", 1.25f },
};

#define TB_MAP "my/train_loss=loss, lm loss = lm_loss_raw,my/clock=wallclock:performance," \
	"my/custom=custom_metric,x/grad=grad_norm"

/* A TensorBoard run's own tags, read as the map says before the format's table ("lm loss"
   is loss there); the same file without a map before and after, in this thread: what the
   labels were read as under one map is not taken under another. */
Test(import_tagmap, a_map_names_tensorboard_tags_before_the_format_table)
{
	char file[128];
	const char *files[] = { file };
	lks_import_result res;
	struct rows *x;
	lks_store *s;
	int i;

	new_root();
	tb_write(in_root(file, sizeof(file), "events.out.tfevents.1", 0), tb_own, 10);
	s = open_db("t.db");
	for (int pass = 0; pass < 3; pass++) {
		int mapped = pass == 1;

		cr_assert_eq(import_as(s, "tensorboard", files, 1, mapped ? "mapped" : "plain",
		                       mapped ? TB_MAP : NULL, NULL, &res), 0, "%s", lks_errmsg());
		x = rows_of(s, res.run_id);
		cr_assert_eq(x->n, 10, "pass %d: %d rows", pass, x->n);
		if (mapped) {
			cr_assert_geq(i = row(x, 2, 0, "loss"), 0);
			cr_assert_eq(x->r[i].value, 2.25);
			cr_assert_geq(i = row(x, 1, 0, "lm_loss_raw"), 0, "the map before the table");
			cr_assert_eq(x->r[i].value, 7.25);
			cr_assert_eq(x->r[i].kind, LKS_METRIC_NUMERICS);
			cr_assert_geq(i = row(x, 1, 0, "wallclock"), 0);
			cr_assert_eq(x->r[i].kind, LKS_METRIC_PERFORMANCE, "its kind as written");
			cr_assert_geq(i = row(x, 2, 0, "custom_metric"), 0);
			cr_assert_eq(x->r[i].kind, LKS_METRIC_NUMERICS);
			cr_assert_eq(x->r[i].value, 4.0);
			cr_assert_geq(i = row(x, 2, 0, "grad_norm"), 0);
			cr_assert_eq(x->r[i].value, 1.25);
			cr_assert_eq(rows_named(x, "my_train_loss"), 0);
		} else {
			cr_assert_geq(i = row(x, 1, 0, "loss"), 0);
			cr_assert_eq(x->r[i].value, 7.25, "pass %d: 'lm loss' is the table's loss", pass);
			cr_assert_geq(row(x, 1, 0, "my_train_loss"), 0, "pass %d", pass);
			cr_assert_eq(rows_named(x, "lm_loss_raw") + rows_named(x, "wallclock"), 0);
		}
		free(x);
	}
	lks_store_close(s);
	drop_root();
}

/* A tag named step or rank made a metric of that name: the jsonl export wrote it over the
   record's own step and rank keys, and the export read back refused. Refused at import,
   naming the map that renames it; a map to those names is refused too; the map given,
   it imports. */
Test(import_tagmap, a_metric_is_never_named_step_or_rank)
{
	static const struct tb_scalar v[] = { { 1, "loss", 2.5f }, { 1, "step", 100.0f } };
	char file[128];
	const char *files[] = { file };
	lks_import_result res;
	lks_import_tag_map *map = NULL;
	struct rows *x;
	lks_store *s;

	new_root();
	tb_write(in_root(file, sizeof(file), "events.out.tfevents.1", 0), v, 2);
	s = open_db("t.db");
	cr_assert_eq(import_as(s, "tensorboard", files, 1, "a", NULL, NULL, &res), LKS_E_BAD_INPUT);
	cr_assert(strstr(lks_errmsg(), "--tag-map 'step=logged_step'"), "%s", lks_errmsg());
	cr_assert_neq(lks_import_tag_map_parse("loss=rank", NULL, &map), 0);
	cr_assert(strstr(lks_errmsg(), "not step or rank"), "%s", lks_errmsg());
	cr_assert_eq(import_as(s, "tensorboard", files, 1, "b", "step=logged_step", NULL, &res), 0,
	             "%s", lks_errmsg());
	x = rows_of(s, res.run_id);
	cr_assert_eq(x->r[row(x, 1, 0, "logged_step")].value, 100.0);
	free(x);
	lks_store_close(s);
	drop_root();
}

/* A tag the reader passes over by its words (Megatron's "lm loss vs samples": the same
   values against another axis) is read where the map names it (the map was ignored, the
   metric missing, exit 0); a label of the map that names no tag read is said (a typo
   gave no word). */
Test(import_tagmap, a_map_reads_other_axis_tags_and_names_its_unused_labels)
{
	static const struct tb_scalar v[] = { { 1, "lm loss", 2.5f }, { 1, "lm loss vs samples",
	                                                               2.5f } };
	char file[128], db[128], args[1024], out[4096];
	const char *files[] = { file };
	lks_import_result res;
	struct rows *x;
	lks_store *s;

	new_root();
	tb_write(in_root(file, sizeof(file), "events.out.tfevents.1", 0), v, 2);
	s = open_db("t.db");
	cr_assert_eq(import_as(s, "tensorboard", files, 1, "a", "lm loss vs samples=loss_samples",
	                       NULL, &res), 0, "%s", lks_errmsg());
	x = rows_of(s, res.run_id);
	cr_assert_eq(x->n, 2, "%d rows", x->n);
	cr_assert_geq(row(x, 1, 0, "loss_samples"), 0);
	free(x);
	lks_store_close(s);
	snprintf(args, sizeof(args), "import --format tensorboard '%s' --case c --run b --db '%s' "
	         "--tag-map 'lm los=typo,lm loss=loss'", file, in_root(db, sizeof(db), "t.db", 0));
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "--tag-map: no tag of the files was 'lm los' (misspelt?)"), "%s", out);
	drop_root();
}

/* Lightning's TensorBoardLogger logs hp_metric = -1 at step 0 as every launch begins: a
   resumed launch read it as a restart at step 0, and the first launch's steps were
   dropped. The placeholder is not read (a map that names hp_metric reads it); a real
   hp_metric, at another step or of another value, is. */
Test(import_tagmap, lightnings_hp_metric_placeholder_is_no_restart)
{
	static const struct tb_scalar a[] = { { 0, "hp_metric", -1.0f }, { 1, "loss", 4.0f },
	                                      { 2, "loss", 3.0f } };
	static const struct tb_scalar b[] = { { 0, "hp_metric", -1.0f }, { 3, "loss", 2.0f },
	                                      { 4, "hp_metric", 0.5f } };
	static const double wa[] = { 100, 101, 102 }, wb[] = { 200, 201, 202 };
	char dir[128], file[192];
	const char *files[] = { dir };
	lks_import_result res;
	struct rows *x;
	lks_store *s;

	new_root();
	in_root(dir, sizeof(dir), "version_0", 1);
	snprintf(file, sizeof(file), "%s/events.out.tfevents.100.node.7.0", dir);
	tb_write_at(file, a, wa, 3);
	snprintf(file, sizeof(file), "%s/events.out.tfevents.200.node.8.0", dir);
	tb_write_at(file, b, wb, 3);
	s = open_db("t.db");
	cr_assert_eq(import_as(s, "tensorboard", files, 1, "a", NULL, NULL, &res), 0, "%s",
	             lks_errmsg());
	cr_assert_eq(res.counts.restarts, 0);
	x = rows_of(s, res.run_id);
	cr_assert_eq(x->n, 4, "%d rows", x->n);
	cr_assert(row(x, 1, 0, "loss") >= 0 && row(x, 2, 0, "loss") >= 0 && row(x, 3, 0, "loss") >= 0,
	          "the first launch's steps");
	cr_assert_eq(x->r[row(x, 4, 0, "hp_metric")].value, 0.5);
	cr_assert_lt(row(x, 0, 0, "hp_metric"), 0, "the placeholder was read");
	free(x);
	cr_assert_eq(import_as(s, "tensorboard", files, 1, "b", "hp_metric=hp_metric", NULL, &res),
	             0, "%s", lks_errmsg());
	cr_assert_eq(res.counts.restarts, 1, "the map reads the placeholder, restart and all");
	lks_store_close(s);
	drop_root();
}

/* A torchtitan log of many alike lines (its quick reader takes all but the first), read
   with a map and without, in turns: every step under the map's names and kinds, none
   under the table's, and the table's again after. */
Test(import_tagmap, torchtitan_lines_read_quickly_take_the_map)
{
	char file[128];
	const char *files[] = { file };
	lks_import_result res;
	struct rows *x;
	lks_store *s;
	FILE *f;

	new_root();
	cr_assert_not_null(f = fopen(in_root(file, sizeof(file), "train.log", 0), "w"));
	for (int step = 1; step <= 300; step++)
		fprintf(f, "[rank0]:[titan] 2026-01-05 10:00:01,000 - root - INFO - step: %3d  "
		        "loss: %7.4f  grad_norm: %6.4f  tps: 3,%03d  mfu: 0.19%%\n", step,
		        10.0 - step * 0.01, 1.0 + step * 0.001, step);
	cr_assert_eq(fclose(f), 0);
	s = open_db("t.db");
	for (int pass = 0; pass < 4; pass++) {
		int mapped = pass % 2;

		cr_assert_eq(import_as(s, "torchtitan", files, 1, mapped ? "mapped" : "plain",
		                       mapped ? "loss=titan_loss,grad_norm=gn:performance" : NULL,
		                       NULL, &res), 0, "%s", lks_errmsg());
		x = rows_of(s, res.run_id);
		cr_assert_eq(x->n, 1200);
		cr_assert_eq(rows_named(x, mapped ? "titan_loss" : "loss"), 300, "pass %d", pass);
		cr_assert_eq(rows_named(x, mapped ? "gn" : "grad_norm"), 300, "pass %d", pass);
		cr_assert_eq(rows_named(x, mapped ? "loss" : "titan_loss"), 0, "pass %d", pass);
		cr_assert_eq(x->r[row(x, 300, 0, mapped ? "gn" : "grad_norm")].kind,
		             mapped ? LKS_METRIC_PERFORMANCE : LKS_METRIC_NUMERICS);
		cr_assert_eq(x->r[row(x, 300, 0, mapped ? "titan_loss" : "loss")].value, 7.0);
		free(x);
	}
	lks_store_close(s);
	drop_root();
}

/* Two labels of one record read as one name: that name twice, bad input at its line. */
Test(import_tagmap, two_labels_read_as_one_name_in_a_record_are_bad_input)
{
	char file[128], tb[128];
	const char *files[] = { file }, *tbs[] = { tb };
	lks_import_result res;
	lks_store *s;

	new_root();
	put_text(in_root(file, sizeof(file), "train.log", 0),
	         "noise\n[rank0]:[titan] - step: 1  loss: 8.5  grad_norm: 2.5\n", "w");
	tb_write(in_root(tb, sizeof(tb), "events.out.tfevents.1", 0), tb_own, 10);
	s = open_db("t.db");
	cr_assert_eq(import_as(s, "torchtitan", files, 1, "r", "loss=x,grad_norm=x", NULL, &res),
	             LKS_E_BAD_INPUT);
	cr_assert(strstr(lks_errmsg(), "train.log':2: metric 'x' given twice"), "%s",
	          lks_errmsg());
	cr_assert_eq(import_as(s, "tensorboard", tbs, 1, "r", "my/custom=loss", NULL, &res),
	             LKS_E_BAD_INPUT);
	cr_assert(strstr(lks_errmsg(), "metric 'loss' given twice"), "%s", lks_errmsg());
	lks_store_close(s);
	drop_root();
}

/* arrays, not pointers: criterion hands a parameter to a test's process of its own */
struct bad_map {
	char text[32], says[96];
};

ParameterizedTestParameters(import_tagmap, a_bad_map_is_refused_with_what_is_wrong)
{
	static struct bad_map bad[] = {
		{ "loss", "pair 1: want LABEL=NAME, not 'loss'" },
		{ "a=b,loss=", "pair 2: no metric name after the label 'loss'" },
		{ "=loss", "pair 1: no label before '=' in '=loss'" },
		{ "a=b-c", "a metric name is letters, digits and '_' (at most 63), not 'b-c'" },
		{ "a=b:fast", "a kind is numerics or performance, not 'fast'" },
		{ "a=x,b=y,a=z", "label 'a' given twice (pairs 1 and 3)" },
		{ "loss=loss:performance", "a metric of lockstep's table keeps the table's kind" },
		{ "a=b,,c=d", "pair 2: an empty pair" },
		{ "", "pair 1: an empty pair" },
		{ "@", "cannot open" },
	};

	return cr_make_param_array(struct bad_map, bad, sizeof(bad) / sizeof(bad[0]));
}

ParameterizedTest(struct bad_map *b, import_tagmap, a_bad_map_is_refused_with_what_is_wrong)
{
	lks_import_tag_map *m = (void *)1;

	cr_assert_eq(lks_import_tag_map_parse(b->text, NULL, &m), LKS_E_BAD_INPUT, "'%s'", b->text);
	cr_assert_null(m);
	cr_assert(strstr(lks_errmsg(), b->says), "'%s': %s", b->text, lks_errmsg());
}

/* A map's file: comments and blank lines skipped, a label with blanks and '=' in it, FILE
   relative to the folder given; a bad line named FILE:line. */
Test(import_tagmap, a_map_file_names_its_bad_lines)
{
	char path[128], want[256];
	lks_import_tag_map *m;

	new_root();
	put_text(in_root(path, sizeof(path), "names.map", 0),
	         "# my run's labels\n\n  my/train loss = loss\r\nk=v=kv_name:numerics\n", "w");
	cr_assert_eq(lks_import_tag_map_parse("@names.map", root, &m), 0, "%s", lks_errmsg());
	cr_assert_not_null(m);
	lks_import_tag_map_free(m);
	put_text(path, "# more\nmy/train loss=other\n", "a");
	cr_assert_eq(lks_import_tag_map_parse(path, NULL, &m), LKS_E_BAD_INPUT,
	             "no '@': a list of one pair");
	cr_assert_eq(lks_import_tag_map_parse("@names.map", root, &m), LKS_E_BAD_INPUT);
	snprintf(want, sizeof(want), "'%s':6: label 'my/train loss' given twice (line 3)", path);
	cr_assert(strstr(lks_errmsg(), want), "%s", lks_errmsg());
	put_text(path, "a=b c\n", "a");
	cr_assert_eq(lks_import_tag_map_parse("@names.map", root, &m), LKS_E_BAD_INPUT);
	snprintf(want, sizeof(want), "'%s':7: a metric name", path);
	cr_assert(strstr(lks_errmsg(), want), "%s", lks_errmsg());
	drop_root();
}

/* lockstep import --tag-map, and a case run's import_tag_map (a file beside the case);
   a bad map is bad usage (exit 2), in a case bad input naming the case. */
Test(import_tagmap, the_cli_and_a_case_run_take_a_map)
{
	char log[128], ini[128], map[128], db[128], args[1024], out[8192];
	FILE *f;

	new_root();
	cr_assert_not_null(f = fopen(in_root(log, sizeof(log), "train.log", 0), "w"));
	for (int step = 1; step <= 3; step++)
		fprintf(f, "[rank0]:[titan] - step: %d  loss: 8.%d  grad_norm: 2.5\n", step, step);
	cr_assert_eq(fclose(f), 0);
	in_root(db, sizeof(db), "t.db", 0);
	snprintf(args, sizeof(args), "import --format torchtitan '%s' --case c --run r --db '%s' "
	         "--tag-map 'loss=a,grad_norm='", log, db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert(strstr(out, "--tag-map: tag map 'loss=a,grad_norm=', pair 2: no metric name"),
	          "%s", out);
	cr_assert_eq(access(db, F_OK), -1, "nothing made");
	snprintf(args, sizeof(args), "import --format torchtitan '%s' --case c --run r --db '%s' "
	         "--tag-map 'loss=my_loss' && '%s' export --db '%s' --format jsonl c/r", log, db,
	         LKS_BIN, db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "{\"step\":3,\"rank\":0,\"grad_norm\":2.5,\"my_loss\":8.3"), "%s",
	          out);
	/* a case: the map's file relative to the case file, as the log's path */
	put_text(in_root(map, sizeof(map), "names.map", 0),
	         "# torchtitan's labels, as this run's names\nloss = case_loss\n", "w");
	put_text(in_root(ini, sizeof(ini), "mapped.ini", 0),
	         "[case]\ndescription = a map\n\n[run r]\nimport = torchtitan:train.log\n"
	         "import_tag_map = @names.map\n\n[check fin]\nkind = finite\na = r\n", "w");
	snprintf(args, sizeof(args), "run --db '%s' '%s' && '%s' export --db '%s' --format jsonl "
	         "mapped/r", db, ini, LKS_BIN, db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "\"case_loss\":8.1"), "%s", out);
	/* a bad list in a case: the case is refused where it is read */
	put_text(ini, "[case]\ndescription = a map\n\n[run r]\nimport = torchtitan:train.log\n"
	         "import_tag_map = loss=a:fast\n", "w");
	snprintf(args, sizeof(args), "run --db '%s' '%s'", db, ini);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert(strstr(out, "import_tag_map") && strstr(out, "not 'fast'"), "%s", out);
	drop_root();
}

/* ---- TensorBoard folders per rank ---- */

/* torchtitan's folders of one job (metrics.save_for_all_ranks): ts/rank_0, ts/rank_1, each
   with its event files; rank 0 restarted from step 2 in a second file. */
static void write_rank_folders(char *ts, size_t n)
{
	char path[192];
	static const struct tb_scalar r0[] = {
		{ 1, "lm loss", 4.0f }, { 2, "lm loss", 3.0f }, { 3, "lm loss", 2.0f },
	};
	static const struct tb_scalar r0_again[] = {
		{ 2, "lm loss", 3.0f }, { 3, "lm loss", 2.5f }, { 4, "lm loss", 1.5f },
	};
	static const struct tb_scalar r1[] = {
		{ 1, "lm loss", 4.0f }, { 2, "lm loss", 3.0f }, { 3, "lm loss", 2.5f },
		{ 4, "lm loss", 1.75f },
	};

	in_root(ts, n, "20260105-1000", 1);
	snprintf(path, sizeof(path), "%s/rank_0", ts);
	cr_assert_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/rank_1", ts);
	cr_assert_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/rank_0/events.out.tfevents.1767600000.host.1", ts);
	tb_write(path, r0, 3);
	snprintf(path, sizeof(path), "%s/rank_0/events.out.tfevents.1767600900.host.1", ts);
	tb_write(path, r0_again, 3);
	snprintf(path, sizeof(path), "%s/rank_1/events.out.tfevents.1767600000.host.2", ts);
	tb_write(path, r1, 4);
}

/* The rank folders, given one by one or as their job's folder, import as ranks 0 and 1
   with their own values; rank 0's restart takes rank 0 back alone. */
Test(import_tagmap, tensorboard_rank_folders_are_ranks)
{
	char ts[128], r0[160], r1[160], f1[200];
	const char *two[] = { r0, r1 }, *job[] = { ts }, *one[] = { f1 };
	lks_import_result res;
	struct rows *x;
	lks_store *s;

	new_root();
	write_rank_folders(ts, sizeof(ts));
	snprintf(r0, sizeof(r0), "%s/rank_0/", ts);  /* a '/' after it, as a shell completes */
	snprintf(r1, sizeof(r1), "%s/rank_1", ts);
	s = open_db("t.db");
	for (int k = 0; k < 2; k++) {
		cr_assert_eq(import_as(s, "tensorboard", k ? job : two, k ? 1 : 2, k ? "job" : "two",
		                       NULL, NULL, &res), 0, "%s", lks_errmsg());
		cr_assert_eq(res.world_size, 2);
		cr_assert_eq(res.steps, 4);
		cr_assert_eq(res.counts.restarts, 1, "rank 0's second file");
		x = rows_of(s, res.run_id);
		cr_assert_eq(x->n, 8, "4 steps of each rank");
		cr_assert_eq(x->r[row(x, 3, 0, "loss")].value, 2.5, "rank 0 after its restart");
		cr_assert_eq(x->r[row(x, 4, 0, "loss")].value, 1.5);
		cr_assert_eq(x->r[row(x, 4, 1, "loss")].value, 1.75, "rank 1's own");
		cr_assert_eq(x->r[row(x, 1, 1, "loss")].value, 4.0);
		free(x);
	}
	/* one file of a rank's folder is that rank's */
	snprintf(f1, sizeof(f1), "%s/rank_1/events.out.tfevents.1767600000.host.2", ts);
	cr_assert_eq(import_as(s, "tensorboard", one, 1, "one", NULL, NULL, &res), LKS_E_BAD_INPUT);
	cr_assert(strstr(lks_errmsg(), "rank 0 has no steps"), "%s", lks_errmsg());
	cr_assert_eq(import_as(s, "tensorboard", one, 1, "one", NULL, "1", &res), 0, "%s",
	             lks_errmsg());
	x = rows_of(s, res.run_id);
	cr_assert_eq(x->n, 4);
	cr_assert_eq(x->r[row(x, 4, 1, "loss")].value, 1.75);
	free(x);
	lks_store_close(s);
	drop_root();
}

/* ranks_agree on the job's folder sees rank 1 part from rank 0 at step 4 (both ranks
   hold step 3 at 2.5 after rank 0's restart). */
Test(import_tagmap, ranks_agree_sees_the_rank_folders)
{
	char ts[128], ini[128], db[128], args[1024], out[8192];

	new_root();
	write_rank_folders(ts, sizeof(ts));
	put_text(in_root(ini, sizeof(ini), "tb_ranks.ini", 0),
	         "[case]\ndescription = ranks of TensorBoard folders\n\n[run tb]\n"
	         "import = tensorboard:20260105-1000\n\n[check agree]\nkind = ranks_agree\na = tb\n",
	         "w");
	snprintf(args, sizeof(args), "run --db '%s' '%s'", in_root(db, sizeof(db), "t.db", 0), ini);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 1, "%s", out);
	cr_assert(strstr(out, "ws 2  steps up to 4  imported"), "%s", out);
	cr_assert(strstr(out, "step 4"), "%s", out);
	drop_root();
}

/* ---- add_scalars' series (import_folder.c): read with the run's file of their launch ---- */

/* The n scalars as the event file root/rel (its folder made before) */
static void put_events(const char *rel, const struct tb_scalar *s, int n)
{
	char path[320];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	tb_write(path, s, n);
}

#define SERIES_A "events.out.tfevents.1767600000.node.7.0"
#define SERIES_B "events.out.tfevents.1767600900.node.7.0"  /* the pid again: a container */

/* root/run: two launches of one writer's process (host node, pid 7), the second restarted
   from step 3, each with add_scalars("Loss", {"train": ..., "val": ...}) series in
   Loss_train/ and Loss_val/; the series hold steps the run's file lacks (0 and 8), and
   Loss_val/ a file of pid 9, which wrote no file of the run's folder. */
static void write_series_run(char *run, size_t n)
{
	static const struct tb_scalar a[] = {
		{ 1, "lm loss", 4.0f }, { 2, "lm loss", 3.0f }, { 3, "lm loss", 2.0f },
		{ 4, "lm loss", 1.5f },
	};
	static const struct tb_scalar a_train[] = {
		{ 0, "Loss", 4.5f }, { 1, "Loss", 4.25f }, { 2, "Loss", 3.25f }, { 3, "Loss", 2.25f },
		{ 4, "Loss", 1.75f },
	};
	static const struct tb_scalar a_val[] = { { 2, "Loss", 5.5f }, { 4, "Loss", 4.5f } };
	static const struct tb_scalar b[] = {
		{ 3, "lm loss", 2.5f }, { 4, "lm loss", 1.25f }, { 5, "lm loss", 1.0f },
		{ 6, "lm loss", 0.5f },
	};
	static const struct tb_scalar b_train[] = {
		{ 3, "Loss", 2.75f }, { 4, "Loss", 1.5f }, { 5, "Loss", 1.125f }, { 6, "Loss", 0.75f },
	};
	static const struct tb_scalar b_val[] = {
		{ 4, "Loss", 4.25f }, { 6, "Loss", 3.5f }, { 8, "Loss", 3.0f },
	};
	static const struct tb_scalar other[] = { { 1, "Loss", 9.0f } };
	struct { const char *name; const struct tb_scalar *s; int n; } files[] = {
		{ SERIES_A, a, 4 },
		{ "Loss_train/events.out.tfevents.1767600002.node.7.1", a_train, 5 },
		{ "Loss_val/events.out.tfevents.1767600003.node.7.2", a_val, 2 },
		{ SERIES_B, b, 4 },
		{ "Loss_train/events.out.tfevents.1767600901.node.7.1", b_train, 4 },
		{ "Loss_val/events.out.tfevents.1767600950.node.7.2", b_val, 3 },
		{ "Loss_val/events.out.tfevents.1767600100.node.9.1", other, 1 },
	};
	char path[256];

	in_root(run, n, "run", 1);
	in_root(path, sizeof(path), "run/Loss_train", 1);
	in_root(path, sizeof(path), "run/Loss_val", 1);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", run, files[i].name);
		tb_write(path, files[i].s, files[i].n);
	}
}

/* Each series file goes with its launch: launch B's restart at step 3 takes the series
   back with the run; the steps only a series holds are records of their own; the file of
   pid 9 is named as not read. */
Test(import_tagmap, add_scalars_series_are_read_with_their_launch)
{
	char run[128], args[1024], out[4096];
	const char *one[] = { run };
	static const struct { int step; const char *name; double v; } want[] = {
		{ 0, "Loss_train", 4.5 },
		{ 1, "loss", 4.0 }, { 1, "Loss_train", 4.25 },
		{ 2, "loss", 3.0 }, { 2, "Loss_train", 3.25 }, { 2, "val_loss", 5.5 },
		{ 3, "loss", 2.5 }, { 3, "Loss_train", 2.75 },
		{ 4, "loss", 1.25 }, { 4, "Loss_train", 1.5 }, { 4, "val_loss", 4.25 },
		{ 5, "loss", 1.0 }, { 5, "Loss_train", 1.125 },
		{ 6, "loss", 0.5 }, { 6, "Loss_train", 0.75 }, { 6, "val_loss", 3.5 },
		{ 8, "val_loss", 3.0 },
	};
	lks_import_result res;
	struct rows *x;
	lks_store *s;
	int n = (int)(sizeof(want) / sizeof(want[0]));

	new_root();
	write_series_run(run, sizeof(run));
	s = open_db("t.db");
	cr_assert_eq(import_as(s, "tensorboard", one, 1, "r", "Loss/val=val_loss", NULL, &res), 0,
	             "%s", lks_errmsg());
	cr_assert_eq(res.steps, 8);
	cr_assert_eq(res.world_size, 1);
	cr_assert_eq(res.counts.restarts, 1, "launch B");
	cr_assert_eq(res.counts.records, 10, "steps 0-4 of launch A, 3-6 and 8 of launch B");
	cr_assert_eq(res.unread, 1);
	cr_assert(strstr(res.unread_first, "/run/Loss_val/events.out.tfevents.1767600100.node.9.1"),
	          "%s", res.unread_first);
	x = rows_of(s, res.run_id);
	for (int i = 0; i < n; i++) {
		int k = row(x, want[i].step, 0, want[i].name);

		cr_assert_geq(k, 0, "step %d %s", want[i].step, want[i].name);
		cr_assert_eq(x->r[k].value, want[i].v, "step %d %s: %.17g", want[i].step,
		             want[i].name, x->r[k].value);
	}
	cr_assert_eq(x->n, n, "nothing more: launch A's steps 3 and 4 gone with the restart");
	free(x);
	lks_store_close(s);

	/* the command says what it left, and what to do with it */
	snprintf(args, sizeof(args), "import --db '%s/cli.db' --format tensorboard --case c --run r "
	         "'%s'", root, run);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "not read: 1 event file of add_scalars series, such as '"), "%s", out);
	cr_assert(strstr(out, "node.9.1': no event file of the run's folder is of its writer's "
	                 "launch"), "%s", out);
	drop_root();
}

/* A host of dots and digits (an address) and two processes' files in one run's folder:
   each series file goes with its own process's, by the host and pid in the names, and a
   value a series holds of a metric the run's file has at that step must be the same
   bits. */
Test(import_tagmap, add_scalars_series_pair_by_process_and_agree_with_the_run)
{
	static const struct tb_scalar p1[] = { { 1, "lm loss", 4.0f }, { 2, "lm loss", 3.0f } };
	static const struct tb_scalar p2[] = { { 3, "lm loss", 2.0f }, { 4, "lm loss", 1.0f } };
	static const struct tb_scalar s1[] = { { 1, "x", 1.0f }, { 2, "x", 2.0f } };
	static const struct tb_scalar s2[] = { { 3, "x", 3.0f }, { 4, "x", 4.0f } };
	static const struct tb_scalar same[] = { { 2, "m", 3.0f } };
	static const struct tb_scalar other[] = { { 2, "m", 3.5f } };
	char run[128], path[256];
	const char *one[] = { run };
	lks_import_result res;
	struct rows *x;
	lks_store *s;

	new_root();
	in_root(run, sizeof(run), "run", 1);
	in_root(path, sizeof(path), "run/x_a", 1);
	/* two processes, 4567 and 4568, write into the run's folder, each its series after
	   both began: 4567's series goes with 4567's file, not with the later-begun 4568's */
	put_events("run/events.out.tfevents.1767600000.10.0.0.7.4567.0", p1, 2);
	put_events("run/events.out.tfevents.1767600001.10.0.0.7.4568.0", p2, 2);
	put_events("run/x_a/events.out.tfevents.1767600005.10.0.0.7.4567.1", s1, 2);
	put_events("run/x_a/events.out.tfevents.1767600006.10.0.0.7.4568.12", s2, 2);
	s = open_db("t.db");
	cr_assert_eq(import_as(s, "tensorboard", one, 1, "r", NULL, NULL, &res), 0, "%s",
	             lks_errmsg());
	cr_assert_eq(res.unread, 0, "%s", res.unread_first);
	cr_assert_eq(res.counts.records, 4);
	x = rows_of(s, res.run_id);
	cr_assert_eq(x->n, 8);
	for (int k = 1; k <= 4; k++)
		cr_assert_eq(x->r[row(x, k, 0, "x_a")].value, k, "step %d", k);
	free(x);

	/* a series mapped onto the run's loss: the same bits are one value, others bad input
	   naming the series file */
	in_root(path, sizeof(path), "run/m_b", 1);
	put_events("run/m_b/events.out.tfevents.1767600007.10.0.0.7.4567.2", same, 1);
	cr_assert_eq(import_as(s, "tensorboard", one, 1, "same", "m/b=loss", NULL, &res), 0, "%s",
	             lks_errmsg());
	put_events("run/m_b/events.out.tfevents.1767600007.10.0.0.7.4567.2", other, 1);
	cr_assert_eq(import_as(s, "tensorboard", one, 1, "other", "m/b=loss", NULL, &res),
	             LKS_E_BAD_INPUT);
	cr_assert(strstr(lks_errmsg(), "m_b/events.out.tfevents.1767600007.10.0.0.7.4567.2':1: "
	                 "metric 'loss' at step 2 is 3 in the run's file and 3.5 in this "
	                 "add_scalars series"), "%s", lks_errmsg());
	lks_store_close(s);
	drop_root();
}

/* A series file is checked as any event file: a bad CRC names it and its offset, and
   nothing of the run is stored. */
Test(import_tagmap, a_corrupt_series_file_stores_nothing)
{
	static const struct tb_scalar a[] = { { 1, "lm loss", 4.0f }, { 2, "lm loss", 3.0f } };
	static const struct tb_scalar t[] = { { 1, "Loss", 1.0f }, { 2, "Loss", 2.0f } };
	char run[128], path[256], db[160];
	const char *one[] = { run };
	lks_import_result res;
	lks_store *s;
	FILE *f;

	new_root();
	in_root(run, sizeof(run), "run", 1);
	in_root(path, sizeof(path), "run/Loss_train", 1);
	put_events("run/" SERIES_A, a, 2);
	put_events("run/Loss_train/events.out.tfevents.1767600001.node.7.1", t, 2);
	f = fopen(in_root(path, sizeof(path), "run/Loss_train/events.out.tfevents.1767600001.node.7.1",
	                  0), "r+b");
	cr_assert_not_null(f);
	cr_assert_eq(fseek(f, -6, SEEK_END), 0);  /* a byte of the last record's data */
	cr_assert_eq(fputc('~', f), '~');
	cr_assert_eq(fclose(f), 0);
	s = open_db("t.db");
	cr_assert_eq(import_as(s, "tensorboard", one, 1, "r", NULL, NULL, &res), LKS_E_BAD_INPUT);
	cr_assert(strstr(lks_errmsg(), "Loss_train/events.out.tfevents.1767600001.node.7.1': byte "),
	          "%s", lks_errmsg());
	cr_assert(strstr(lks_errmsg(), "bad CRC"), "%s", lks_errmsg());
	lks_store_close(s);
	snprintf(db, sizeof(db), "sqlite3 '%s/t.db' 'SELECT count(*) FROM runs' | grep -qx 0", root);
	cr_assert_eq(system(db), 0, "a run row was stored");
	drop_root();
}

/* tensorboardX's names hold the start and the host, no process: a series file goes with
   the run's file of the same host and suffix begun last before it, in TAG/KEY/ folders as
   deep as the tag's '/' make them; one of another host, or begun before any run's file,
   is not read. */
Test(import_tagmap, tensorboardx_series_pair_by_host_and_start)
{
	static const struct tb_scalar a[] = { { 1, "lm loss", 4.0f }, { 2, "lm loss", 3.0f } };
	static const struct tb_scalar k[] = { { 1, "a/b", 1.5f }, { 2, "a/b", 2.5f } };
	static const struct tb_scalar late[] = { { 9, "a/b", 7.0f } };
	char run[128], path[256];
	const char *one[] = { run };
	lks_import_result res;
	struct rows *x;
	lks_store *s;

	new_root();
	in_root(run, sizeof(run), "run", 1);
	in_root(path, sizeof(path), "run/a", 1);
	in_root(path, sizeof(path), "run/a/b", 1);
	in_root(path, sizeof(path), "run/a/b/k", 1);
	in_root(path, sizeof(path), "run/x", 1);
	put_events("run/events.out.tfevents.1767600000.host-a.lks", a, 2);
	put_events("run/a/b/k/events.out.tfevents.1767600000.host-a.lks", k, 2);
	put_events("run/a/b/k/events.out.tfevents.1767600000.host-b.lks", late, 1);
	put_events("run/x/events.out.tfevents.1767599999.host-a.lks", late, 1);
	s = open_db("t.db");
	cr_assert_eq(import_as(s, "tensorboard", one, 1, "r", NULL, NULL, &res), 0, "%s",
	             lks_errmsg());
	cr_assert_eq(res.steps, 2, "step 9 of the files not read is not the run's");
	cr_assert_eq(res.unread, 2);
	cr_assert(strstr(res.unread_first, "/run/a/b/k/events.out.tfevents.1767600000.host-b.lks"),
	          "%s", res.unread_first);
	x = rows_of(s, res.run_id);
	cr_assert_eq(x->n, 4);
	cr_assert_eq(x->r[row(x, 1, 0, "a_b_k")].value, 1.5, "the tag a/b/k");
	cr_assert_eq(x->r[row(x, 2, 0, "a_b_k")].value, 2.5);
	free(x);
	lks_store_close(s);
	drop_root();
}

/* A folder of runs' folders: two launches one after another (Hugging Face's runs/<launch>/:
   each process's first writer, even where a container gave both the same pid) are read in
   turn, the later a restart; two writers of one process (train/ and val/, the second
   writer of its process) are refused, naming both, rather than read as a restart that
   would drop train's steps from val's first on. */
Test(import_tagmap, two_writers_of_one_launch_are_not_a_restart)
{
	static const struct tb_scalar a[] = { { 1, "loss", 4.0f }, { 2, "loss", 3.0f },
	                                      { 3, "loss", 2.0f } };
	static const struct tb_scalar b[] = { { 2, "loss", 3.0f }, { 3, "loss", 2.5f } };
	char top[128], path[256], args[1024], out[4096];
	const char *one[] = { top };
	lks_import_result res;
	lks_store *s;

	new_root();
	in_root(top, sizeof(top), "runs", 1);
	in_root(path, sizeof(path), "runs/launch1", 1);
	in_root(path, sizeof(path), "runs/launch2", 1);
	put_events("runs/launch1/events.out.tfevents.1767600000.pod.1.0", a, 3);
	put_events("runs/launch2/events.out.tfevents.1767600900.pod.1.0", b, 2);
	s = open_db("t.db");
	cr_assert_eq(import_as(s, "tensorboard", one, 1, "launches", NULL, NULL, &res), 0, "%s",
	             lks_errmsg());
	cr_assert_eq(res.counts.restarts, 1, "launch2 from step 2");

	in_root(top, sizeof(top), "exp", 1);
	in_root(path, sizeof(path), "exp/train", 1);
	in_root(path, sizeof(path), "exp/val", 1);
	put_events("exp/train/events.out.tfevents.1767600000.pod.1.0", a, 3);
	put_events("exp/val/events.out.tfevents.1767600000.pod.1.1", b, 2);
	cr_assert_eq(import_as(s, "tensorboard", one, 1, "writers", NULL, NULL, &res),
	             LKS_E_BAD_INPUT);
	cr_assert(strstr(lks_errmsg(), "/exp/train' and '") && strstr(lks_errmsg(), "/exp/val' "
	          "were written by one process (their event files' names: "
	          "'events.out.tfevents.1767600000.pod.1.0', 'events.out.tfevents.1767600000.pod.1.1')"),
	          "%s", lks_errmsg());
	lks_store_close(s);
	/* the command says so too, and stores nothing */
	snprintf(args, sizeof(args), "import --db '%s/cli.db' --format tensorboard --case c --run w "
	         "'%s'", root, top);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert(strstr(out, "import each as a run of its own"), "%s", out);
	drop_root();
}

/* Without a pid in the names (tensorboardX's), the events' wall times tell a launch and
   its restart (the second begun after the first's last event) from two runs written at
   once (the second's first event before the first's last): read in turn, or refused. */
Test(import_tagmap, runs_written_at_once_are_not_a_restart)
{
	static const struct tb_scalar a[] = { { 1, "loss", 4.0f }, { 2, "loss", 3.0f },
	                                      { 3, "loss", 2.0f } };
	static const struct tb_scalar b[] = { { 2, "loss", 3.0f }, { 3, "loss", 2.5f } };
	static const double a_at[] = { 1767600000.5, 1767600060.5, 1767600120.5 };
	static const double later[] = { 1767600300.25, 1767600360.25 };
	static const double meanwhile[] = { 1767600061.0, 1767600121.0 };
	char top[128], path[256];
	const char *one[] = { top };
	lks_import_result res;
	lks_store *s;

	new_root();
	in_root(top, sizeof(top), "runs", 1);
	in_root(path, sizeof(path), "runs/a", 1);
	in_root(path, sizeof(path), "runs/b", 1);
	tb_write_at(in_root(path, sizeof(path), "runs/a/events.out.tfevents.1767600000.node", 0),
	            a, a_at, 3);
	tb_write_at(in_root(path, sizeof(path), "runs/b/events.out.tfevents.1767600300.node", 0),
	            b, later, 2);
	s = open_db("t.db");
	cr_assert_eq(import_as(s, "tensorboard", one, 1, "restart", NULL, NULL, &res), 0, "%s",
	             lks_errmsg());
	cr_assert_eq(res.counts.restarts, 1, "b from step 2");

	in_root(top, sizeof(top), "exp", 1);
	in_root(path, sizeof(path), "exp/train", 1);
	in_root(path, sizeof(path), "exp/val", 1);
	tb_write_at(in_root(path, sizeof(path), "exp/train/events.out.tfevents.1767600000.node", 0),
	            a, a_at, 3);
	tb_write_at(in_root(path, sizeof(path), "exp/val/events.out.tfevents.1767600061.node", 0),
	            b, meanwhile, 2);
	cr_assert_eq(import_as(s, "tensorboard", one, 1, "at_once", NULL, NULL, &res),
	             LKS_E_BAD_INPUT);
	cr_assert(strstr(lks_errmsg(), "/exp/val' began (its first event at 2026-01-05 08:01:01.000 "
	                 "UTC) before '") && strstr(lks_errmsg(), "/exp/train' ended (its last at "
	                 "2026-01-05 08:02:00.500 UTC): two runs written at once"), "%s", lks_errmsg());
	lks_store_close(s);
	drop_root();
}
