/*
 * test_nightly.c: night over night (harness/verify/nightly.h) as a nightly meets it,
 * through the built program (LKS_BIN) on one tiny case of two runs:
 *   - two nightlies in a row: every run unchanged, no fingerprint key differs, exit 0,
 *     and one JUnit testcase per run;
 *   - LOCKSTEP_INJECT on one run: that run changed at the planted step, rank and tensor,
 *     the key 'inject' named; the other run unchanged, nothing of its making differing;
 *     exit 0 (the fault explains the change); what does not reach a run (a fault planted
 *     in another, a check's --set, a comment in the case file) leaves its alarm;
 *   - a change planted where the fingerprint does not see it (LKS_FREXP_LIB,
 *     nightly_preload.c says why that route): changed with an equal fingerprint, exit 1,
 *     printed and stored before a change the fingerprint explains; exit 0 with
 *     --same-fingerprint-change warn, the verdict stored all the same; 'lockstep check'
 *     exits 1 too;
 *   - the report opens with "since last night": the counts, and the changed run with its
 *     divergence and the key that differs;
 *   - on runs stored by hand (lks_nightly_compare itself): nothing compared in the first
 *     suite; new and gone runs; one version key that differs gives 'lockstep bisect'; a
 *     changed case text is named 'case.text' beside the fingerprint keys.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nightly_fixture.h"
#include "run_bin.h"
#include "tiny_model.h"
#include "harness/store/trace_store.h"
#include "kernels/err.h"

/* Two runs, two ranks, three steps: milliseconds a night. */
static const char case_text[] =
	"[case]\n"
	"description = tiny case for night over night\n"
	"steps = 3\n"
	"seed = 7\n"
	"world_size = 2\n"
	LKS_TINY_MODEL
	"[run bf16]\n"
	"recipe = bf16\n"
	"[run rowwise]\n"
	"recipe = fp8_rowwise\n"
	"[check finite]\n"
	"kind = finite\n"
	"a = rowwise\n";

static char dir[64], db[128], ini[128];
static char out[16384];

