/*
 * test_combo_cli.c: the commands that probe combos, run as a user would: 'run/check --check
 * NAME' and '--combo NAME' as the probes use them; matrix, bisect and reduce over eight
 * combos that turn bad at the sixth; bad usage and bad input stopped before any probe; a
 * probe that hangs or crashes; ci/bisect-step's exit codes for git bisect run.
 * LKS_BIN is the built program, LKS_SRC the source tree, LKS_COMBOS the fixtures
 * (tests/probe/combo/); tests/probe/CMakeLists.txt sets them. Every test works in its own
 * mkdtemp folder (combo_fixture.h).
 */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "combo_cli.h"
#include "combo_fixture.h"
#include "harness/probe/probe.h"

/* ---- run and check: --check and --combo, as a probe calls them ---- */

Test(combo, check_option_keeps_one_check_and_its_runs)
{
	char out[8192];

	mkdir_tmp();
	cr_assert_eq(lockstep(out, sizeof(out), "check %s/tiny.ini --db %s/t.db --quiet --check finite "
	                      "--combo cuda-12.4", FIXTURES, tmpdir), 0, "%s", out);
	/* 'finite' reads run 'base' only: 'fp8' is not trained, 'tracks' not evaluated */
	cr_assert_eq(sql_int("t.db", "SELECT count(*) FROM runs"), 1, "%s", out);
	cr_assert_eq(sql_int("t.db", "SELECT count(*) FROM runs WHERE run_name = 'base' "
	                             "AND combo = 'cuda-12.4' AND status = 'complete'"), 1);
	cr_assert_eq(sql_int("t.db", "SELECT count(*) FROM checks"), 1);
	cr_assert_eq(sql_int("t.db", "SELECT count(*) FROM checks WHERE check_name = 'finite'"), 1);

	/* without --check: both runs, both checks, no combo */
	cr_assert_eq(lockstep(out, sizeof(out), "run %s/tiny.ini --db %s/t.db --quiet", FIXTURES,
	                      tmpdir), 0, "%s", out);
	cr_assert_eq(sql_int("t.db", "SELECT count(*) FROM runs WHERE combo IS NULL"), 2);
	cr_assert_eq(sql_int("t.db", "SELECT count(*) FROM checks"), 3);

	/* a check no case has would be a silent pass: bad usage, and nothing is run */
	cr_assert_eq(lockstep(out, sizeof(out), "run %s/tiny.ini --db %s/t.db --check nosuch",
	                      FIXTURES, tmpdir), 2);
	cr_assert_not_null(strstr(out, "no case has a check named nosuch"), "%s", out);
	cr_assert_eq(sql_int("t.db", "SELECT count(*) FROM runs"), 3);
	rm_tmp();
}

/* ---- end to end: eight combos that turn bad at the sixth (tests/probe/combo/eight.ini) ---- */

