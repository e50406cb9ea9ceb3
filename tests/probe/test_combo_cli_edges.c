/*
 * test_combo_cli_edges.c: the commands that probe combos at their edges, each from a finding
 * of an outside tester: reduce probes B as B wherever the order of overrides matters;
 * bisect's answer over combos that differ in more keys than reduce takes; a split vote on
 * an end combo; long subset names kept whole; a bad LKS_ISA is a version check cannot test
 * (125), a skip to bisect; bad option values and names refused before any probe; the probe
 * of a SIGKILLed or interrupted command. Helpers: combo_cli.h; every test works in its own
 * mkdtemp folder (combo_fixture.h).
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "combo_cli.h"
#include "combo_fixture.h"

/* Two runs that train alike, and a check that they are bit for bit equal: a combo that
   gives run a another recipe makes it fail. */
static const char pair_case[] =
	"[case]\nsteps = 2\nseed = 7\n"
	"[model]\nvocab = 32\nhidden = 16\nffn = 32\nlayers = 1\nseq = 8\nbatch = 2\n"
	"[run a]\nrecipe = bf16\n[run b]\nrecipe = bf16\n"
	"[check same]\nkind = bitwise\na = a\nb = b\n";

/* Overrides apply in order, the later winning. B sets run a to fp32, then every run to
   bf16: B is good. Reduce once rebuilt B as A's keys and then B's new one, ran run a as
   fp32, and stored that probe as 'B', bad. C has B's keys in the other order, and is bad:
   the order alone is a difference, which reduce finds. */
Test(combo, reduce_probes_b_with_its_own_order_of_overrides, .timeout = 120)
{
	char out[16384], cases[512], combos[512];

	mkdir_tmp();
	put_file("pair.ini", pair_case, cases, sizeof(cases));
	put_file("order.ini", "[combo A]\nset.run.*.recipe = bf16\n"
	         "[combo B]\nset.run.a.recipe = fp32\nset.run.*.recipe = bf16\n"
	         "[combo C]\nset.run.*.recipe = bf16\nset.run.a.recipe = fp32\n", combos,
	         sizeof(combos));
	cr_assert_eq(lockstep(out, sizeof(out), "reduce --good A --bad B --combos %s %s --db %s/o.db",
	                      combos, cases, tmpdir), 2, "%s", out);
	cr_assert_not_null(strstr(out, "combo 'B' is good: reduce needs --bad to fail"), "%s", out);
	cr_assert_eq(sql_int("o.db", "SELECT count(*) FROM probes WHERE combo = 'B' AND "
	                             "outcome = 'good'"), 1);
	cr_assert_eq(sql_int("o.db", "SELECT count(*) FROM probes WHERE outcome = 'bad'"), 0);

	cr_assert_eq(lockstep(out, sizeof(out), "reduce --good B --bad C --combos %s %s --db %s/o.db",
	                      combos, cases, tmpdir), 0, "%s", out);
	cr_assert_not_null(strstr(out, "combos 'B' and 'C' differ in 1 key:"), "%s", out);
	cr_assert_not_null(strstr(out, "minimal difference (1 of 1 key, 2 probes)"), "%s", out);
	cr_assert_not_null(strstr(out, "C: bf16  (moved: set. keys apply in order"), "%s", out);
	cr_assert_eq(sql_int("o.db", "SELECT count(*) FROM probes WHERE combo = 'C' AND "
	                             "outcome = 'bad'"), 1);
	rm_tmp();
}

/* bisect found its answer over two combos that differ in 66 keys: exit 0 and every key,
   not reduce's limit of 64 (exit 3, no fingerprints); reduce still refuses them. */
Test(combo, bisect_lists_every_key_reduce_refuses_over_64, .timeout = 120)
{
	char out[32768], text[8192], combos[512];
	size_t len = (size_t)snprintf(text, sizeof(text), "[combo g]\n[combo b]\n");

	mkdir_tmp();
	for (int i = 1; i <= 65; i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len, "env.LKS_X%d = v%d\n", i, i);
	snprintf(text + len, sizeof(text) - len, "env.LOCKSTEP_INJECT = nan step=2 rank=0 "
	         "tensor=blocks.0.mlp.up.weight.grad\n");
	put_file("big.ini", text, combos, sizeof(combos));
	cr_assert_eq(lockstep(out, sizeof(out), "bisect --combos %s %s/tiny.ini --check finite "
	                      "--db %s/b.db", combos, FIXTURES, tmpdir), 0, "%s", out);
	cr_assert_not_null(strstr(out, "first bad combo: b ("), "%s", out);
	cr_assert_eq(lines_with(out, "combo keys that differ:", "runs:", "  env.LKS_X"), 65, "%s",
	             out);
	cr_assert_not_null(strstr(out, "the traces side by side: lockstep diff "), "%s", out);

	cr_assert_eq(lockstep(out, sizeof(out), "reduce --good g --bad b --combos %s %s/tiny.ini "
	                      "--db %s/b.db", combos, FIXTURES, tmpdir), 2, "%s", out);
	cr_assert_not_null(strstr(out, "differ in 66 keys; reduce takes at most 64"), "%s", out);
	cr_assert_eq(sql_int("b.db", "SELECT count(*) FROM probes"), 2, "reduce probed");
	rm_tmp();
}

