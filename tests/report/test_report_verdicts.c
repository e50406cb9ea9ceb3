/*
 * test_report_verdicts.c: what the report's summary and tables say of a suite that is not
 * whole. A run killed (incomplete) or failed, or a case whose checks were never stored
 * (the suite stopped before them), makes the case "incomplete", never "pass"; a case that
 * declares no check is still a pass. A planted fault whose check was skipped (--run) is
 * counted apart, not as missed. A NaN loss reads NaN in the runs and trend tables (one
 * rank's NaN makes the ranks' mean NaN). The
 * heatmap of a pruned suite says its stats were pruned, and a tensor row neither run
 * stored is no divergence. The states are made in the stored suite with SQL, as a kill
 * at that moment would leave it. The cases and their folder: report_fixture.h.
 */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_fixture.h"
#include "harness/report/junit.h"

/* SQL on dir/t.db. */
static void sql(const char *dir, const char *stmt)
{
	char path[300], *err = NULL;
	sqlite3 *db;

	snprintf(path, sizeof(path), "%s/t.db", dir);
	cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(db, stmt, NULL, NULL, &err), SQLITE_OK, "%s: %s", stmt, err);
	sqlite3_close(db);
}

/* The report of dir/t.db (extra: more options) into dir/r; what it printed, its
   report.md and index.html (each malloc'd). */
static void report(const char *dir, const char *extra, char **out, char **md, char **html)
{
	char path[300];

	cr_assert_eq(sh("'%s' report --db '%s/t.db' %s -o '%s/r' > '%s/out.txt'", LKS_BIN, dir,
	                extra, dir, dir), 0);
	snprintf(path, sizeof(path), "%s/out.txt", dir);
	*out = slurp(path);
	snprintf(path, sizeof(path), "%s/r/report.md", dir);
	*md = slurp(path);
	snprintf(path, sizeof(path), "%s/r/index.html", dir);
	*html = slurp(path);
}

static void report_free(char *out, char *md, char *html)
{
	free(out);
	free(md);
	free(html);
}

Test(report_verdicts, a_killed_or_failed_suite_is_incomplete, .timeout = 120)
{
	char dir[64], *out, *md, *html;

	setup(dir, sizeof(dir));
	/* killed in run fp8 of case tiny at step 2: the run incomplete, the case's checks never
	   stored */
	sql(dir, "UPDATE runs SET status = 'incomplete' WHERE case_name = 'tiny' "
	         "AND run_name = 'fp8'; DELETE FROM checks WHERE case_name = 'tiny'; "
	         "DELETE FROM steps WHERE step = 2 AND run_id = (SELECT run_id FROM runs "
	         "WHERE case_name = 'tiny' AND run_name = 'fp8')");
	report(dir, "", &out, &md, &html);
	/* its steps say it was meant to have 3, in the runs table and in the trend table */
	cr_expect_not_null(strstr(md, "margin=0 | 2 | 2 of 3 | incomplete |"), "%s", md);
	cr_expect_not_null(strstr(md, "| fp8 | 1 | incomplete | 2 of 3 |"), "%s", md);
	cr_expect_not_null(strstr(md, "margin=0 | 2 | 3 | complete |"), "%s", md);
	cr_expect_not_null(strstr(md, "| tiny | 3 | 0 | 0 | incomplete | 0 |"), "%s", md);
	cr_expect_not_null(strstr(md, "case tiny incomplete: run 'fp8' incomplete; 2 checks "
	                              "declared, no verdict stored."), "%s", md);
	cr_expect_not_null(strstr(html, "<td class=\"incomplete\">incomplete</td>"));
	/* plain declares no check: its run complete, it passes */
	cr_expect_not_null(strstr(md, "| plain | 1 | 0 | 0 | pass | 0 |"), "%s", md);
	cr_expect_not_null(strstr(out, "incomplete: 1 case with a run not complete"), "%s", out);
	report_free(out, md, html);

	/* a run that failed */
	sql(dir, "UPDATE runs SET status = 'failed' WHERE run_name = 'fp8'");
	report(dir, "", &out, &md, &html);
	cr_expect_not_null(strstr(md, "case tiny incomplete: run 'fp8' failed;"), "%s", md);
	report_free(out, md, html);

	/* every run complete, killed before the checks */
	sql(dir, "UPDATE runs SET status = 'complete'");
	report(dir, "", &out, &md, &html);
	cr_expect_not_null(strstr(md, "| tiny | 3 | 0 | 0 | incomplete | 0 |"), "%s", md);
	cr_expect_not_null(strstr(md, "case tiny incomplete: 2 checks declared, no verdict "
	                              "stored."), "%s", md);
	report_free(out, md, html);
	teardown(dir);
}