Test(combo, bisect_finds_the_planted_fault, .timeout = 120)
{
	char out[16384], s[256];
	long long probes;

	mkdir_tmp();
	cr_assert_eq(lockstep(out, sizeof(out), "bisect --combos %s/eight.ini %s/tiny.ini --check finite "
	                      "--db %s/b.db", FIXTURES, FIXTURES, tmpdir), 0, "%s", out);
	cr_assert_not_null(strstr(out, "first bad combo: c6 ("), "%s", out);
	cr_assert_not_null(strstr(out, "last good combo: c5\n"), "%s", out);
	/* the first combo, then c4, c6, c5: the bound of the issue is 4 */
	probes = sql_int("b.db", "SELECT count(*) FROM probes");
	cr_assert_leq(probes, 4, "%lld probes:\n%s", probes, out);
	snprintf(s, sizeof(s), "\n%lld probes\n", probes);
	cr_assert_not_null(strstr(out, s), "%s", out);
	sql_text("b.db", "SELECT combo FROM probes ORDER BY probe_id LIMIT 1", s, sizeof(s));
	cr_assert_str_eq(s, "c1", "the first combo is probed first");
	cr_assert_eq(sql_int("b.db", "SELECT count(*) FROM probes WHERE outcome = 'bad' AND "
	                             "combo IN ('c6', 'c7', 'c8')") +
	             sql_int("b.db", "SELECT count(*) FROM probes WHERE outcome = 'good' AND "
	                             "combo IN ('c1', 'c2', 'c3', 'c4', 'c5')"), probes);
	/* c5 -> c6 differ in one key, and the stored fingerprints say the same */
	cr_assert_eq(lines_with(out, "combo keys that differ:", "runs:", "env."), 1, "%s", out);
	cr_assert_eq(lines_with(out, "combo keys that differ:", "runs:", "set."), 0, "%s", out);
	cr_assert_eq(lines_with(out, "combo keys that differ:", "runs:", "env.LOCKSTEP_INJECT"), 1,
	             "%s", out);
	cr_assert_not_null(strstr(out, "fingerprint keys that differ:\n  env.LOCKSTEP_INJECT"),
	                   "%s", out);
	/* the probes' runs carry their combo; c6's failed where the fault was planted */
	cr_assert_eq(sql_int("b.db", "SELECT count(*) FROM checks c JOIN runs r ON r.run_id = c.run_a "
	                             "WHERE r.combo = 'c6' AND c.verdict = 'fail' AND c.step = 2 "
	                             "AND c.tensor = 'blocks.0.mlp.up.weight.grad'"), 1);
	sql_text("b.db", "SELECT result FROM probe_sessions", s, sizeof(s));
	cr_assert_not_null(strstr(s, "first bad: c6, after c5"), "%s", s);
	rm_tmp();
}

Test(combo, reduce_isolates_the_one_key_that_matters, .timeout = 120)
{
	char out[16384], s[256];
	const char *min;

	mkdir_tmp();
	cr_assert_eq(lockstep(out, sizeof(out), "reduce --good c1 --bad c8 --combos %s/eight.ini "
	                      "%s/tiny.ini --check finite --db %s/r.db", FIXTURES, FIXTURES, tmpdir),
	             0, "%s", out);
	cr_assert_not_null(strstr(out, "combos 'c1' and 'c8' differ in 5 keys:"), "%s", out);
	min = strstr(out, "\nminimal difference (1 of 5 keys, ");
	cr_assert_not_null(min, "%s", out);
	/* after that line: the one key, and none of the four harmless ones */
	cr_assert_not_null(strstr(min, "env.LOCKSTEP_INJECT    c1: (absent)"), "%s", out);
	cr_assert_eq(lines_with(min, "minimal", NULL, "  env.")
	             + lines_with(min, "minimal", NULL, "  set."), 1, "%s", out);
	sql_text("r.db", "SELECT result FROM probe_sessions", s, sizeof(s));
	snprintf(out, sizeof(out), "minimal: env.LOCKSTEP_INJECT (1 of 5 keys, %lld probes)",
	         sql_int("r.db", "SELECT count(*) FROM probes"));
	cr_assert_str_eq(s, out);
	/* a subset's probe is stored under the name of what was applied */
	cr_assert_eq(sql_int("r.db", "SELECT count(*) FROM probes WHERE "
	                             "combo = 'c1+{env.LOCKSTEP_INJECT}' AND outcome = 'bad'"), 1);
	rm_tmp();
}

Test(combo, matrix_table_of_verdicts, .timeout = 120)
{
	char out[16384];

	mkdir_tmp();
	cr_assert_eq(lockstep(out, sizeof(out), "matrix --combos %s/eight.ini %s/tiny.ini --check finite "
	                      "--db %s/m.db", FIXTURES, FIXTURES, tmpdir), 1, "%s", out);
	cr_assert_not_null(strstr(out, "\ncombo  tiny\n"), "%s", out);
	cr_assert_not_null(strstr(out, "\nc5     good\n"), "%s", out);
	cr_assert_not_null(strstr(out, "\nc6     bad\n"), "%s", out);
	cr_assert_not_null(strstr(out, "8 probes: 5 good, 3 bad"), "%s", out);
	cr_assert_eq(sql_int("m.db", "SELECT count(*) FROM probes WHERE outcome = 'good'"), 5);
	cr_assert_eq(sql_int("m.db", "SELECT count(*) FROM probes p JOIN runs r ON "
	                             "r.suite_id = p.suite_id AND r.combo = p.combo"), 8);
	rm_tmp();
}

