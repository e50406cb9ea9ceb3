/*
 * test_screen_report.c: a screen kept in the database ('lockstep screen --db') and shown
 * by 'lockstep report', as an operator's nightly does it (LKS_BIN; the screen's cases and
 * goldens of the source tree, LKS_SRC): a database with screens and no suite is reported
 * as its latest screen, every device named with its verdict, the faulty one's divergence
 * and replay class, and nothing else marked bad; beside suites, a suite's report shows
 * the latest screen kept before the next suite started; headless Chromium (where it is
 * installed) renders the section's text; an output that cannot be written loses no other.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run_bin.h"

static const char tiny_case[] =
	"[case]\nsteps = 2\nseed = 7\nworld_size = 1\n"
	"[model]\nvocab = 32\nhidden = 16\nffn = 32\nlayers = 1\nseq = 4\nbatch = 2\n"
	"[run bf16]\nrecipe = bf16\n";

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0;

	cr_assert_not_null(f, "cannot open '%s'", path);
	cr_assert_geq(getdelim(&buf, &len, 0, f), 0);
	fclose(f);
	return buf;
}

/* Occurrences of needle in s. */
static int count(const char *s, const char *needle)
{
	int n = 0;

	for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* 'lockstep screen --backend cpu --db DIR/s.db ARGS' with a plant (NULL: none): its exit. */
static int screen(const char *dir, const char *plant, const char *args, char *out, size_t n)
{
	char cmd[1600];

	snprintf(cmd, sizeof(cmd), "cd '%s' && %s%s%s '%s' screen --backend cpu --db '%s/s.db' "
	         "--json '%s/node.json' %s 2>&1", LKS_SRC, plant ? "LOCKSTEP_INJECT='" : "",
	         plant ? plant : "", plant ? "'" : "", LKS_BIN, dir, dir, args);
	return lks_run_sh(cmd, out, n);
}

static int report(const char *dir, const char *args, char *out, size_t n)
{
	char cmd[1200];

	snprintf(cmd, sizeof(cmd), "'%s' report --db '%s/s.db' -o '%s/r' %s 2>&1", LKS_BIN, dir,
	         dir, args);
	return lks_run_sh(cmd, out, n);
}

static int run_suite(const char *dir)
{
	char cmd[1200], out[4096];
	FILE *f;

	snprintf(cmd, sizeof(cmd), "%s/tiny.ini", dir);
	cr_assert_not_null(f = fopen(cmd, "w"));
	fputs(tiny_case, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "'%s' run '%s/tiny.ini' --db '%s/s.db' --backend cpu 2>&1",
	         LKS_BIN, dir, dir);
	return lks_run_sh(cmd, out, sizeof(out));
}

static void cleanup(const char *dir)
{
	char cmd[200];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

/* Three stand-ins, a fault planted on one: the page of the database's only screen. */
Test(screen_report, a_screen_alone_is_its_page, .timeout = 300)
{
	char dir[64] = "/tmp/lks_screen_rep_XXXXXX", out[8192], path[200], row[200];
	char *md, *html;
	json_t *doc;
	json_error_t e;

	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(screen(dir, "bitflip step=3 rank=0 tensor=blocks.0.mlp.down.weight "
	                    "element=5 bit=27 device=1", "--standins 3", out, sizeof(out)), 1,
	             "%s", out);
	cr_assert_eq(report(dir, "", out, sizeof(out)), 0, "%s", out);
	cr_expect_not_null(strstr(out, "node screen 1: 1 of 3 devices did not pass"), "%s", out);
	cr_expect_null(strstr(out, "suite"), "a suite reported from a database of none: %s", out);
	snprintf(path, sizeof(path), "%s/r/report.md", dir);
	md = slurp(path);
	snprintf(path, sizeof(path), "%s/r/index.html", dir);
	html = slurp(path);
	/* the JSON file and the kept document are the same screen */
	snprintf(path, sizeof(path), "%s/node.json", dir);
	cr_assert_not_null(doc = json_load_file(path, 0, &e), "%s", e.text);
	cr_expect_not_null(strstr(md, json_string_value(json_object_get(doc, "time"))), "%s", md);
	for (int i = 0; i < 3; i++) {
		snprintf(row, sizeof(row), "| %d | CPU stand-in | CPU-standin-%d |  |  | %s |", i, i,
		         i == 1 ? "fail" : "pass");
		cr_expect_not_null(strstr(md, row), "no '%s' in:\n%s", row, md);
	}
	cr_expect_not_null(strstr(md, "Result: fail"), "%s", md);
	cr_expect_not_null(strstr(md, "step 3, tensor 'blocks.0.mlp.down.weight'"), "%s", md);
	cr_expect_not_null(strstr(md, "| persistent |"), "%s", md);
	/* the faulty device's two rows (devices, departures) and nothing else marked bad */
	cr_expect_eq(count(html, "<tr class=\"bad\">"), 2, "%s", html);
	cr_expect_not_null(strstr(html, "<h2>node screen</h2>"));
	if (lks_run_sh("command -v chromium >/dev/null", NULL, 0) == 0) {
		char cmd[600], dom[65536];

		snprintf(cmd, sizeof(cmd), "timeout 120 chromium --headless --no-sandbox "
		         "--disable-gpu --disable-dev-shm-usage --dump-dom 'file://%s/r/index.html' "
		         "2>/dev/null", dir);
		cr_assert_eq(lks_run_sh(cmd, dom, sizeof(dom)), 0);
		cr_expect_not_null(strstr(dom, "CPU-standin-2"), "not rendered: %.2000s", dom);
		cr_expect_eq(count(dom, "<tr class=\"bad\">"), 2, "%.4000s", dom);
	}
	json_decref(doc);
	free(md);
	free(html);
	cleanup(dir);
}

/* suite 1, screen A, suite 2, suite 3, screen B: suite 2's report shows A (B came after
   suite 3 started), suite 3's shows B; a database of suites alone has no screen section. */
Test(screen_report, a_suite_shows_its_nights_screen, .timeout = 300)
{
	char dir[64] = "/tmp/lks_screen_rep_XXXXXX", out[8192], path[200];
	char *md;

	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(run_suite(dir), 0);
	cr_assert_eq(report(dir, "", out, sizeof(out)), 0, "%s", out);
	snprintf(path, sizeof(path), "%s/r/report.md", dir);
	md = slurp(path);
	cr_expect_null(strstr(md, "node screen"), "a screen section without a screen");
	cr_expect_null(strstr(out, "node screen"), "%s", out);
	free(md);

	cr_assert_eq(screen(dir, NULL, "--standins 2 --mode quick", out, sizeof(out)), 0,
	             "%s", out);
	cr_assert_eq(run_suite(dir), 0);
	cr_assert_eq(run_suite(dir), 0);
	cr_assert_eq(screen(dir, "bitflip step=1 rank=0 tensor=head.weight element=3 bit=30 "
	                    "device=0", "--standins 2", out, sizeof(out)), 1, "%s", out);
	cr_assert_eq(report(dir, "--suite 2", out, sizeof(out)), 0, "%s", out);
	cr_expect_not_null(strstr(out, "node screen 1: 0 of 2 devices did not pass"), "%s", out);
	md = slurp(path);
	cr_expect_not_null(strstr(md, "Result: pass"), "%s", md);
	free(md);
	cr_assert_eq(report(dir, "--suite 3", out, sizeof(out)), 0, "%s", out);
	cr_expect_not_null(strstr(out, "node screen 2: 1 of 2 devices did not pass"), "%s", out);
	md = slurp(path);
	cr_expect_not_null(strstr(md, "| 0 | CPU stand-in | CPU-standin-0 |  |  | fail |"),
	                   "%s", md);
	free(md);
	cleanup(dir);
}

/* An output that cannot be written loses no other: --json into a missing folder is exit 3
   naming it, and the database still keeps the screen. */
Test(screen_report, a_bad_output_loses_no_other, .timeout = 120)
{
	char dir[64] = "/tmp/lks_screen_rep_XXXXXX", out[8192], cmd[1200];

	cr_assert_not_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "cd '%s' && '%s' screen --backend cpu --standins 2 "
	         "--db '%s/s.db' --json '%s/missing/node.json' 2>&1", LKS_SRC, LKS_BIN, dir, dir);
	cr_assert_eq(lks_run_sh(cmd, out, sizeof(out)), 3, "%s", out);
	cr_expect_not_null(strstr(out, "missing/node.json"), "%s", out);
	cr_assert_eq(report(dir, "", out, sizeof(out)), 0, "%s", out);
	cr_expect_not_null(strstr(out, "node screen 1: 0 of 2 devices did not pass"), "%s", out);
	cleanup(dir);
}