/* A suite whose command stopped before its end (bad input: an import's log cut short) is
   incomplete in the report, and the JUnit file is written with what was stored and an
   error saying it stopped: the case after it was never run, and it read as a pass. */
Test(report_verdicts, a_stopped_suite_is_incomplete_and_its_junit_written, .timeout = 120)
{
	char dir[64], path[300], *out, *md, *html, *xml;
	static const char *const ok = "[case]\nworld_size = 1\n[run r]\nimport = jsonl:good.jsonl\n"
	                              "[check f]\nkind = finite\na = r\n";

	setup(dir, sizeof(dir));
	cr_assert_eq(sh("mkdir '%1$s/s' && cd '%1$s/s' && printf '%%s\\n' '{\"step\":1,\"loss\":1.0}' "
	                "> good.jsonl && printf '%%s\\n' '{\"step\":1,\"loss\":1.0}' "
	                "'{\"step\":2,\"loss\":0.9' > bad.jsonl && printf '%2$s' > a_ok.ini && "
	                "printf '%2$s' > c_ok.ini && sed 's/good/bad/' a_ok.ini > b_bad.ini", dir, ok),
	             0);
	cr_assert_eq(sh("'%1$s' run '%2$s/s' --db '%2$s/t.db' --junit '%2$s/j.xml' --quiet "
	                "> /dev/null 2>&1; test $? -eq 2", LKS_BIN, dir), 0);
	report(dir, "", &out, &md, &html);
	cr_expect_not_null(strstr(md, "The command stopped before the suite's end (exit 2, see "
	                              "its output): the cases after it were not run."), "%s", md);
	cr_expect_not_null(strstr(out, "incomplete: the command stopped"), "%s", out);
	snprintf(path, sizeof(path), "%s/j.xml", dir);
	cr_assert_not_null(xml = slurp(path), "no JUnit file for a suite that stopped");
	cr_expect_not_null(strstr(xml, "errors=\"1\""), "%s", xml);
	cr_expect_not_null(strstr(xml, "<testcase classname=\"a_ok\" name=\"f\">"), "%s", xml);
	free(xml);
	report_free(out, md, html);
	teardown(dir);
}

/* A suite that its store can no longer take part way (a write refused: here a file size
   limit, as on a full disk) says where it stopped and that no verdicts were counted, and
   its JUnit file says it stopped, which the store could not record. The case's second run
   and checks were never stored: without the error the file read as one incomplete run. */