/* --check NAME over a folder: a case without such a check is left out, as run leaves it
   (probed alone it could not test: a column of skip, and exit 3). */
Test(combo, matrix_check_leaves_out_the_cases_without_it, .timeout = 120)
{
	char out[16384], cmd[2048];

	mkdir_tmp();
	snprintf(cmd, sizeof(cmd), "mkdir '%s/d' && cp '%s/tiny.ini' '%s/d/a.ini' && sed "
	         "'s/^\\[check finite\\]/[check fin2]/' '%s/tiny.ini' > '%s/d/b.ini' && printf "
	         "'[combo g]\\n[combo g2]\\nenv.OMP_NUM_THREADS = 1\\n' > '%s/m2.ini'", tmpdir,
	         FIXTURES, tmpdir, FIXTURES, tmpdir, tmpdir);
	cr_assert_eq(system(cmd), 0);
	cr_assert_eq(lockstep(out, sizeof(out), "matrix --combos %s/m2.ini %s/d --check finite "
	                      "--steps 2 --db %s/m.db", tmpdir, tmpdir, tmpdir), 0, "%s", out);
	cr_assert_not_null(strstr(out, "\ncombo  a\n"), "%s", out);
	cr_assert_not_null(strstr(out, "2 probes: 2 good"), "%s", out);
	rm_tmp();
}

Test(combo, bad_usage_exits_2)
{
	static const struct { const char *args, *says; } bad[] = {
		{ "matrix tiny.ini", "which combos? (--combos FILE)" },
		{ "bisect --combos c.ini", "which cases?" },
		{ "reduce --combos c.ini --good a tiny.ini", "--bad is required" },
		{ "matrix --combos c.ini --timeout 0 tiny.ini", "--timeout wants seconds > 0, not '0'" },
		{ "bisect --combos c.ini --on-crash maybe tiny.ini", "--on-crash wants skip or bad" },
		{ "matrix --combos c.ini --frobnicate tiny.ini", "bad option '--frobnicate'" },
		{ "reduce --combos c.ini tiny.ini --good", "--good needs a value" },
		/* c.ini does not exist: --votes is refused while the options are parsed */
		{ "bisect --combos c.ini --votes 4 tiny.ini", "--votes wants an odd number, not 4" },
		{ "bisect --combos c.ini tiny.ini --votes", "--votes needs a value" },
	};
	static const char *const cmds[] = { "matrix", "bisect", "reduce" };
	char out[8192];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(lockstep(out, sizeof(out), "%s", bad[i].args), 2, "%s:\n%s", bad[i].args,
		             out);
		cr_assert_not_null(strstr(out, bad[i].says), "%s:\n%s", bad[i].args, out);
	}
	for (size_t i = 0; i < 3; i++) {
		cr_assert_eq(lockstep(out, sizeof(out), "%s --help", cmds[i]), 0);
		cr_assert_not_null(strstr(out, "usage: lockstep "), "%s", out);
		cr_assert_not_null(strstr(out, "--on-crash skip|bad"), "%s", out);
		cr_assert_not_null(strstr(out, "exit codes:"), "%s", out);
	}
	cr_assert_eq(lockstep(out, sizeof(out), "--help"), 0);
	cr_assert(strstr(out, "  matrix ") && strstr(out, "  bisect ") && strstr(out, "  reduce "),
	          "%s", out);
}