/* A first combo whose three votes are good, bad and skip could not be tested: the message
   says the votes split, not the first vote's outcome as though it were the combo's. */
Test(combo, votes_split_on_an_end_combo_say_so, .timeout = 120)
{
	char out[16384], text[1024], combos[512], s[256];

	mkdir_tmp();
	snprintf(text, sizeof(text), "[combo k1]\nenv.LD_PRELOAD = %s\n"
	         "env.LKS_TEST_PRELOAD = flaky:%s/k1.count:1,run,125\n[combo k2]\n"
	         "env.LOCKSTEP_INJECT = nan step=2 rank=0 tensor=blocks.0.mlp.up.weight.grad\n",
	         LKS_HANG_LIB, tmpdir);
	put_file("split.ini", text, combos, sizeof(combos));
	cr_assert_eq(lockstep(out, sizeof(out), "bisect --votes 3 --combos %s %s/tiny.ini "
	                      "--check finite --db %s/s.db", combos, FIXTURES, tmpdir), 3, "%s", out);
	cr_assert_not_null(strstr(out, "the first combo 'k1' could not be tested (votes split: "
	                          "1 good, 1 bad, 1 skip)"), "%s", out);
	sql_text("s.db", "SELECT result FROM probe_sessions", s, sizeof(s));
	cr_assert_not_null(strstr(s, "(votes split: 1 good, 1 bad, 1 skip)"), "%s", s);
	rm_tmp();
}

/* 64 differences with long names: a subset's name is whole, '}' and all (it was cut at
   1023 bytes, and no longer said which subset was probed). */
Test(combo, reduce_subset_names_are_whole, .timeout = 300)
{
	char out[65536], text[8192], combos[512];
	size_t len = (size_t)snprintf(text, sizeof(text), "[combo A]\n[combo B]\n");

	mkdir_tmp();
	for (int i = 1; i <= 63; i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len,
		                        "env.LKS_A_FAIRLY_LONG_VARIABLE_NAME_NUMBER_%d = v\n", i);
	snprintf(text + len, sizeof(text) - len, "env.LOCKSTEP_INJECT = nan step=2 rank=0 "
	         "tensor=blocks.0.mlp.up.weight.grad\n");
	put_file("r64.ini", text, combos, sizeof(combos));
	cr_assert_eq(lockstep(out, sizeof(out), "reduce --good A --bad B --combos %s %s/tiny.ini "
	                      "--check finite --steps 3 --db %s/r.db", combos, FIXTURES, tmpdir), 0,
	             "%s", out);
	cr_assert_not_null(strstr(out, "minimal difference (1 of 64 keys, "), "%s", out);
	cr_assert_gt(sql_int("r.db", "SELECT max(length(combo)) FROM probes"), 1023);
	cr_assert_eq(sql_int("r.db", "SELECT count(*) FROM probes WHERE combo LIKE 'A+%' AND "
	                             "substr(combo, -1) <> '}'"), 0);
	rm_tmp();
}

/* LKS_ISA that names no path (or one this CPU lacks): 'check' cannot test this version
   here, 125, which git bisect run skips (2 it takes for bad); a combo that sets it is a
   skip to bisect, stepped around, not a crash that --on-crash bad makes the first bad. */