Test(report_verdicts, a_suite_its_store_stops_says_so_and_junit_holds_it, .timeout = 120)
{
	char dir[64], path[300], *err, *xml;
	static const char *const text = "[case]\nsteps = 40\nworld_size = 2\n[model]\nvocab = 256\n"
	                                 "hidden = 64\nffn = 256\nlayers = 2\nseq = 32\nbatch = 2\n"
	                                 "[run bf16]\nrecipe = bf16\n[run fp8]\n"
	                                 "recipe = fp8_rowwise\n[check fin]\nkind = finite\na = fp8\n";

	setup(dir, sizeof(dir));
	/* 1000 blocks of 512 bytes (dash's unit; bash's 1024): the schema and some steps fit,
	   not the suite (3.5 MB of stats); SIGXFSZ ignored, so that the write fails instead */
	cr_assert_eq(sh("cd '%1$s' && printf '%2$s' > disk.ini && trap '' XFSZ && ulimit -f 1000 && "
	                "'%3$s' run disk.ini --db t.db --junit j.xml --quiet > /dev/null 2> err.txt; "
	                "test $? -eq 3", dir, text, LKS_BIN), 0);
	snprintf(path, sizeof(path), "%s/err.txt", dir);
	cr_assert_not_null(err = slurp(path));
	cr_expect_not_null(strstr(err, "stopped before its end (exit 3) in case 'disk': the checks "
	                               "and cases after it were not run, and no verdicts were "
	                               "counted"), "%s", err);
	snprintf(path, sizeof(path), "%s/j.xml", dir);
	cr_assert_not_null(xml = slurp(path), "no JUnit file for a suite its store stopped: %s", err);
	cr_expect_not_null(strstr(xml, "<testcase classname=\"suite\" name=\"stopped\">\n      "
	                               "<error type=\"suite stopped\" message=\"the command stopped "
	                               "before the suite's end (exit 3"), "%s", xml);
	free(xml);
	free(err);
	teardown(dir);
}

Test(report_verdicts, a_skipped_planted_fault_is_not_missed, .timeout = 120)
{
	char dir[64], *out, *md, *html;

	setup(dir, sizeof(dir));
	cr_assert_eq(sh("'%s' run '%s/cases/faults/bitflip.ini' --run clean --db '%s/t.db' --quiet "
	                ">/dev/null", LKS_BIN, LKS_SRC, dir), 0);
	report(dir, "", &out, &md, &html);
	cr_expect_not_null(strstr(out, "planted faults: 0 of 0 caught exactly where planted; 1 not "
	                               "checked (skipped or unsupported), not counted"), "%s", out);
	cr_expect_not_null(strstr(md, "| bitflip | caught | bitwise | step 3, rank 1, "
	                              "blocks.0.mlp.up.out | not checked | skipped |"), "%s", md);
	/* neither red nor marked bad */
	cr_expect_not_null(strstr(html, "<td class=\"skipped\">skipped</td>"));
	cr_expect_null(strstr(md, "not found"), "%s", md);
	/* its checks table names both runs as the check stored them, the one not run too */
	cr_expect_not_null(strstr(md, "| caught | bitwise | flipped vs clean | skipped |"), "%s", md);
	report_free(out, md, html);
	teardown(dir);
}

/* The planted-faults table says where the run planted its fault (its inject spec), not
   where the check expects it; a check that expects it elsewhere but finds it where it was
   planted is a wrong expectation, caught, and says so. */
Test(report_verdicts, a_planted_fault_is_placed_by_its_spec, .timeout = 120)
{
	static const char faults[] =
		"[case]\nsteps = 3\nseed = 7\nworld_size = 2\n"
		"[model]\nvocab = 32\nhidden = 16\nffn = 32\nlayers = 1\nseq = 4\nbatch = 2\n"
		"[run clean]\nrecipe = bf16\n"
		"[run flipped]\nrecipe = bf16\n"
		"inject = bitflip step=1 rank=1 tensor=blocks.0.mlp.up.out element=5 bit=22\n"
		"[check right]\nkind = bitwise\na = flipped\nb = clean\nexpect = fail\nstep = 1\n"
		"rank = 1\ntensor = blocks.0.mlp.up.out\n"
		"[check wrong]\nkind = bitwise\na = flipped\nb = clean\nexpect = fail\nstep = 1\n"
		"rank = 0\ntensor = blocks.0.mlp.up.out\n";
	char dir[64], *out, *md, *html;

	setup(dir, sizeof(dir));
	write_text(dir, "flip.ini", faults);
	cr_assert_eq(sh("'%s' run '%s/flip.ini' --db '%s/t.db' --quiet >/dev/null", LKS_BIN, dir,
	                dir), 1, "the wrong expectation fails its check");
	report(dir, "", &out, &md, &html);
	cr_expect_not_null(strstr(out, "planted faults: 2 of 2 caught exactly where planted"),
	                   "%s", out);
	cr_expect_not_null(strstr(md, "| flip | right | bitwise | step 1, rank 1, "
	                              "blocks.0.mlp.up.out | step 1, rank 1, blocks.0.mlp.up.out "
	                              "| caught |"), "%s", md);
	cr_expect_not_null(strstr(md, "| flip | wrong | bitwise | step 1, rank 1, "
	                              "blocks.0.mlp.up.out | step 1, rank 1, blocks.0.mlp.up.out "
	                              "| caught where planted; the check expected step 1, rank 0, "
	                              "blocks.0.mlp.up.out |"), "%s", md);
	report_free(out, md, html);
	teardown(dir);
}