Test(combo, bad_input_stops_before_any_probe, .timeout = 120)
{
	char out[8192], combos[512], path[600];

	mkdir_tmp();
	/* the combos file names its line; the database is not even created */
	put_file("typo.ini", "[combo a]\nenv.X = 1\n[combo b]\nenvX = 2\n", combos, sizeof(combos));
	cr_assert_eq(lockstep(out, sizeof(out), "matrix --combos %s %s/tiny.ini --db %s/x.db", combos,
	                      FIXTURES, tmpdir), 2, "%s", out);
	cr_assert_not_null(strstr(out, "typo.ini:4: unknown key 'envX'"), "%s", out);
	snprintf(path, sizeof(path), "%s/x.db", tmpdir);
	cr_assert_neq(access(path, F_OK), 0, "the database was created");
	/* an override the case refuses names its own line, before any probe */
	put_file("over.ini", "[combo a]\n[combo b]\nenv.X = 1\nset.model.hidn = 3\n", combos,
	         sizeof(combos));
	cr_assert_eq(lockstep(out, sizeof(out), "bisect --combos %s %s/tiny.ini --db %s/x.db", combos,
	                      FIXTURES, tmpdir), 2, "%s", out);
	cr_assert_not_null(strstr(out, "over.ini:4: combo 'b': "), "%s", out);
	cr_assert_not_null(strstr(out, "hidn"), "%s", out);
	put_file("over.ini", "[combo a]\n[combo b]\nset.model.hidden = 16\n"
	         "set.run.fp8.recipe = fp9\n", combos, sizeof(combos));
	cr_assert_eq(lockstep(out, sizeof(out), "matrix --combos %s %s/tiny.ini --db %s/x.db", combos,
	                      FIXTURES, tmpdir), 2, "%s", out);
	cr_assert_not_null(strstr(out, "over.ini:4: combo 'b': unknown recipe 'fp9'"), "%s", out);
	/* overrides each good alone, but not together: the combo's line */
	put_file("over.ini", "[combo a]\n[combo b]\nset.optim.warmup = 3\nset.case.steps = 2\n",
	         combos, sizeof(combos));
	cr_assert_eq(lockstep(out, sizeof(out), "matrix --combos %s %s/tiny.ini --db %s/x.db", combos,
	                      FIXTURES, tmpdir), 2, "%s", out);
	cr_assert_not_null(strstr(out, "over.ini:2: combo 'b': "), "%s", out);
	cr_assert_not_null(strstr(out, "warmup 3 is longer than the case's 2 steps"), "%s", out);
	cr_assert_eq(sql_int("x.db", "SELECT count(*) FROM probes"), 0);
	/* a run no case has: every probe would train nothing and pass */
	cr_assert_eq(lockstep(out, sizeof(out), "matrix --combos %s/eight.ini %s/tiny.ini --run nosuch "
	                      "--db %s/x.db", FIXTURES, FIXTURES, tmpdir), 2, "%s", out);
	cr_assert_not_null(strstr(out, "no case has a run named 'nosuch'"), "%s", out);
	cr_assert_eq(sql_int("x.db", "SELECT count(*) FROM probes"), 0);
	/* a list that is bad from the start cannot be bisected: one probe says so */
	cr_assert_eq(lockstep(out, sizeof(out), "reduce --good c6 --bad c8 --combos %s/eight.ini "
	                      "%s/tiny.ini --check finite --db %s/x.db", FIXTURES, FIXTURES, tmpdir),
	             2, "%s", out);
	cr_assert_not_null(strstr(out, "combo 'c6' is bad: reduce needs --good to pass"), "%s", out);
	cr_assert_eq(sql_int("x.db", "SELECT count(*) FROM probes"), 1);
	cr_assert_eq(lockstep(out, sizeof(out), "reduce --good c1 --bad c1 --combos %s/eight.ini "
	                      "%s/tiny.ini --db %s/x.db", FIXTURES, FIXTURES, tmpdir), 2, "%s", out);
	cr_assert_not_null(strstr(out, "do not differ"), "%s", out);
	rm_tmp();
}

/* ---- a probe that hangs ---- */