static void setup(void)
{
	FILE *cf;

	snprintf(dir, sizeof(dir), "/tmp/lks_test_nightly_XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(db, sizeof(db), "%s/history.db", dir);
	snprintf(ini, sizeof(ini), "%s/tiny.ini", dir);
	cr_assert_not_null(cf = fopen(ini, "w"));
	fputs(case_text, cf);
	fclose(cf);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

/* One night: 'lockstep CMD' of the case (extra options after it) under env; its exit
   code, what it printed in out. */
static int night(const char *env, const char *cmd, const char *extra)
{
	char args[1024];

	snprintf(args, sizeof(args), "%s '%s' --db '%s' --quiet %s", cmd, ini, db, extra);
	return lks_run_bin(env, args, out, sizeof(out));
}

static struct seen verdicts(int64_t suite)
{
	return night_verdicts(db, suite);
}

TestSuite(nightly, .init = setup, .fini = teardown);

Test(nightly, two_nightlies_in_a_row_are_unchanged)
{
	char junit[160], xml[8192] = "";
	struct seen s;
	FILE *f;
	size_t n;

	cr_assert_eq(night(NULL, "run", ""), 0, "%s", out);
	cr_assert_null(strstr(out, "night over night"), "the first night has nothing to compare:\n%s",
	               out);
	cr_assert_eq(verdicts(1).n, 0);
	snprintf(junit, sizeof(junit), "--junit '%s/junit.xml'", dir);
	cr_assert_eq(night(NULL, "run", junit), 0, "%s", out);
	cr_assert_not_null(strstr(out, "2 unchanged, 0 changed (0 with the same fingerprint), 0 new, "
	                          "0 gone"), "%s", out);
	s = verdicts(2);
	cr_assert_eq(s.n, 2);
	for (int i = 0; i < s.n; i++) {
		cr_assert_str_eq(s.verdict[i], "unchanged", "%s: %s", s.run[i], s.verdict[i]);
		cr_assert_str_eq(s.keys[i], "", "%s: %s", s.run[i], s.keys[i]);
		cr_assert_eq(s.fp_equal[i], 1);
		cr_assert_eq(s.step[i], -1);
		/* tonight's run against last night's of the same name */
		cr_assert_eq(s.run_id[i], s.prev_run_id[i] + 2);
	}
	snprintf(junit, sizeof(junit), "%s/junit.xml", dir);
	if (!(f = fopen(junit, "r")))
		cr_assert_fail("no '%s'", junit);
	n = fread(xml, 1, sizeof(xml) - 1, f);
	xml[n] = 0;
	fclose(f);
	cr_assert_not_null(strstr(xml, "<testcase classname=\"nightly.tiny\" name=\"bf16\">"), "%s", xml);
	cr_assert_not_null(strstr(xml, "<testcase classname=\"nightly.tiny\" name=\"rowwise\">"), "%s",
	                   xml);
	cr_assert_not_null(strstr(xml, "tests=\"3\" failures=\"0\""), "%s", xml);
}

Test(nightly, an_injected_fault_is_changed_at_its_step_rank_and_tensor_with_the_key_named)
{
	struct seen s;
	int b, r;

	cr_assert_eq(night(NULL, "run", ""), 0, "%s", out);
	cr_assert_eq(night("LOCKSTEP_INJECT='bitflip step=1 rank=1 tensor=blocks.0.mlp.up.out "
	                   "element=3 bit=20 run=rowwise'", "run", ""), 0, "%s", out);
	s = verdicts(2);
	cr_assert_eq(s.n, 2);
	r = find(&s, "rowwise");
	b = find(&s, "bf16");
	cr_assert_str_eq(s.verdict[r], "changed");
	cr_assert_eq(s.step[r], 1);
	cr_assert_eq(s.rank[r], 1);
	cr_assert_str_eq(s.tensor[r], "blocks.0.mlp.up.out");
	cr_assert_str_eq(s.keys[r], "inject");
	cr_assert_eq(s.fp_equal[r], 0);
	/* the env var is in every run's fingerprint, but the run it did not fit kept its bits
	   and nothing of its making differs: a change there would be the alarm */
	cr_assert_str_eq(s.verdict[b], "unchanged");
	cr_assert_str_eq(s.keys[b], "");
	cr_assert_eq(s.fp_equal[b], 1);
	cr_assert_not_null(strstr(out, "fingerprint keys that differ: inject"), "%s", out);
	cr_assert_not_null(strstr(out, "the fault planted in it is not last night's"), "%s", out);
	cr_assert_null(strstr(out, "ALARM"), "%s", out);
}

/* What does not reach a run leaves its alarm: a fault planted in the other run, a --set of
   a check, a comment added to the case file. Each once made every run's change 'explained'
   (env.LOCKSTEP_INJECT, another run's settings, case.text), exit 0, so that the night of
   a bad GPU passed. The shim (LKS_FREXP_LIB) stands in for hardware that gives other bits. */
Test(nightly, what_does_not_reach_a_run_leaves_its_alarm)
{
	char env[700];
	struct seen s;
	FILE *cf;
	int r;

	cr_assert_eq(night(NULL, "run", ""), 0, "%s", out);
	cr_assert_not_null(cf = fopen(ini, "a"));
	fputs("; reviewed: a comment changes nothing a run trains\n", cf);
	fclose(cf);
	snprintf(env, sizeof(env), "LD_PRELOAD='%s' LOCKSTEP_INJECT='bitflip step=1 rank=1 "
	         "tensor=blocks.0.mlp.up.out element=3 bit=20 run=bf16'", LKS_FREXP_LIB);
	cr_assert_eq(night(env, "run", "--set check.finite.expect=pass"), 1, "%s", out);
	s = verdicts(2);
	cr_assert_eq(s.n, 2, "both compared, none new: %s", out);
	r = find(&s, "rowwise");
	cr_assert_str_eq(s.verdict[r], "changed");
	cr_assert_eq(s.fp_equal[r], 1, "%s", out);
	cr_assert_str_eq(s.keys[r], "");
	cr_assert_not_null(strstr(out, "ALARM changed with the same fingerprint: tiny/rowwise"), "%s",
	                   out);
	cr_assert_str_eq(s.keys[find(&s, "bf16")], "inject");
}

Test(nightly, a_change_with_an_equal_fingerprint_fails_the_exit_code)
{
	char env[512];
	struct seen s;
	const char *alarm, *explained;

	snprintf(env, sizeof(env), "LD_PRELOAD='%s'", LKS_FREXP_LIB);
	cr_assert_eq(night(NULL, "run", ""), 0, "%s", out);
	/* night 2 runs bf16 alone under a numerics env var that the CPU backend ignores: its
	   fingerprint differs (env.NCCL_ALGO), its bits do not */
	cr_assert_eq(night("NCCL_ALGO=Ring", "run", "--run bf16"), 0, "%s", out);
	/* night 3, the planted change: bf16 is compared with night 2 (a key differs), rowwise
	   with night 1 (nothing differs) */
	cr_assert_eq(night(env, "run", ""), 1, "%s", out);
	s = verdicts(3);
	cr_assert_eq(s.n, 2);
	cr_assert_str_eq(s.run[0], "rowwise", "the alarm is stored first");
	cr_assert_str_eq(s.verdict[0], "changed");
	cr_assert_eq(s.fp_equal[0], 1);
	cr_assert_str_eq(s.keys[0], "");
	cr_assert_str_eq(s.field[0], "loss", "the shim changes the loss alone");
	cr_assert_eq(s.step[0], 0);
	cr_assert_str_eq(s.run[1], "bf16");
	cr_assert_str_eq(s.verdict[1], "changed");
	cr_assert_str_eq(s.keys[1], "env.NCCL_ALGO");
	cr_assert_not_null(alarm = strstr(out, "ALARM changed with the same fingerprint: tiny/rowwise"),
	                   "%s", out);
	cr_assert_not_null(explained = strstr(out, "changed:   tiny/bf16"), "%s", out);
	cr_assert_lt(alarm, explained, "the alarm is printed first:\n%s", out);
	cr_assert_not_null(strstr(out, "lockstep reduce"), "an env var differs: %s", out);

	/* warn: the same verdicts, exit 0 */
	cr_assert_eq(night(env, "run", "--same-fingerprint-change warn"), 0, "%s", out);
	s = verdicts(4);
	cr_assert_eq(s.n, 2);
	/* night 3 ran under the shim too: against it, nothing changed */
	cr_assert_str_eq(s.verdict[0], "unchanged");
	cr_assert_str_eq(s.verdict[1], "unchanged");
	/* without the shim the bits go back: a change against night 4, unexplained again;
	   'check' fails as 'run' does, and warn keeps it at 0 */
	cr_assert_eq(night(NULL, "check", ""), 1, "%s", out);
	cr_assert_not_null(strstr(out, "ALARM"), "%s", out);
	cr_assert_eq(night(env, "run", "--same-fingerprint-change warn"), 0, "%s", out);
	s = verdicts(6);
	cr_assert_str_eq(s.verdict[0], "changed");
	cr_assert_eq(s.fp_equal[0], 1);
	cr_assert_eq(night(NULL, "run", "--same-fingerprint-change never"), 2, "%s", out);
}

/* report.md of the suite (the folder under dir); the test fails if it cannot be read. */
static void report_md(const char *suite, char *md, size_t n)
{
	char args[512], path[160];
	FILE *f;
	size_t len;

	snprintf(args, sizeof(args), "report --db '%s' --suite %s -o '%s/report-%s'", db, suite, dir,
	         suite);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	snprintf(path, sizeof(path), "%s/report-%s/report.md", dir, suite);
	cr_assert_not_null(f = fopen(path, "r"), "no '%s'", path);
	len = fread(md, 1, n - 1, f);
	md[len] = 0;
	fclose(f);
}

Test(nightly, the_report_opens_with_since_last_night)
{
	static char md[1 << 16];
	const char *since, *summary, *row;

	cr_assert_eq(night(NULL, "run", ""), 0, "%s", out);
	report_md("1", md, sizeof(md));
	cr_assert_not_null(strstr(md, "no earlier suite in this database"), "%s", md);
	cr_assert_eq(night("LOCKSTEP_INJECT='bitflip step=1 rank=1 tensor=blocks.0.mlp.up.out "
	                   "element=3 bit=20 run=rowwise'", "run", ""), 0, "%s", out);
	report_md("latest", md, sizeof(md));
	cr_assert_not_null(since = strstr(md, "## since last night"), "%s", md);
	cr_assert_not_null(summary = strstr(md, "## summary"), "%s", md);
	cr_assert_lt(since, summary, "the section opens the report");
	cr_assert_not_null(strstr(since, "| changed, same fingerprint (hardware or non-determinism) "
	                                 "| 0 |"), "%s", since);
	cr_assert_not_null(strstr(since, "| changed, fingerprint differs | 1 |"), "%s", since);
	cr_assert_not_null(strstr(since, "| unchanged (bit for bit) | 1 |"), "%s", since);
	cr_assert_not_null(row = strstr(since, "| tiny/rowwise (run 4) | changed | step 1, tensor "
	                                       "'blocks.0.mlp.up.out' (forward), rank 1: l2"),
	                   "%s", since);
	cr_assert_lt(row, summary);
	cr_assert_not_null(strstr(row, "| inject | run 2 of suite 1 |"), "%s", row);
	/* a third night whose runs were all passed over (killed: no verdict stored, as that
	   leaves it) is not "no earlier suite in this database", which it said */
	cr_assert_eq(night(NULL, "run", ""), 0, "%s", out);
	snprintf(md, sizeof(md), "sqlite3 '%s' \"UPDATE runs SET status = 'incomplete' WHERE "
	         "suite_id = 3; DELETE FROM nightly WHERE suite_id = 3\"", db);
	cr_assert_eq(system(md), 0);
	report_md("3", md, sizeof(md));
	cr_assert_null(strstr(md, "no earlier suite"), "%s", md);
	cr_assert_not_null(strstr(md, "no run of this suite was compared with an earlier one: none "
	                              "of its runs completed"), "%s", md);
}

/* ---- the comparison itself, on runs stored by hand ---- */

#include "harness/verify/nightly.h"

/* A run of case 'c' (case text text) named name in suite, one step of one rank and one
   tensor, its loss and fingerprint as given. */
static int64_t put_run(lks_store *s, int64_t suite, const char *name, const char *text,
                       const char *fp, int steps, double loss)
{
	const char *tname = "x";
	lks_phase ph = LKS_PHASE_FORWARD;
	lks_run_info info = { .suite_id = suite, .case_name = "c", .case_path = "cases/c.ini",
	                      .case_text = text, .run_name = name, .recipe = "bf16",
	                      .options = "checkpoint=none", .backend = "cpu", .world_size = 1,
	                      .steps = steps, .seed = 1, .fingerprint = fp };
	lks_step_row step = { .step = 0, .rank = 0, .loss = loss, .grad_norm = 1, .lr = 1e-3 };
	lks_stat_row stat = { .step = 0, .rank = 0, .seq = 0, .l2 = 2, .amax = 1, .scale = NAN,
	                      .hash = 42 };
	int64_t id;

	cr_assert_eq(lks_store_begin_run(s, &info, &id), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_tensors(s, id, &tname, &ph, 1), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_step(s, id, &step, 1, &stat, 1), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_end_run(s, id, "complete"), 0, "%s", lks_errmsg());
	return id;
}

/* A run a kill left incomplete (or that another 'lockstep run' is still writing): no step
   row of it stored, its run row and tensors alone. */
static int64_t put_killed(lks_store *s, int64_t suite, const char *name, const char *fp)
{
	const char *tname = "x";
	lks_phase ph = LKS_PHASE_FORWARD;
	lks_run_info info = { .suite_id = suite, .case_name = "c", .case_path = "cases/c.ini",
	                      .case_text = "[case]", .run_name = name, .recipe = "bf16",
	                      .options = "checkpoint=none", .backend = "cpu", .world_size = 1,
	                      .steps = 1, .seed = 1, .fingerprint = fp };
	int64_t id;

	cr_assert_eq(lks_store_begin_run(s, &info, &id), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_tensors(s, id, &tname, &ph, 1), 0, "%s", lks_errmsg());
	return id;
}

/* Night 2 was killed in its run b, its run a complete; tonight's run c was killed too.
   Tonight is compared with night 1, the latest whole suite: night 2 is passed over, its
   complete run a too, and said so; so is tonight's c, neither compared nor new, and not
   gone from night 1. Before, tonight's b was compared with night 2's (no step row) and c
   with night 1's: two false alarms, the same fingerprint and fewer rows. */
Test(nightly, incomplete_runs_and_their_suites_are_passed_over_not_alarms)
{
	static const char fp[] = "{\"lockstep.commit\": \"abc\"}";
	lks_nightly_tally t;
	struct seen s;
	lks_store *st;
	int64_t s1, s2, s3, b2, c3;
	char *text = NULL, want[160];
	size_t len = 0;
	FILE *o;

	cr_assert_eq(lks_store_open(db, &st), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_begin_suite(st, "night 1", &s1), 0, "%s", lks_errmsg());
	put_run(st, s1, "a", "[case]", fp, 1, 1.5);
	put_run(st, s1, "b", "[case]", fp, 1, 1.5);
	put_run(st, s1, "c", "[case]", fp, 1, 1.5);
	cr_assert_eq(lks_store_begin_suite(st, "night 2", &s2), 0, "%s", lks_errmsg());
	put_run(st, s2, "a", "[case]", fp, 1, 1.5);
	b2 = put_killed(st, s2, "b", fp);
	cr_assert_eq(lks_store_begin_suite(st, "night 3", &s3), 0, "%s", lks_errmsg());
	put_run(st, s3, "a", "[case]", fp, 1, 1.5);
	put_run(st, s3, "b", "[case]", fp, 1, 1.5);
	c3 = put_killed(st, s3, "c", fp);
	cr_assert_not_null(o = open_memstream(&text, &len));
	cr_assert_eq(lks_nightly_compare(st, s3, db, o, &t), 0, "%s", lks_errmsg());
	fclose(o);
	lks_store_close(st);
	cr_log_info("%s", text);
	cr_assert_eq(t.silent, 0, "%s", text);
	cr_assert_null(strstr(text, "ALARM"), "%s", text);
	cr_assert_eq(t.unchanged, 2, "%s", text);
	cr_assert_eq(t.changed + t.added + t.gone, 0, "%s", text);
	cr_assert_eq(t.passed, 2, "%s", text);
	snprintf(want, sizeof(want), "passed over: suite %lld, whose run %lld (c/b) is incomplete",
	         (long long)s2, (long long)b2);
	cr_assert_not_null(strstr(text, want), "no '%s' in:\n%s", want, text);
	snprintf(want, sizeof(want), "passed over: c/c (run %lld) of tonight is incomplete",
	         (long long)c3);
	cr_assert_not_null(strstr(text, want), "no '%s' in:\n%s", want, text);
	free(text);
	s = verdicts(s3);
	cr_assert_eq(s.n, 2);
	for (int i = 0; i < s.n; i++) {
		cr_assert_str_eq(s.verdict[i], "unchanged", "%s", s.run[i]);
		cr_assert_eq(s.prev_suite[i], s1, "%s", s.run[i]);
	}
}

Test(nightly, new_gone_and_the_command_that_narrows_a_change)
{
	static const char fp1[] = "{\"lockstep.commit\": \"abc\", \"compiler\": \"GNU 12\"}";
	static const char fp2[] = "{\"lockstep.commit\": \"abc\", \"compiler\": \"GNU 13\"}";
#define CASE_A(hidden) "[case]\nsteps = 1\n[model]\nvocab = 64\nhidden = " hidden "\nffn = 64\n" \
	"layers = 1\nseq = 8\nbatch = 2\n[run a]\nrecipe = bf16\n"
	static const char whole[] = CASE_A("32");
	static const char commented[] = CASE_A("32") "; a comment\n[check f]\nkind = finite\na = a\n";
	static const char edited[] = CASE_A("48");
#undef CASE_A
	lks_nightly_tally t;
	struct seen s;
	lks_store *st;
	int64_t s1, s2, s3;
	char *text = NULL;
	size_t len = 0;
	FILE *o;

	cr_assert_eq(lks_store_open(db, &st), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_begin_suite(st, "night 1", &s1), 0, "%s", lks_errmsg());
	put_run(st, s1, "a", "[case]", fp1, 1, 1.5);
	put_run(st, s1, "b", "[case]", fp1, 1, 1.5);
	/* the first suite has nothing to compare with */
	cr_assert_eq(lks_nightly_compare(st, s1, db, NULL, &t), 0, "%s", lks_errmsg());
	cr_assert_eq(t.compared, 0);
	cr_assert_eq(lks_store_begin_suite(st, "night 2", &s2), 0, "%s", lks_errmsg());
	/* a: another compiler, another loss; b: not run tonight; c: a run night 1 lacked */
	put_run(st, s2, "a", "[case]", fp2, 1, 1.25);
	put_run(st, s2, "c", "[case]", fp1, 1, 1.5);
	cr_assert_not_null(o = open_memstream(&text, &len));
	cr_assert_eq(lks_nightly_compare(st, s2, db, o, &t), 0, "%s", lks_errmsg());
	fclose(o);
	cr_assert_eq(t.compared, 1);
	cr_assert_eq(t.changed, 1);
	cr_assert_eq(t.silent, 0);
	cr_assert_eq(t.added, 1);
	cr_assert_eq(t.gone, 1);
	cr_assert_not_null(strstr(text, "fingerprint keys that differ: compiler"), "%s", text);
	cr_assert_not_null(strstr(text, "lockstep bisect --combos COMBOS.ini cases/c.ini"),
	                   "one version key: bisect along its versions\n%s", text);
	cr_assert_not_null(strstr(text, "new:       c/c"), "%s", text);
	cr_assert_not_null(strstr(text, "gone:      c/b"), "%s", text);
	free(text);
	/* night 3: a's case text changed in what a trains (here a text that reads as a case
	   against one that does not), its bits not: unchanged, with case.text named */
	cr_assert_eq(lks_store_begin_suite(st, "night 3", &s3), 0, "%s", lks_errmsg());
	put_run(st, s3, "a", whole, fp2, 1, 1.25);
	cr_assert_eq(lks_nightly_compare(st, s3, db, NULL, &t), 0, "%s", lks_errmsg());
	lks_store_close(st);
	s = verdicts(s3);
	cr_assert_eq(s.n, 2, "a compared; c gone (night 2 ran c, tonight did not)");
	/* stored as printed: gone before unchanged */
	cr_assert_str_eq(s.run[0], "c");
	cr_assert_str_eq(s.verdict[0], "gone");
	cr_assert_str_eq(s.run[1], "a");
	cr_assert_str_eq(s.verdict[1], "unchanged");
	cr_assert_str_eq(s.keys[1], "case.text");
	cr_assert_eq(s.fp_equal[1], 0);
	/* night 4: a comment and a check added, the model as it was: nothing a trains differs,
	   so its change would be the alarm; night 5: the model edited, case.text again */
	cr_assert_eq(lks_store_open(db, &st), 0, "%s", lks_errmsg());
	for (int k = 0; k < 2; k++) {
		const char *text = k ? edited : commented;
		int64_t sk;

		cr_assert_eq(lks_store_begin_suite(st, "night", &sk), 0, "%s", lks_errmsg());
		put_run(st, sk, "a", text, fp2, 1, 1.25);
		cr_assert_eq(lks_nightly_compare(st, sk, db, NULL, &t), 0, "%s", lks_errmsg());
		s = verdicts(sk);
		cr_assert_str_eq(s.verdict[0], "unchanged");
		cr_assert_str_eq(s.keys[0], k ? "case.text" : "", "night %d", 4 + k);
		cr_assert_eq(s.fp_equal[0], !k);
	}
	lks_store_close(st);
}

/* An imported run's steps and ranks are what its log held, not settings: tonight's log
   that stops a step early (the job died) is the same run 'changed' at the step it lacks,
   not a run 'new' beside one 'gone'; and not an alarm. */
Test(nightly, an_imported_log_that_stops_early_is_changed_not_new_and_gone)
{
	char log[160], args[1024];
	FILE *f;
	struct seen s;
	int i;

	snprintf(ini, sizeof(ini), "%s/imported.ini", dir);
	cr_assert_not_null(f = fopen(ini, "w"));
	fputs("[case]\n[run tonight]\nimport = jsonl:log.jsonl\n[check finite]\nkind = finite\n"
	      "a = tonight\n", f);
	fclose(f);
	snprintf(log, sizeof(log), "%s/log.jsonl", dir);
	cr_assert_not_null(f = fopen(log, "w"));
	fputs("{\"step\": 1, \"loss\": 2.5}\n{\"step\": 2, \"loss\": 2.25}\n"
	      "{\"step\": 3, \"loss\": 2.0}\n", f);
	fclose(f);
	cr_assert_eq(night(NULL, "run", ""), 0, "%s", out);
	snprintf(args, sizeof(args), "sed -i '$d' '%s'", log);
	cr_assert_eq(system(args), 0);
	/* lockstep does not see the software that wrote a log: an imported run's change is
	   never the hardware alarm, it names the software it cannot see (and exits 0) */
	cr_assert_eq(night(NULL, "run", ""), 0, "%s", out);
	s = verdicts(2);
	cr_assert_eq(s.n, 1, "%s", out);
	i = find(&s, "tonight");
	cr_assert_str_eq(s.verdict[i], "changed", "%s", out);
	cr_assert_eq(s.step[i], 3, "%s", out);
	cr_assert_eq(s.fp_equal[i], 0, "%s", out);
	cr_assert_not_null(strstr(s.keys[i], "import.software"), "%s", s.keys[i]);
	cr_assert_null(strstr(out, "ALARM"), "%s", out);
	cr_assert_not_null(strstr(out, "an imported log"), "%s", out);
}