Test(report_verdicts, a_nan_loss_reads_nan, .timeout = 120)
{
	char dir[64], *out, *md, *html;
	const char *runs;

	setup(dir, sizeof(dir));
	/* a NaN is stored as NULL (SQLite has no NaN): the last step of plain's run went NaN */
	sql(dir, "UPDATE steps SET loss = NULL WHERE step = 1 AND run_id = (SELECT run_id FROM "
	         "runs WHERE case_name = 'plain')");
	/* and its first loss is tiny (an imported log's can be): a number, not 0.000000 */
	sql(dir, "UPDATE steps SET loss = 1.2345e-07 WHERE step = 0 AND run_id = (SELECT run_id "
	         "FROM runs WHERE case_name = 'plain')");
	report(dir, "", &out, &md, &html);
	cr_assert_not_null(runs = strstr(md, "## case plain"), "%s", md);
	/* the runs table: first loss a number, final loss NaN; the trend table too */
	cr_expect_not_null(strstr(runs, " | 2 | complete | "), "%s", runs);
	cr_expect_not_null(strstr(runs, " | 1.2345e-07 | NaN |\n"), "%s", runs);
	cr_expect_not_null(strstr(runs, "| bf16 | 1 | complete | 2 | NaN |"), "%s", runs);
	report_free(out, md, html);
	/* one rank's loss NaN of two: the trend's final loss (the ranks' mean) is NaN, not the
	   other rank's alone (SQL's avg passes a NULL over) */
	sql(dir, "UPDATE steps SET loss = NULL WHERE step = 2 AND rank = 1 AND run_id = (SELECT "
	         "run_id FROM runs WHERE case_name = 'tiny' AND run_name = 'fp8')");
	report(dir, "", &out, &md, &html);
	cr_assert_not_null(runs = strstr(md, "## case tiny"), "%s", md);
	cr_expect_not_null(strstr(runs, "| fp8 | 1 | complete | 3 | NaN |"), "%s", runs);
	report_free(out, md, html);
	teardown(dir);
}

/* A finite check finds one value: its row shows no b (it showed 0, or nan for a real
   field), as if a second run had one. The verdict is made here as a NaN found leaves it. */
Test(report_verdicts, a_finite_check_shows_no_b, .timeout = 120)
{
	char dir[64], *out, *md, *html, *row;

	setup(dir, sizeof(dir));
	sql(dir, "INSERT INTO checks (suite_id, case_name, check_name, kind, run_a, verdict, "
	         "step, rank, tensor, field, value_a, value_b, message) SELECT suite_id, "
	         "case_name, 'fin', 'finite', run_id, 'fail', 1, 0, 'x.grad', 'nonfinite', 1, 0, "
	         "'a NaN' FROM runs WHERE case_name = 'plain' LIMIT 1");
	report(dir, "", &out, &md, &html);
	cr_assert_not_null(row = strstr(md, "| fin | finite |"), "%s", md);
	cr_expect_not_null(strstr(row, "| x.grad | nonfinite | 1 |  |"), "%.200s", row);
	report_free(out, md, html);
	teardown(dir);
}