Test(combo, hanging_probe_is_killed_at_its_timeout_and_recorded, .timeout = 120)
{
	char out[16384], combos[512], s[64];
	long long runs, steps, stats;
	double seconds;

	mkdir_tmp();
	/* what the database holds before: one earlier run of the case */
	cr_assert_eq(lockstep(out, sizeof(out), "run %s/tiny.ini --db %s/h.db --quiet", FIXTURES,
	                      tmpdir), 0, "%s", out);
	runs = sql_int("h.db", "SELECT count(*) FROM runs WHERE status = 'complete'");
	steps = sql_int("h.db", "SELECT count(*) FROM steps");
	stats = sql_int("h.db", "SELECT count(*) FROM stats");
	cr_assert_gt(stats, 0);

	snprintf(out, sizeof(out), "[combo ok]\n[combo hangs]\nenv.LD_PRELOAD = %s\n", LKS_HANG_LIB);
	put_file("hang.ini", out, combos, sizeof(combos));
	/* 1 s timeout: the hanging probe ignores SIGTERM, so SIGKILL ends it 2 s later */
	cr_assert_eq(lockstep(out, sizeof(out), "matrix --combos %s %s/tiny.ini --check finite "
	                      "--timeout 1 --db %s/h.db", combos, FIXTURES, tmpdir), 3, "%s", out);
	cr_assert_not_null(strstr(out, "\nhangs  timeout"), "%s", out);
	cr_assert_not_null(strstr(out, "killed at the 1 s timeout"), "%s", out);

	cr_assert_eq(sql_int("h.db", "SELECT count(*) FROM probes WHERE combo = 'hangs' AND "
	                             "outcome = 'timeout' AND exit_code IS NULL AND signal = 9 "
	                             "AND suite_id IS NULL"), 1);
	sql_text("h.db", "SELECT seconds FROM probes WHERE combo = 'hangs'", s, sizeof(s));
	seconds = atof(s);
	/* the timeout, then the grace; a second more for a loaded machine */
	cr_assert(seconds >= 1 + LKS_PROBE_GRACE && seconds < 1 + LKS_PROBE_GRACE + 1, "%.2f s",
	          seconds);
	/* the database is whole, what was there is there, and the good probe stored its run */
	sql_text("h.db", "PRAGMA integrity_check", s, sizeof(s));
	cr_assert_str_eq(s, "ok");
	cr_assert_eq(sql_int("h.db", "SELECT count(*) FROM runs WHERE status = 'complete' AND "
	                             "combo IS NULL"), runs);
	cr_assert_eq(sql_int("h.db", "SELECT count(*) FROM steps s JOIN runs r USING (run_id) "
	                             "WHERE r.combo IS NULL"), steps);
	cr_assert_eq(sql_int("h.db", "SELECT count(*) FROM stats s JOIN runs r USING (run_id) "
	                             "WHERE r.combo IS NULL"), stats);
	cr_assert_eq(sql_int("h.db", "SELECT count(*) FROM runs WHERE combo = 'ok' AND "
	                             "status = 'complete'"), 1);
	cr_assert_eq(sql_int("h.db", "SELECT count(*) FROM runs WHERE combo = 'hangs'"), 0);
	rm_tmp();
}

/* Six combos for --votes: c0, c1 good; c2 flaky by cycle (hang_preload.c: the outcomes of
   its probes in turn, kept in a counter file); c3, c4, c5 bad. A search of six probes c0,
   then c2. The file's path into combos. */
static void put_flaky_combos(const char *cycle, char *combos, size_t n)
{
	static const char nan[] = "env.LOCKSTEP_INJECT = nan step=2 rank=0 "
	                          "tensor=blocks.0.mlp.up.weight.grad\n";
	char text[2048];

	snprintf(text, sizeof(text), "[combo c0]\n[combo c1]\n[combo c2]\nenv.LD_PRELOAD = %s\n"
	         "env.LKS_TEST_PRELOAD = flaky:%s/flaky.count:%s\n[combo c3]\n%s[combo c4]\n%s"
	         "[combo c5]\n%s", LKS_HANG_LIB, tmpdir, cycle, nan, nan, nan);
	put_file("flaky.ini", text, combos, n);
}

/* A flaky good combo (its probe fails the first of every three times) misleads a bisect of
   one probe a combo; --votes 3 outvotes it, finds the real first bad combo and says where
   the votes split, in the probe lines and at the end. */
