/*
 * test_check_kind.c: the check-kind table (harness/engine/check_kind.h) is the one place a
 * kind is declared. Every row is a kind that the case parser takes and validates by its
 * row (its runs, the keys it reads, what it needs of its runs), that 'lockstep list' and
 * its help show, that verify evaluates (a function of check.c's table), and that has a
 * column in 'lockstep bench detect' or says why not. So a kind added without one of its
 * pieces fails here.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/base/name.h"
#include "harness/engine/case.h"
#include "harness/verify/check.h"
#include "kernels/err.h"
#include "run_bin.h"

static char tmpdir[] = "/tmp/lks_test_check_kind_XXXXXX";

static void setup(void)
{
	cr_assert_not_null(mkdtemp(tmpdir), "mkdtemp");
}

static void teardown(void)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	cr_assert_eq(system(cmd), 0);
}

/* Two runs of two ranks: a with checkpointing (what recompute needs), b without, resumed
   from a (what resume needs: of a's recipe). */
#define RUNS "[case]\nsteps = 3\nworld_size = 2\n" \
	"[model]\nvocab = 32\nhidden = 16\nffn = 32\nlayers = 1\nseq = 4\nbatch = 1\n" \
	"[run a]\nrecipe = fp8_rowwise\ncheckpoint = blocks\n[run b]\nrecipe = fp8_rowwise\n" \
	"resume_from = a@0\n"

/* A check of kind k called k<k> on run a, with every key its row says it reads (b when it
   compares two runs, unless no_b), then extra; appended to buf. */
static void check_text(char *buf, size_t size, int k, const char *a, int no_b, const char *extra)
{
	const lks_check_kind_info *row = lks_check_kind_of((lks_check_kind)k);
	size_t len = strlen(buf);

#define ADD(...) (len += (size_t)snprintf(buf + len, size - len, __VA_ARGS__))
	ADD("[check k%d]\nkind = %s\na = %s\n", k, row->name, a);
	if (row->nruns == 2 && !no_b)
		ADD("b = b\n");
	if (row->keys & LKS_CK_METRIC)
		ADD("metric = l2\ntensors = blocks.*\n");
	if (row->keys & LKS_CK_TOL)
		ADD("rtol = 0.125\natol = 0.375\n");
	if (row->keys & LKS_CK_FLOOR)
		ADD("floor_db = 17.5\n");
	ADD("%s", extra);
#undef ADD
	cr_assert_lt(len, size - 1);
}

/* tmpdir/name holding RUNS and then checks; its path. */
static const char *put_case(const char *name, const char *checks)
{
	static char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	cr_assert_not_null(f = fopen(path, "w"));
	fprintf(f, "%s%s", RUNS, checks);
	fclose(f);
	return path;
}

/* The case with the check of kind k fails to load, naming the check's line (17: the
   first line after RUNS). */
static void refused(int k, const char *a, int no_b, const char *extra, const char *why)
{
	char text[1024] = "", where[300];
	const char *path;
	lks_case c;

	check_text(text, sizeof(text), k, a, no_b, extra);
	path = put_case("bad.ini", text);
	cr_assert_neq(lks_case_load(path, NULL, 0, &c), 0, "%s: %s accepted", why,
	              lks_check_kind_name((lks_check_kind)k));
	snprintf(where, sizeof(where), "%s:17: check 'k%d'", path, k);
	cr_assert_not_null(strstr(lks_errmsg(), where), "%s: %s", why, lks_errmsg());
}

/* Every kind, one check each, into text. */
static void every_kind(char *text, size_t size)
{
	text[0] = 0;
	for (int k = 0; k < LKS_CHECK_COUNT; k++)
		check_text(text, size, k, "a", 0, "");
}