/* The fingerprint table lists a key one run has and another lacks whichever run has it:
   the first run's keys too, not only the later runs'. */
Test(report_verdicts, a_fingerprint_key_missing_either_side_is_listed, .timeout = 120)
{
	char dir[64], *out, *md, *html, *fp;

	setup(dir, sizeof(dir));
	sql(dir, "UPDATE runs SET fingerprint = json_remove(fingerprint, '$.compiler') WHERE "
	         "run_name = 'fp8'; UPDATE runs SET fingerprint = json_remove(fingerprint, "
	         "'$.hostname') WHERE run_name = 'bf16' AND case_name = 'tiny'");
	report(dir, "", &out, &md, &html);
	cr_assert_not_null(fp = strstr(md, "fingerprint keys that differ between runs"), "%s", md);
	/* bf16 (the first run) lacks hostname, fp8 lacks compiler: each listed with both runs */
	cr_expect_not_null(strstr(fp, "| hostname | bf16 | (absent) |\n| hostname | fp8 | "), "%s", fp);
	cr_expect_not_null(strstr(fp, "| compiler | fp8 | (absent) |"), "%s", fp);
	cr_expect_not_null(strstr(fp, "| compiler | bf16 | "), "%s", fp);
	report_free(out, md, html);
	teardown(dir);
}

/* The heatmap's caption of the pair a vs b in report.md (malloc'd), NULL when none. */
static char *heatmap_text(const char *md, const char *pair)
{
	const char *p = strstr(md, pair), *e;

	if (!p)
		return NULL;
	e = strstr(p, "\n\n**");
	return strndup(p, e ? (size_t)(e - p) : strlen(p));
}

Test(report_verdicts, a_pruned_suite_has_no_heatmap_divergence, .timeout = 300)
{
	char dir[64], *out, *md, *html, *h;

	if (!have("gnuplot"))
		cr_skip_test("gnuplot is not installed (Debian: gnuplot-nox): no heatmap is drawn");
	setup(dir, sizeof(dir));
	/* a row neither run stored (a prune under way, or a trace that holds none there) is
	   passed by the bitwise check: no divergence, drawn 'no row' */
	sql(dir, "DELETE FROM stats WHERE step = 0 AND run_id IN (SELECT run_id FROM runs WHERE "
	         "run_name IN ('fp8', 'fp8_ac'))");
	report(dir, "", &out, &md, &html);
	cr_assert_not_null(h = heatmap_text(md, "'fp8\\_ac' vs 'fp8'"), "%s", md);
	cr_expect_not_null(strstr(h, "No divergence"), "%s", h);
	cr_expect_null(strstr(h, "field row"), "%s", h);
	free(h);
	report_free(out, md, html);

	/* a second suite, so that prune takes the first one's stats */
	cr_assert_eq(sh("'%s' run '%s/tiny.ini' --db '%s/t.db' --quiet --threads 1 >/dev/null 2>&1",
	                LKS_BIN, dir, dir), 1);
	cr_assert_eq(sh("'%s' prune --db '%s/t.db' --keep 1 >/dev/null", LKS_BIN, dir), 0);
	report(dir, "--suite 1", &out, &md, &html);
	cr_expect_null(strstr(md, "First divergence"), "%s", md);
	cr_expect_not_null(strstr(md, "tensor error heatmap: 'fp8\\_ac' vs 'fp8': not drawn: the "
	                              "per-tensor stats of run 'fp8\\_ac' were pruned"), "%s", md);
	cr_expect_not_null(strstr(md, "FP8 amax and scale of run 'fp8' (rank 0): not drawn"),
	                   "%s", md);
	report_free(out, md, html);
	teardown(dir);
}