Test(combo, votes_outvote_a_flaky_probe, .timeout = 300)
{
	char out[16384], combos[512], s[256];

	mkdir_tmp();
	put_flaky_combos("1,run,run", combos, sizeof(combos));
	cr_assert_eq(lockstep(out, sizeof(out), "bisect --combos %s %s/tiny.ini --check finite "
	                      "--db %s/v1.db", combos, FIXTURES, tmpdir), 0, "%s", out);
	cr_assert_not_null(strstr(out, "first bad combo: c2 "), "one vote is misled: %s", out);
	cr_assert_null(strstr(out, "\nvotes"), "one vote prints what it always did: %s", out);
	cr_assert_not_null(strstr(out, "\n3 probes\n"), "%s", out);

	cr_assert_eq(lockstep(out, sizeof(out), "bisect --combos %s %s/tiny.ini --check finite "
	                      "--votes 3 --db %s/v3.db", combos, FIXTURES, tmpdir), 0, "%s", out);
	cr_assert_not_null(strstr(out, "first bad combo: c3 "), "%s", out);
	cr_assert_not_null(strstr(out, "last good combo: c2\n"), "%s", out);
	/* c2's third probe is the fourth of the file: it fails, after two that passed */
	cr_assert_not_null(strstr(out, "\nvotes split at c2: 2 good, 1 bad, 0 skip -> good\n"),
	                   "%s", out);
	cr_assert_eq(lines_with(out, "probe 1", "\nfirst bad", "votes split at"), 1, "%s", out);
	cr_assert_not_null(strstr(out, "\nvotes split: c2 (2 good, 1 bad, 0 skip)\n"), "%s", out);
	/* c0, c2, c3, three times each, every probe stored */
	cr_assert_not_null(strstr(out, "\n9 probes: 3 combos, 3 votes each\n"), "%s", out);
	cr_assert_eq(sql_int("v3.db", "SELECT count(*) FROM probes"), 9);
	cr_assert_eq(sql_int("v3.db", "SELECT count(*) FROM probes WHERE combo = 'c2'"), 3);
	cr_assert_eq(sql_int("v3.db", "SELECT count(*) FROM probes WHERE combo = 'c2' AND "
	                              "outcome = 'bad'"), 1);
	sql_text("v3.db", "SELECT result FROM probe_sessions", s, sizeof(s));
	cr_assert_str_eq(s, "first bad: c3, after c2 (9 probes: 3 combos, 3 votes each)");
	rm_tmp();
}

/* A bisect of three votes whose flaky c2 gives cycle (from a new count): c2 split as tally
   says, a skip, stepped around (exit 3, the first bad one of c2 and c3). Its output into
   out, its database tmpdir/db. */
static void bisect_skips_c2(const char *cycle, const char *tally, const char *db, char *out,
                            size_t n)
{
	char combos[512], count[512], split[128];

	snprintf(count, sizeof(count), "%s/flaky.count", tmpdir);
	unlink(count);
	put_flaky_combos(cycle, combos, sizeof(combos));
	cr_assert_eq(lockstep(out, n, "bisect --combos %s %s/tiny.ini --check finite --votes 3 "
	                      "--db %s/%s", combos, FIXTURES, tmpdir, db), 3, "%s", out);
	snprintf(split, sizeof(split), "\nvotes split at c2: %s -> skip\n", tally);
	cr_assert_not_null(strstr(out, split), "%s:\n%s", cycle, out);
	cr_assert_not_null(strstr(out, "it is one of:\n  c2  (could not test)\n  c3\n"), "%s", out);
}

/* Votes that reach no majority of good or bad say nothing of a combo: c2, which cannot test
   two of three times, is stepped around as a skip, not taken for good by its one good vote;
   so is a three-way split, the tie an odd K still allows; and where no combo splits, the
   end says so. */