Test(combo, bad_isa_is_a_version_check_cannot_test, .timeout = 120)
{
	char out[16384], args[1024], combos[512];

	mkdir_tmp();
	snprintf(args, sizeof(args), "check %s/tiny.ini --db %s/i.db --quiet", FIXTURES, tmpdir);
	cr_assert_eq(lks_run_bin("LKS_ISA=bogus", args, out, sizeof(out)), 125, "%s", out);
	cr_assert_not_null(strstr(out, "LKS_ISA: "), "%s", out);
	snprintf(args, sizeof(args), "run %s/tiny.ini --db %s/i.db --quiet", FIXTURES, tmpdir);
	cr_assert_eq(lks_run_bin("LKS_ISA=bogus", args, out, sizeof(out)), 2, "%s", out);

	put_file("isa.ini", "[combo c1]\n[combo c2]\nenv.LKS_ISA = bogus\n[combo c3]\n"
	         "env.LOCKSTEP_INJECT = nan step=2 rank=0 tensor=blocks.0.mlp.up.weight.grad\n",
	         combos, sizeof(combos));
	cr_assert_eq(lockstep(out, sizeof(out), "bisect --on-crash bad --combos %s %s/tiny.ini "
	                      "--check finite --db %s/i.db", combos, FIXTURES, tmpdir), 3, "%s", out);
	cr_assert_not_null(strstr(out, "it is one of:\n  c2  (could not test)\n  c3\n"), "%s", out);
	cr_assert_eq(sql_int("i.db", "SELECT count(*) FROM probes WHERE combo = 'c2' AND "
	                             "outcome = 'skip' AND exit_code = 125"), 1);
	rm_tmp();
}

/* A bad --steps or --threads is bad usage before anything is opened, as 'run' refuses it,
   not a probe under every combo that could not test (exit 3); and a bad combo name. */
Test(combo, bad_pass_values_refused_before_any_probe, .timeout = 60)
{
	static const struct { const char *args, *says; } bad[] = {
		{ "matrix --steps abc", "--steps wants an integer in [1, 10000000], not 'abc'" },
		{ "bisect --threads 0", "--threads wants an integer in [1, 1024], not '0'" },
		{ "reduce --good c1 --bad c8 --steps 0", "--steps wants an integer" },
		{ "matrix --threads 1025", "--threads wants an integer in [1, 1024], not '1025'" },
	};
	char out[8192], path[600];

	mkdir_tmp();
	snprintf(path, sizeof(path), "%s/x.db", tmpdir);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(lockstep(out, sizeof(out), "%s --combos %s/eight.ini %s/tiny.ini --db %s",
		                      bad[i].args, FIXTURES, FIXTURES, path), 2, "%s:\n%s",
		             bad[i].args, out);
		cr_assert_not_null(strstr(out, bad[i].says), "%s:\n%s", bad[i].args, out);
		cr_assert_neq(access(path, F_OK), 0, "%s made the database", bad[i].args);
	}
	/* run --combo NAME takes a combo's name rule, as a combos file's [combo NAME]: one
	   stored with a blank, or empty (not "no combo"), was compared as other settings */
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(lockstep(out, sizeof(out), "run %s/tiny.ini --combo '%s' --db %s --quiet",
		                      FIXTURES, i ? "" : "a b;$(x)", path), 2, "%s", out);
		cr_assert_not_null(strstr(out, "run: --combo: bad combo name '"), "%s", out);
		cr_assert_neq(access(path, F_OK), 0, "run --combo made the database");
	}
	rm_tmp();
}

/* --run NAME over a folder leaves out a case without that run, as --check does (probed
   alone it could not test: a column of skip, exit 3); the probe lines of a folder's cases
   name the case each probes. */
Test(combo, matrix_run_leaves_out_the_cases_without_it, .timeout = 120)
{
	char out[16384], path[512], cmd[2048];

	mkdir_tmp();
	snprintf(cmd, sizeof(cmd), "mkdir '%s/d' && cp '%s/tiny.ini' '%s/d/a.ini' && printf "
	         "'[combo g]\\n[combo g2]\\nenv.OMP_NUM_THREADS = 1\\n' > '%s/m2.ini'", tmpdir,
	         FIXTURES, tmpdir, tmpdir);
	cr_assert_eq(system(cmd), 0);
	put_file("d/b.ini", pair_case, path, sizeof(path));
	cr_assert_eq(lockstep(out, sizeof(out), "matrix --combos %s/m2.ini %s/d --run base --steps 2 "
	                      "--db %s/m.db", tmpdir, tmpdir, tmpdir), 0, "%s", out);
	cr_assert_not_null(strstr(out, "\ncombo  a\n"), "%s", out);
	cr_assert_not_null(strstr(out, "2 probes: 2 good"), "%s", out);
	cr_assert_eq(lines_with(out, "probe 1", "\ncombo", "/d/a.ini"), 2, "%s", out);
	/* a run no case of the folder has is still bad input */
	cr_assert_eq(lockstep(out, sizeof(out), "matrix --combos %s/m2.ini %s/d --run nosuch "
	                      "--db %s/m.db", tmpdir, tmpdir, tmpdir), 2, "%s", out);
	rm_tmp();
}