Test(check_kind, every_row_is_complete)
{
	cr_assert_null(lks_check_kind_of(LKS_CHECK_COUNT));
	for (int k = 0; k < LKS_CHECK_COUNT; k++) {
		const lks_check_kind_info *row = lks_check_kind_of((lks_check_kind)k);
		const lks_check_detect *d;

		cr_assert_not_null(row);
		cr_assert_not_null(row->name, "kind %d has no row", k);
		cr_assert_eq(lks_name_check("check kind", row->name, strlen(row->name)), 0, "%s",
		             lks_errmsg());
		cr_assert(row->nruns == 1 || row->nruns == 2, "%s", row->name);
		cr_assert(row->what && row->what[0] && row->shown, "%s: no words for list", row->name);
		/* the list text shows only keys the kind reads */
		cr_assert(!strstr(row->shown, "{metric}") || (row->keys & LKS_CK_METRIC), "%s", row->name);
		cr_assert(!strstr(row->shown, "{rtol}") || (row->keys & LKS_CK_TOL), "%s", row->name);
		cr_assert(!strstr(row->shown, "{atol}") || (row->keys & LKS_CK_TOL), "%s", row->name);
		cr_assert(!strstr(row->shown, "{floor_db}") || (row->keys & LKS_CK_FLOOR), "%s",
		          row->name);
		/* a column, with settings the kind reads, or an explicit none */
		d = &row->detect;
		cr_assert((d->title != NULL) != (d->none != NULL), "%s: want a bench detect column "
		          "or a reason for none, not %s", row->name, d->title ? "both" : "neither");
		cr_assert(!d->metric || (row->keys & LKS_CK_METRIC), "%s", row->name);
		cr_assert(d->rtol == 0 || (row->keys & LKS_CK_TOL), "%s", row->name);
		cr_assert(d->floor_db == 0 || (row->keys & LKS_CK_FLOOR), "%s", row->name);
		for (int j = 0; j < k; j++)
			cr_assert_str_neq(row->name, lks_check_kind_name((lks_check_kind)j));
	}
}

/* Parsed by its row, evaluated by verify: every kind in one case. */
Test(check_kind, every_row_parses_and_has_an_evaluation, .init = setup, .fini = teardown)
{
	char text[8192];
	lks_case c;

	every_kind(text, sizeof(text));
	cr_assert_eq(lks_case_load(put_case("all.ini", text), NULL, 0, &c), 0, "%s", lks_errmsg());
	cr_assert_eq(c.nchecks, LKS_CHECK_COUNT);
	for (int k = 0; k < LKS_CHECK_COUNT; k++) {
		const lks_check_kind_info *row = lks_check_kind_of((lks_check_kind)k);
		const lks_check_cfg *cfg = &c.checks[k];
		lks_check_result res;

		cr_assert_eq(cfg->kind, (lks_check_kind)k);
		cr_assert_str_eq(cfg->b, row->nruns == 2 ? "b" : "");
		if (row->keys & LKS_CK_METRIC)
			cr_assert_str_eq(cfg->metric, "l2");
		if (row->keys & LKS_CK_TOL)
			cr_assert(cfg->rtol == 0.125 && cfg->atol == 0.375, "%s", row->name);
		if (row->keys & LKS_CK_FLOOR)
			cr_assert(cfg->floor_db == 17.5, "%s", row->name);
		/* a kind without its function in check.c is an error, not a verdict */
		cr_assert_eq(lks_check_eval(NULL, cfg, NULL, 0, 0, &res), 0, "%s: %s", row->name,
		             lks_errmsg());
		cr_assert_eq(res.verdict, LKS_VERDICT_SKIPPED, "%s", row->name);
	}
	lks_case_release(&c);
}

/* What a row says a kind takes and needs is what the parser refuses, at the check's line;
   what it does not refuse loads, the metric defaulting to loss where the kind reads one. */