Test(combo, votes_without_a_majority_are_a_skip, .timeout = 300)
{
	char out[16384];

	mkdir_tmp();
	bisect_skips_c2("125,125,run", "1 good, 0 bad, 2 skip", "s.db", out, sizeof(out));
	cr_assert_not_null(strstr(out, "\nvotes split: c2 (1 good, 0 bad, 2 skip)\n"), "%s", out);
	cr_assert_eq(sql_int("s.db", "SELECT count(*) FROM probes WHERE combo = 'c2' AND "
	                             "outcome = 'skip'"), 2);
	bisect_skips_c2("1,run,125", "1 good, 1 bad, 1 skip", "t.db", out, sizeof(out));

	cr_assert_eq(lockstep(out, sizeof(out), "bisect --combos %s/eight.ini %s/tiny.ini "
	                      "--check finite --votes 3 --db %s/e.db", FIXTURES, FIXTURES, tmpdir),
	             0, "%s", out);
	cr_assert_not_null(strstr(out, "first bad combo: c6 ("), "%s", out);
	cr_assert_null(strstr(out, "votes split"), "%s", out);
	cr_assert_not_null(strstr(out, "\nvotes: no combo split (3 probes a combo)\n"), "%s", out);
	rm_tmp();
}

/* A K that is not a number from 1, or even (a tie has no majority), is bad usage: refused
   with why, before the database is even made. */
Test(combo, votes_refuses_a_bad_k, .timeout = 60)
{
	static const struct { const char *k, *says; } bad[] = {
		{ "2", "--votes wants an odd number, not 2: an even one can tie" },
		{ "0", "--votes wants an integer in [1, 99], not '0'" },
		{ "-3", "--votes wants an integer in [1, 99], not '-3'" },
		{ "x", "--votes wants an integer in [1, 99], not 'x'" },
		{ "3x", "--votes wants an integer in [1, 99], not '3x'" },
	};
	char out[8192], path[600];

	mkdir_tmp();
	snprintf(path, sizeof(path), "%s/v.db", tmpdir);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(lockstep(out, sizeof(out), "bisect --combos %s/eight.ini %s/tiny.ini "
		                      "--votes %s --db %s", FIXTURES, FIXTURES, bad[i].k, path), 2,
		             "--votes %s:\n%s", bad[i].k, out);
		cr_assert_not_null(strstr(out, bad[i].says), "--votes %s:\n%s", bad[i].k, out);
		cr_assert_neq(access(path, F_OK), 0, "--votes %s made %s", bad[i].k, path);
	}
	cr_assert_eq(lockstep(out, sizeof(out), "bisect --help"), 0, "%s", out);
	cr_assert_not_null(strstr(out, "\n  --votes K "), "%s", out);
	cr_assert_not_null(strstr(out, "odd"), "%s", out);
	rm_tmp();
}

Test(combo, on_crash_decides_what_a_crash_is, .timeout = 120)
{
	char out[16384], text[1024], combos[512];

	mkdir_tmp();
	/* good, then a combo whose probe dies of SIGSEGV, then a bad one */
	snprintf(text, sizeof(text), "[combo good]\n[combo crashes]\nenv.LD_PRELOAD = %s\n"
	         "env.LKS_TEST_PRELOAD = segv\n[combo bad]\n"
	         "env.LOCKSTEP_INJECT = nan step=2 rank=0 tensor=blocks.0.mlp.up.weight.grad\n",
	         LKS_HANG_LIB);
	put_file("crash.ini", text, combos, sizeof(combos));
	/* a crash says nothing about numerics: the first bad is 'crashes' or 'bad', no more */
	cr_assert_eq(lockstep(out, sizeof(out), "bisect --combos %s %s/tiny.ini --check finite "
	                      "--db %s/c.db", combos, FIXTURES, tmpdir), 3, "%s", out);
	cr_assert_not_null(strstr(out, "crashes                  crash"), "%s", out);
	cr_assert_not_null(strstr(out, "(signal 11: "), "%s", out);
	cr_assert_not_null(strstr(out, "it is one of:\n  crashes  (could not test)\n  bad\n"),
	                   "%s", out);
	cr_assert_eq(sql_int("c.db", "SELECT count(*) FROM probes WHERE combo = 'crashes' AND "
	                             "outcome = 'crash' AND signal = 11"), 1);
	/* with --on-crash bad the crash is the first bad */
	cr_assert_eq(lockstep(out, sizeof(out), "bisect --combos %s %s/tiny.ini --check finite "
	                      "--on-crash bad --db %s/c.db", combos, FIXTURES, tmpdir), 0, "%s", out);
	cr_assert_not_null(strstr(out, "first bad combo: crashes ("), "%s", out);
	cr_assert_not_null(strstr(out, "the probe of 'crashes' stored no run"), "%s", out);
	rm_tmp();
}