/* ---- the probe of a command that is killed or interrupted ---- */

/* Whether pid is a live process (a zombie has ended: only nobody has reaped it yet). */
static int alive(pid_t pid)
{
	char path[64], stat[512] = "";
	const char *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if (!(f = fopen(path, "r")))
		return 0;
	n = fread(stat, 1, sizeof(stat) - 1, f);
	fclose(f);
	stat[n] = 0;
	p = strrchr(stat, ')');
	return p && p[1] && p[2] != 'Z';
}

/* Starts 'lockstep matrix' over a good combo and one whose probe writes its pid to a file
   and hangs (hang_preload.c), with a timeout far off, into tmpdir/k.db; returns once the
   hanging probe runs: the matrix's pid in *matrix, the probe's in *probe. */
static void start_hanging_matrix(pid_t *matrix, pid_t *probe)
{
	char text[1024], combos[512], db[600], pidfile[600], cases[600], buf[32] = "";

	snprintf(pidfile, sizeof(pidfile), "%s/probe.pid", tmpdir);
	snprintf(db, sizeof(db), "%s/k.db", tmpdir);
	snprintf(cases, sizeof(cases), "%s/tiny.ini", FIXTURES);
	snprintf(text, sizeof(text), "[combo ok]\n[combo hangs]\nenv.LD_PRELOAD = %s\n"
	         "env.LKS_TEST_PRELOAD = pidfile:%s\n", LKS_HANG_LIB, pidfile);
	put_file("hang.ini", text, combos, sizeof(combos));
	*matrix = fork();
	cr_assert_geq(*matrix, 0);
	if (*matrix == 0) {
		int fd = open("/dev/null", O_WRONLY);

		dup2(fd, 1);
		dup2(fd, 2);
		execl(LKS_BIN, LKS_BIN, "matrix", "--combos", combos, cases, "--check", "finite",
		      "--timeout", "100", "--db", db, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 600 && !strchr(buf, '\n'); i++) {
		FILE *f = fopen(pidfile, "r");

		usleep(100000);
		if (f) {
			size_t n = fread(buf, 1, sizeof(buf) - 1, f);

			buf[n] = 0;
			fclose(f);
		}
	}
	cr_assert_not_null(strchr(buf, '\n'), "the hanging probe did not start");
	*probe = (pid_t)atol(buf);
}

/* A matrix SIGKILLed (a CI job's kill, timeout -s KILL) takes its probe with it: the probe
   was left running, re-parented, past its timeout. */
Test(combo, probe_dies_with_a_killed_command, .timeout = 120)
{
	pid_t matrix, probe;
	int status, gone;

	mkdir_tmp();
	start_hanging_matrix(&matrix, &probe);
	cr_assert(alive(probe));
	cr_assert_eq(kill(matrix, SIGKILL), 0);
	cr_assert_eq(waitpid(matrix, &status, 0), matrix);
	for (int i = 0; i < 50 && alive(probe); i++)
		usleep(100000);
	gone = !alive(probe);
	if (!gone)
		kill(probe, SIGKILL);  /* this test's own probe, by its pid */
	cr_assert(gone, "the probe outlived its SIGKILLed matrix by 5 s");
	rm_tmp();
}

/* Ctrl-C: the probe is killed, and stored, its output saying why; the session's result
   says the command stopped, where it stayed NULL ("none yet") beside a finish time. */
Test(combo, interrupted_command_stores_its_probe_and_result, .timeout = 120)
{
	char s[512];
	pid_t matrix, probe;
	int status;

	mkdir_tmp();
	start_hanging_matrix(&matrix, &probe);
	cr_assert_eq(kill(matrix, SIGINT), 0);
	cr_assert_eq(waitpid(matrix, &status, 0), matrix);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 3, "status %#x", status);
	cr_assert_not(alive(probe));
	sql_text("k.db", "SELECT result FROM probe_sessions", s, sizeof(s));
	cr_assert_str_eq(s, "stopped: interrupted (signal 2): the probe was killed");
	cr_assert_eq(sql_int("k.db", "SELECT count(*) FROM probes"), 2);
	cr_assert_eq(sql_int("k.db", "SELECT count(*) FROM probes WHERE combo = 'hangs' AND "
	                             "outcome = 'crash' AND signal = 9 AND output LIKE "
	                             "'%interrupted (signal 2)%'"), 1);
	rm_tmp();
}