/* Tensor traces, b with an op a lacks, compared b against a (tests/import/data): the
   heatmap's rows are the tensors both trace (that op is no row drawn 'equal'), and its
   first divergence is the bitwise check's, field and tensor name as the check has them. */
Test(report_verdicts, a_tensor_trace_heatmap_shows_what_both_trace, .timeout = 120)
{
	static const char swapped[] =
		"[case]\nworld_size = 2\n[run a]\nimport = tensor-jsonl:tensor_a.jsonl\n"
		"[run b]\nimport = tensor-jsonl:tensor_b.jsonl\n"
		"[check bw]\nkind = bitwise\na = b\nb = a\n";
	char dir[64], *out, *md, *html, *h;

	if (!have("gnuplot"))
		cr_skip_test("gnuplot is not installed (Debian: gnuplot-nox): no heatmap is drawn");
	setup(dir, sizeof(dir));
	cr_assert_eq(sh("cp '%s/tests/import/data/tensor_a.jsonl' '%s/tests/import/data/"
	                "tensor_b.jsonl' '%s/'", LKS_SRC, LKS_SRC, dir), 0);
	write_text(dir, "tt.ini", swapped);
	cr_assert_eq(sh("'%s' run '%s/tt.ini' --db '%s/t.db' --quiet >/dev/null", LKS_BIN, dir, dir),
	             1);
	report(dir, "", &out, &md, &html);
	cr_assert_not_null(h = heatmap_text(md, "'b' vs 'a'"), "%s", md);
	cr_expect_not_null(strstr(h, "the 6 tensors both runs trace"), "%s", h);
	cr_expect_not_null(strstr(h, "step 2, tensor layers.0.mlp.fc1.output, rank 1, field l2."),
	                   "%s", h);
	cr_expect_not_null(strstr(md, "| bw | bitwise | b vs a | fail | 2 | 1 | "
	                              "layers.0.mlp.fc1.output | l2 |"), "%s", md);
	/* the op only b traces has no row */
	cr_expect_null(strstr(html, ">layers.0.mlp.norm.output<"), "a row for an op a lacks");
	free(h);
	report_free(out, md, html);
	teardown(dir);
}

/* What lks_xml_text writes of s (malloc'd). */
static char *xml_of(const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert_not_null(f);
	lks_xml_text(f, s);
	fclose(f);
	return buf;
}

/* JUnit text is well-formed XML whatever a log held: the specials escaped, a control
   character a blank, a byte that is not UTF-8 (one per byte) and U+FFFE/U+FFFF (one per
   character) U+FFFD, good UTF-8 as it is. A JUnit file that does not parse loses every
   verdict of the night to CI. */
Test(report_verdicts, junit_text_is_always_xml)
{
	static const struct {
		const char *in, *out;
	} rows[] = {
		{ "a<b>&\"'", "a&lt;b&gt;&amp;&quot;&apos;" },
		{ "tab\tesc\x1b", "tab\tesc " },
		{ "bad\xff\xfe_x", "bad\xef\xbf\xbd\xef\xbf\xbd_x" },        /* not UTF-8 */
		{ "non\xef\xbf\xbfx\xef\xbf\xbe", "non\xef\xbf\xbdx\xef\xbf\xbd" }, /* U+FFFF, FFFE */
		{ "over\xc0\xaflong", "over\xef\xbf\xbd\xef\xbf\xbdlong" },   /* overlong '/' */
		{ "sur\xed\xa0\x80", "sur\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" }, /* a surrogate */
		{ "cut\xe2\x82", "cut\xef\xbf\xbd\xef\xbf\xbd" },
		{ "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x99\x82 \xef\xbf\xbd",
		  "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x99\x82 \xef\xbf\xbd" },   /* é € 🙂 kept */
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char *x = xml_of(rows[i].in);

		cr_expect_str_eq(x, rows[i].out, "row %zu", i);
		free(x);
	}
}