/* ---- ci/bisect-step: git bisect run's exit codes, over a stand-in project ---- */

static const char stand_in_cmake[] =
	"cmake_minimum_required(VERSION 3.22)\n"
	"project(stand_in C)\n"
	"add_executable(lockstep lockstep.c)\n";

/* A lockstep whose 'check' prints its arguments and exits with $RC, or dies of SIGSEGV. */
static const char stand_in_main[] =
	"#include <signal.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
	"int main(int argc, char **argv)\n{\n"
	"	if (argc < 2 || strcmp(argv[1], \"check\"))\n		return 2;\n"
	"	for (int i = 1; i < argc; i++)\n		printf(\"%s%s\", argv[i], i + 1 < argc ? \" \" : \"\\n\");\n"
	"	if (!strcmp(getenv(\"RC\"), \"segv\"))\n		raise(SIGSEGV);\n"
	"	return atoi(getenv(\"RC\"));\n}\n";

/* Runs ci/bisect-step in tmpdir/repo with env; its exit code, and its output in out. */
static int bisect_step(const char *env, char *out, size_t n)
{
	char cmd[2048], path[512];
	FILE *f;
	int status;
	size_t len;

	snprintf(cmd, sizeof(cmd), "cd '%s/repo' && env %s LKS_BISECT_BUILD=b bash '%s/ci/bisect-step' "
	         "cases/x.ini --check finite > '%s/out.txt' 2>&1", tmpdir, env, LKS_SRC, tmpdir);
	status = system(cmd);
	cr_assert(WIFEXITED(status), "%s", cmd);
	snprintf(path, sizeof(path), "%s/out.txt", tmpdir);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	len = fread(out, 1, n - 1, f);
	out[len] = 0;
	fclose(f);
	return WEXITSTATUS(status);
}

Test(combo, bisect_step_exit_codes_for_git_bisect_run, .timeout = 300)
{
	static const struct { const char *env; int want; const char *says; } cases[] = {
		{ "RC=0", 0, "good" },
		{ "RC=1", 1, "bad" },
		{ "RC=125", 125, "cannot test" },
		{ "RC=2", 125, "lockstep exited 2" },    /* an old commit: no 'check' command */
		{ "RC=segv", 125, "lockstep exited 139" },
		{ "RC=segv LKS_ON_CRASH=bad", 1, "crashed (signal 11): bad" },
	};
	char out[8192], path[512], cmd[1024];

	mkdir_tmp();
	snprintf(cmd, sizeof(cmd), "mkdir '%s/repo' && cd '%s/repo' && git init -q", tmpdir, tmpdir);
	cr_assert_eq(system(cmd), 0);
	put_file("repo/CMakeLists.txt", stand_in_cmake, path, sizeof(path));
	put_file("repo/lockstep.c", stand_in_main, path, sizeof(path));
	snprintf(cmd, sizeof(cmd), "cd '%s/repo' && git add . && git -c user.name=t -c user.email=t@t "
	         "commit -qm stand-in", tmpdir);
	cr_assert_eq(system(cmd), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_assert_eq(bisect_step(cases[i].env, out, sizeof(out)), cases[i].want, "%s:\n%s",
		             cases[i].env, out);
		cr_assert_not_null(strstr(out, cases[i].says), "%s:\n%s", cases[i].env, out);
		/* the cases and options reach 'lockstep check', after a database of the step's own
		   (a crashed stand-in never flushes what it printed) */
		cr_assert(strstr(out, "check --db b/bisect-step.db --quiet cases/x.ini --check finite\n")
		          || strstr(cases[i].env, "segv"), "%s:\n%s", cases[i].env, out);
	}
	/* a commit that does not build is skipped */
	put_file("repo/lockstep.c", "this is not C\n", path, sizeof(path));
	cr_assert_eq(bisect_step("RC=0", out, sizeof(out)), 125, "%s", out);
	cr_assert_not_null(strstr(out, "the build failed"), "%s", out);
	rm_tmp();
}