Test(check_kind, the_parser_validates_by_the_row, .init = setup, .fini = teardown)
{
	for (int k = 0; k < LKS_CHECK_COUNT; k++) {
		const lks_check_kind_info *row = lks_check_kind_of((lks_check_kind)k);
		char text[1024] = "";
		lks_case c;

		if (row->nruns == 2)
			refused(k, "a", 1, "", "two runs without b");
		else
			refused(k, "a", 0, "b = b\n", "b on a one-run kind");
		if (!(row->keys & LKS_CK_METRIC))
			refused(k, "a", 0, "metric = l2\ntensors = blocks.*\n", "tensors on a kind that "
			        "reads no metric");
		if (row->needs & LKS_CK_CHECKPOINT)
			refused(k, "b", 0, "", "a run without checkpointing");
		if (row->needs & LKS_CK_MAJORITY)
			refused(k, "a", 0, "expect = fail\nrank = 1\n", "a rank of two");
		snprintf(text, sizeof(text), "[check k%d]\nkind = %s\na = a\n%sexpect = fail\n%s", k,
		         row->name, row->nruns == 2 ? "b = b\n" : "",
		         row->needs & LKS_CK_MAJORITY ? "" : "rank = 1\n");
		cr_assert_eq(lks_case_load(put_case("one.ini", text), NULL, 0, &c), 0, "%s: %s",
		             row->name, lks_errmsg());
		cr_assert_str_eq(c.checks[0].metric, row->keys & LKS_CK_METRIC ? "loss" : "");
		lks_case_release(&c);
	}
}

/* 'lockstep list' shows each check with its kind and the row's text; its help has a line
   per row; 'bench detect' has the row's column, in the table's order, or says why not. */
Test(check_kind, every_row_is_listed_and_has_a_detect_column, .init = setup, .fini = teardown,
     .timeout = 120)
{
	char text[8192], args[600], out[16384], want[300], shown[200];
	const char *at = NULL, *p;
	lks_case c;

	every_kind(text, sizeof(text));
	cr_assert_eq(lks_case_load(put_case("all.ini", text), NULL, 0, &c), 0, "%s", lks_errmsg());
	snprintf(args, sizeof(args), "list '%s/all.ini'", tmpdir);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	for (int k = 0; k < LKS_CHECK_COUNT; k++) {
		char *line;

		snprintf(want, sizeof(want), "    k%d ", k);
		cr_assert_not_null(line = strstr(out, want), "no check k%d in\n%s", k, out);
		*strchr(line, '\n') = 0;
		cr_assert_not_null(strstr(line, lks_check_kind_name((lks_check_kind)k)), "%s", line);
		lks_check_kind_shown(&c.checks[k], shown, sizeof(shown));
		cr_assert_null(strchr(shown, '{'), "%s", shown);
		cr_assert_not_null(strstr(line, shown), "'%s' not in '%s'", shown, line);
		line[strlen(line)] = '\n';
	}
	lks_case_release(&c);
	cr_assert_eq(lks_run_bin(NULL, "list --help", out, sizeof(out)), 0, "%s", out);
	for (int k = 0; k < LKS_CHECK_COUNT; k++) {
		const lks_check_kind_info *row = lks_check_kind_of((lks_check_kind)k);

		snprintf(want, sizeof(want), "  %-12s %-5s %s\n", row->name,
		         row->nruns == 2 ? "a, b" : "a", row->what);
		cr_assert_not_null(strstr(out, want), "no line '%s' in\n%s", want, out);
	}

	snprintf(args, sizeof(args), "bench detect --dir '%s' '%s/cases/faults/bitflip.ini'",
	         tmpdir, LKS_SRC);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(at = strstr(out, "| fault |"), "%s", out);
	for (int k = 0; k < LKS_CHECK_COUNT; k++) {
		const lks_check_kind_info *row = lks_check_kind_of((lks_check_kind)k);

		if (!row->detect.title)
			continue;
		snprintf(want, sizeof(want), "| %s |", row->detect.title);
		cr_assert_not_null(p = strstr(at, want), "no column '%s' (after the one before) in\n%s",
		                   row->detect.title, out);
		at = p + 1;
	}
	cr_assert_eq(lks_run_bin(NULL, "bench detect --help", out, sizeof(out)), 0, "%s", out);
	for (int k = 0; k < LKS_CHECK_COUNT; k++) {
		const lks_check_kind_info *row = lks_check_kind_of((lks_check_kind)k);

		if (row->detect.title)
			continue;
		snprintf(want, sizeof(want), "  %-16s none: %s\n", row->name, row->detect.none);
		cr_assert_not_null(strstr(out, want), "no line '%s' in\n%s", want, out);
	}
}
