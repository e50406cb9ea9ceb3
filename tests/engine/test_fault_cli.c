/*
 * test_fault_cli.c: planted faults caught by the program, run as a user would. The fault
 * cases in cases/faults each find their fault at the declared step, rank and tensor (and
 * fail when the declared place is off by one step), and the report says so; LOCKSTEP_INJECT
 * plants a fault from the environment; --steps that stop before a fault warn; a faulty
 * rank is named by the majority of three replicas, two replicas name the pair; a close
 * check on tensor statistics catches a NaN run; the clean nightly cases pass two reruns
 * written at once; the detection table of 'bench detect'. The faults of sharded layouts: test_fault_mesh.c. LKS_BIN is the built program, LKS_SRC the source
 * tree (tests/engine/CMakeLists.txt).
 */
#include <criterion/criterion.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "fault_fixture.h"
#include "fault_run_fixture.h"
#include "run_bin.h"
#include "harness/engine/case.h"

/* The first event the runner stored for the case's runs. */
static void first_event(const char *db, const char *case_name, struct event *ev)
{
	sqlite3 *h;
	sqlite3_stmt *st;

	cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	cr_assert_eq(sqlite3_prepare_v2(h, "SELECT e.step, e.rank, e.tensor, e.message FROM events e "
	             "JOIN runs r USING (run_id) WHERE r.case_name = ?1 ORDER BY e.event_id LIMIT 1",
	             -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(h));
	sqlite3_bind_text(st, 1, case_name, -1, SQLITE_STATIC);
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "no event for '%s'", case_name);
	event_of(st, ev);
	sqlite3_finalize(st);
	sqlite3_close(h);
}

/* Whether dir/name holds the text (a line of it); NULL when not. */
static const char *lks_grep_file(const char *dir, const char *name, const char *text)
{
	static char buf[1 << 16];
	char path[700];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!(f = fopen(path, "r")))
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return strstr(buf, text);
}

/* Every fault case: its 'caught' check fails exactly where the case file says. The two
   seed scenarios of DESIGN are among them: a NaN at step 1 located before the all-reduce
   (nan_step1) and a faulty rank 0 (faulty_rank0). */
Test(fault, every_fault_case_is_caught_where_declared, .timeout = 300)
{
	static const struct { const char *name, *tensor; int step, rank; } want[] = {
		{ "ag_stale", "blocks.1.attn_norm.weight", 3, 0 },
		{ "amax_group", "blocks.1.mlp.down.fwd.x", 2, 0 },
		{ "amax_local", "blocks.0.mlp.up.fwd.w", 2, 0 },
		{ "bitflip", "blocks.0.mlp.up.out", 3, 1 },
		{ "faulty_rank0", "blocks.1.mlp.down.weight", 2, 0 },
		{ "nan", "blocks.1.mlp.down.weight.grad", 2, 1 },
		{ "nan_step1", "blocks.0.mlp.up.weight.grad", 1, 3 },
		{ "rs_drop_tail", "blocks.1.attn_norm.weight", 2, 0 },
		{ "scale_round_up", "blocks.0.mlp.up.fwd.x", 0, 0 },
		{ "skip_allreduce", "embed.weight", 3, 2 },
		{ "stale_bwd_scale", "blocks.1.mlp.down.dgrad.dy", 1, 0 },
	};
#define NWANT (int)(sizeof(want) / sizeof(want[0]))
	char dir[] = "/tmp/lks_fault_XXXXXX", db[600], args[1600], out[16384];
	struct verdicts v;
	struct event ev;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(db, sizeof(db), "%s/f.db", dir);
	snprintf(args, sizeof(args), "run '%s/cases/faults' --db '%s' --quiet", LKS_SRC, db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	read_verdicts(db, &v);
	cr_assert_eq(v.n, NWANT, "one caught check per fault case");
	/* and amax_local's and amax_group's tp groups name their rank (group_names_the_rank) */
	cr_assert_eq(v.expected_fail, NWANT + 2, "%s", out);
	for (int i = 0; i < NWANT; i++) {
		cr_assert_str_eq(v.seen[i], want[i].name);
		cr_assert_eq(v.step[i], want[i].step, "%s", want[i].name);
		cr_assert_eq(v.rank[i], want[i].rank, "%s", want[i].name);
		cr_assert_str_eq(v.tensor[i], want[i].tensor, "%s", want[i].name);
	}
#undef NWANT

	/* the NaN at step 1 is located before the all-reduce: the runner's first event is
	   rank 3's own gradient, before any replica holds the all-reduced NaN */
	first_event(db, "nan_step1", &ev);
	cr_assert_eq(ev.step, 1);
	cr_assert_eq(ev.rank, 3);
	cr_assert_str_eq(ev.tensor, "blocks.0.mlp.up.weight.grad");
	cr_assert_not_null(strstr(ev.message, "before the all-reduce"), "%s", ev.message);

	/* the report puts the planted faults beside the verdicts: every one caught (each check
	   that expects one: amax_local and amax_group have two) */
	snprintf(args, sizeof(args), "report --db '%s' -o '%s/report'", db, dir);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "planted faults: 13 of 13 caught exactly where planted"), "%s", out);

	/* the declared place is held to exactly: one step later is a failure */
	snprintf(args, sizeof(args), "run '%s/cases/faults/bitflip.ini' --db '%s' --quiet "
	         "--set check.caught.step=4", LKS_SRC, db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 1, "%s", out);
	cr_assert_not_null(strstr(out, "expected to fail at step 4"), "%s", out);
	/* and the report of that suite says so: caught where its run planted it (its inject
	   spec), which the check expected elsewhere: a wrong expectation, not a missed fault */
	snprintf(args, sizeof(args), "report --db '%s' -o '%s/report'", db, dir);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "planted faults: 1 of 1 caught exactly where planted"), "%s", out);
	cr_assert_not_null(lks_grep_file(dir, "report/report.md",
	                   "| bitflip | caught | bitwise | step 3, rank 1, blocks.0.mlp.up.out | "
	                   "step 3, rank 1, blocks.0.mlp.up.out | caught where planted; the check "
	                   "expected step 4, rank 1, blocks.0.mlp.up.out |"));
	remove_db(db);
	snprintf(args, sizeof(args), "rm -rf '%s'", dir);
	cr_assert_eq(system(args), 0);
}

Test(fault, environment_plants_a_fault, .timeout = 120)
{
	char dir[] = "/tmp/lks_fault_env_XXXXXX", db[600], args[1600], out[16384];
	struct verdicts v;
	lks_store *s;
	sqlite3_stmt *st;
	int n = 0;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(db, sizeof(db), "%s/e.db", dir);
	/* the NaN aimed at run 'clean' only, at step 5: its finite check fails there; the case's
	   own fault, at step 3, is still caught first by the bitwise check */
	snprintf(args, sizeof(args), "run '%s/cases/faults/bitflip.ini' --db '%s' --quiet", LKS_SRC, db);
	cr_assert_eq(lks_run_bin("LOCKSTEP_INJECT='nan step=5 rank=0 tensor=blocks.0.mlp.act.out run=clean'",
	                 args, out, sizeof(out)), 1, "%s", out);
	cr_assert_not_null(strstr(out, "clean_finite"), "%s", out);
	cr_assert_not_null(strstr(out, "FAIL: step 5, tensor 'blocks.0.mlp.act.out' (forward), rank 0"),
	                   "%s", out);
	read_verdicts(db, &v);
	cr_assert_eq(v.expected_fail, 1, "the case's own fault is still caught");

	/* the run records what was planted: in its options and in its fingerprint */
	cr_assert_eq(lks_store_open(db, &s), 0);
	cr_assert_eq(sqlite3_prepare_v2(lks_store_db(s),
	             "SELECT run_name, options, fingerprint FROM runs ORDER BY run_id", -1, &st, NULL),
	             SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);
		const char *opt = (const char *)sqlite3_column_text(st, 1);
		const char *fp = (const char *)sqlite3_column_text(st, 2);

		if (!strcmp(name, "clean"))
			cr_assert_not_null(strstr(opt, "inject: nan step=5 rank=0 tensor=blocks.0.mlp.act.out"),
			                   "%s", opt);
		else
			cr_assert_not_null(strstr(opt, "inject: bitflip step=3"), "%s", opt);
		cr_assert_not_null(strstr(fp, "\"env.LOCKSTEP_INJECT\""), "%s", fp);
		n++;
	}
	sqlite3_finalize(st);
	lks_store_close(s);
	cr_assert_eq(n, 2);

	/* bad or misaimed specs are bad input: exit 2, nothing run */
	cr_assert_eq(lks_run_bin("LOCKSTEP_INJECT='nan step=1'", args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "LOCKSTEP_INJECT: inject: nan needs rank="), "%s", out);
	cr_assert_eq(lks_run_bin("LOCKSTEP_INJECT='stale_bwd_scale'", args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "no run without a fault of its own fits"), "%s", out);
	/* without run=, a run's own fault stays (its case tests it); list shows what run
	   would plant, and run=NAME replaces that run's own */
	snprintf(args, sizeof(args), "list '%s/cases/faults/bitflip.ini'", LKS_SRC);
	cr_assert_eq(lks_run_bin("LOCKSTEP_INJECT='nan step=1 rank=0 tensor=head.logits'", args, out,
	                         sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "clean         bf16               2 ranks, inject nan step=1"),
	                   "%s", out);
	cr_assert_not_null(strstr(out, "flipped       bf16               2 ranks, inject bitflip "
	                           "step=3"), "%s", out);
	cr_assert_eq(lks_run_bin("LOCKSTEP_INJECT='nan step=1 rank=0 tensor=head.logits run=flipped'",
	                         args, out, sizeof(out)), 0, "%s", out);
	cr_assert_null(strstr(out, "inject bitflip"), "%s", out);
	/* a spec that fits no run (no such run, a step past the end) is refused by list as by
	   run: list is how a user checks a combo's fault before a bisect */
	cr_assert_eq(lks_run_bin("LOCKSTEP_INJECT='nan step=1 rank=0 tensor=head.logits run=nosuch'",
	                         args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "LOCKSTEP_INJECT: no run is called 'nosuch'"), "%s", out);
	cr_assert_eq(lks_run_bin("LOCKSTEP_INJECT='nan step=9 rank=0 tensor=head.logits'", args, out,
	                         sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "step 9 is past the run's"), "%s", out);
	snprintf(args, sizeof(args), "run '%s/cases/faults/bitflip.ini' --db '%s' --quiet", LKS_SRC,
	         db);
	cr_assert_eq(lks_run_bin("LOCKSTEP_INJECT='skip_allreduce step=1 rank=0 run=nosuch'", args, out,
	                 sizeof(out)), 2, "%s", out);
	/* a collective's fault in runs of another mesh (its runs are DP: no reduce-scatter) is
	   refused, not planted where it never acts */
	cr_assert_eq(lks_run_bin("LOCKSTEP_INJECT='rs_drop_tail step=1 rank=0'", args, out,
	                         sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "rs_drop_tail"), "%s", out);
	cr_assert_eq(lks_run_bin("LOCKSTEP_INJECT='rs_drop_tail step=1 rank=0 run=clean'", args, out,
	                         sizeof(out)), 2, "%s", out);
	/* a tensor the run does not trace is bad input, found before anything trains, not a
	   fault that silently never acts */
	cr_assert_eq(lks_run_bin("LOCKSTEP_INJECT='nan step=1 rank=0 tensor=blocks.0.mlp.up.fwd.x'", args,
	                 out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "run 'clean': inject: 'blocks.0.mlp.up.fwd.x' is an FP8 operand"),
	                   "%s", out);
	cr_assert_null(strstr(out, "loss"), "a run trained: %s", out);
	cr_assert_eq(lks_run_bin("LOCKSTEP_INJECT='nan step=1 rank=0 tensor=head.logits element=8192 "
	                 "run=flipped'", args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "element 8192 is out of range: 'head.logits' has 8192 elements"),
	                   "%s", out);
	remove_db(db);
	rmdir(dir);
}

/* --steps that stop before the planted fault say so: the run is clean, and its checks
   say nothing about the fault. */
Test(fault, steps_before_the_fault_warn, .timeout = 120)
{
	char dir[] = "/tmp/lks_fault_steps_XXXXXX", db[600], args[1600], out[16384];

	cr_assert_not_null(mkdtemp(dir));
	snprintf(db, sizeof(db), "%s/s.db", dir);
	snprintf(args, sizeof(args), "run '%s/cases/faults/bitflip.ini' --db '%s' --quiet --steps 3",
	         LKS_SRC, db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 1, "%s", out);
	cr_assert_not_null(strstr(out, "lockstep: warning: bitflip / flipped: the fault at step 3 "
	                          "will not be planted: --steps 3 stops before it"), "%s", out);
	/* check, for git bisect: a version whose fault never acted is not tested (125), never
	   good, and not bad */
	snprintf(args, sizeof(args), "check '%s/cases/faults/bitflip.ini' --db '%s' --quiet "
	         "--steps 3", LKS_SRC, db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 125, "%s", out);
	cr_assert_not_null(strstr(out, "1 planted fault never acted"), "%s", out);
	snprintf(args, sizeof(args), "run '%s/cases/faults/bitflip.ini' --db '%s' --quiet --steps 4",
	         LKS_SRC, db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_null(strstr(out, "warning"), "step 3 of 4 is planted: %s", out);
	/* nor does a scale-group fault it stopped before fail the run as one that struck
	   nothing where it could act: its checks say nothing, as above */
	remove_db(db);
	snprintf(args, sizeof(args), "run '%s/cases/faults/amax_local.ini' --db '%s' --quiet "
	         "--steps 2", LKS_SRC, db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 1, "%s", out);
	cr_assert_not_null(strstr(out, "the fault at step 2 will not be planted"), "%s", out);
	cr_assert_null(strstr(out, "struck nothing"), "%s", out);
	cr_assert_null(strstr(out, "run failed"), "%s", out);
	remove_db(db);
	rmdir(dir);
}

/* A faulty rank 0 of three: a flipped bit in one of its parameters, and rank 0 keeping its
   own gradient, are each found on rank 0 by the majority of the replicas (comparing every
   rank with rank 0 blamed rank 1). The verdict is stored, and written to JUnit, so. */
Test(fault, faulty_rank_0_of_3_is_named, .timeout = 120)
{
	static const char text[] =
		"[case]\nsteps = 5\nworld_size = 3\n"
		"[model]\nvocab = 64\nhidden = 16\nffn = 32\nlayers = 1\nseq = 8\nbatch = 1\n"
		"[run flipped]\nrecipe = bf16\n"
		"inject = bitflip step=2 rank=0 tensor=blocks.0.mlp.up.weight element=5 bit=22\n"
		"[run lost]\nrecipe = bf16\ninject = skip_allreduce step=1 rank=0\n"
		"[check caught]\nkind = ranks_agree\na = flipped\nexpect = fail\nstep = 2\nrank = 0\n"
		"tensor = blocks.0.mlp.up.weight\n"
		"[check lost]\nkind = ranks_agree\na = lost\nexpect = fail\nstep = 1\nrank = 0\n"
		"tensor = embed.weight\n";
	char dir[] = "/tmp/lks_fault_rank0_XXXXXX", path[600], db[600], xml[600], args[2000];
	char out[16384], *junit;
	struct verdicts v;
	size_t n;
	FILE *f;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/rank0.ini", dir);
	snprintf(db, sizeof(db), "%s/r.db", dir);
	snprintf(xml, sizeof(xml), "%s/j.xml", dir);
	write_file(path, text);
	snprintf(args, sizeof(args), "run '%s' --db '%s' --junit '%s' --quiet", path, db, xml);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "rank 0 disagrees with the other 2 of 3 ranks"), "%s", out);
	read_verdicts(db, &v);
	cr_assert_eq(v.expected_fail, 2, "%s", out);
	cr_assert_eq(v.n, 1);
	cr_assert_eq(v.step[0], 2);
	cr_assert_eq(v.rank[0], 0, "stored as rank %d", v.rank[0]);
	cr_assert_str_eq(v.tensor[0], "blocks.0.mlp.up.weight");
	f = fopen(xml, "r");
	cr_assert_not_null(f);
	junit = calloc(1, 65536);
	n = fread(junit, 1, 65535, f);
	fclose(f);
	cr_assert_gt(n, 0);
	cr_assert_not_null(strstr(junit, "expected failure: step 2, tensor &apos;blocks.0.mlp.up.weight"
	                                 "&apos; (update), rank 0: "), "%s", junit);
	free(junit);
	unlink(xml);
	unlink(path);
	remove_db(db);
	rmdir(dir);
}

/* Two replicas that differ: the pair is named, no single rank is stored (a golden or a
   clean run decides), and a case that expects one rank of a 2-rank ranks_agree is refused
   before anything runs. */
Test(fault, two_ranks_name_the_pair, .timeout = 120)
{
	static const char text[] =
		"[case]\nsteps = 5\nworld_size = 2\n"
		"[model]\nvocab = 64\nhidden = 16\nffn = 32\nlayers = 1\nseq = 8\nbatch = 1\n"
		"[run lost]\nrecipe = bf16\ninject = skip_allreduce step=3 rank=1\n"
		"[check caught]\nkind = ranks_agree\na = lost\nexpect = fail\nstep = 3\n"
		"tensor = embed.weight\n";
	char dir[] = "/tmp/lks_fault_pair_XXXXXX", path[600], db[600], args[2000], out[16384];
	struct verdicts v;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/pair.ini", dir);
	snprintf(db, sizeof(db), "%s/p.db", dir);
	write_file(path, text);
	snprintf(args, sizeof(args), "run '%s' --db '%s' --quiet", path, db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "expected failure: step 3, tensor 'embed.weight' (update): "),
	                   "no rank named: %s", out);
	cr_assert_not_null(strstr(out, "ranks 0 and 1 disagree: two ranks have no majority, a golden "
	                               "or a clean run decides which is wrong"), "%s", out);
	read_verdicts(db, &v);
	cr_assert_eq(v.expected_fail, 1);
	cr_assert_eq(v.rank[0], -1, "stored as rank %d", v.rank[0]);
	strcat(args, " --set check.caught.rank=1");
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "pair.ini:14: check 'caught': ranks_agree on 2 ranks names no "
	                               "single rank"), "%s", out);
	unlink(path);
	remove_db(db);
	rmdir(dir);
}

/* close on a tensor statistic against a run that a planted NaN fills with NaN: it fails
   (it was "unsupported", and the command exited 0), first where the NaN appears among the
   tensors the filter names, however loose the tolerance. */
Test(fault, close_on_tensor_stats_catches_a_nan_run, .timeout = 120)
{
	static const char text[] =
		"[case]\nsteps = 4\nworld_size = 2\n"
		"[model]\nvocab = 64\nhidden = 16\nffn = 32\nlayers = 2\nseq = 8\nbatch = 1\n"
		"[run clean]\nrecipe = fp8_rowwise\n"
		"[run poisoned]\nrecipe = fp8_rowwise\n"
		"inject = nan step=2 rank=1 tensor=blocks.1.mlp.down.weight.grad element=3\n"
		/* loose on purpose: the runs are bit for bit equal before the NaN, so any tolerance
		   passes there; what must fail is the NaN */
		"[check grads]\nkind = close\na = poisoned\nb = clean\nmetric = l2\n"
		"tensors = *.weight.grad\nrtol = 0.5\natol = 1\n"
		"[check amax]\nkind = close\na = poisoned\nb = clean\nmetric = amax\nrtol = 1e6\n";
	char dir[] = "/tmp/lks_fault_close_XXXXXX", path[600], db[600], args[2000], out[16384];

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/nan_close.ini", dir);
	snprintf(db, sizeof(db), "%s/c.db", dir);
	write_file(path, text);
	snprintf(args, sizeof(args), "run '%s' --db '%s' --quiet", path, db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 1, "%s", out);
	cr_assert_not_null(strstr(out, "grads                      close       FAIL: step 2, tensor "
	                               "'blocks.1.mlp.down.weight.grad' (backward), rank 1: l2 "
	                               "poisoned=NaN clean="), "%s", out);
	cr_assert_not_null(strstr(out, "amax                       close       FAIL: step 2, tensor "
	                               "'blocks.1.mlp.down.weight.grad' (backward), rank 1: amax "
	                               "poisoned=NaN clean="), "%s", out);
	cr_assert_not_null(strstr(out, "2 checks: 0 passed, 2 failed"), "%s", out);
	unlink(path);
	remove_db(db);
	rmdir(dir);
}

/* The suite's case files to run: every .ini in cases/, less those that LKS_SUITE_ELSEWHERE
   names (space-separated, as cases/NAME.ini), quoted for the shell into list; the number
   of checks they declare, and in tp whether cases/tp.ini is among them. */
static int suite_cases(char *list, size_t size, int *tp)
{
	const char *elsewhere = getenv("LKS_SUITE_ELSEWHERE");
	char pattern[600], name[300], skip[2000], line[512];
	size_t len = 0;
	int n = 0;
	glob_t g;
	FILE *f;

	snprintf(skip, sizeof(skip), " %s ", elsewhere ? elsewhere : "");
	snprintf(pattern, sizeof(pattern), "%s/cases/*.ini", LKS_SRC);
	cr_assert_eq(glob(pattern, 0, NULL, &g), 0);
	*tp = 0;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		snprintf(name, sizeof(name), " cases/%s ", strrchr(g.gl_pathv[i], '/') + 1);
		if (strstr(skip, name))
			continue;
		len += (size_t)snprintf(list + len, size - len, " '%s'", g.gl_pathv[i]);
		cr_assert_lt(len, size);
		*tp |= !strcmp(name, " cases/tp.ini ");
		f = fopen(g.gl_pathv[i], "r");
		cr_assert_not_null(f, "%s", g.gl_pathv[i]);
		while (fgets(line, sizeof(line), f))
			n += !strncmp(line, "[check ", 7);
		fclose(f);
	}
	globfree(&g);
	return n;
}

/* No false alarm: the clean nightly cases pass two reruns into one database, run at once
   (as concurrent nightly jobs write one database; mpi_suite runs the suite three times
   more, as threads and as processes, and holds their bits to each other: a third rerun
   here took CI's time for nothing more). Under the sanitizers (ci/sanitize) the suite runs once
   (LKS_TEST_RERUNS=1): they look at memory, which a rerun of the same work does not show
   them more of; and without the case files that mpi_suite runs sanitized as MPI processes
   (LKS_SUITE_ELSEWHERE, tests/CMakeLists.txt), so that each case runs sanitized once. */
Test(fault, clean_cases_pass_reruns_written_at_once, .timeout = 600)
{
	char dir[] = "/tmp/lks_fault_clean_XXXXXX", db[600], cmd[4800], path[700], out[16384];
	char cases[2400];
	const char *env = getenv("LKS_TEST_RERUNS");
	int reruns = env && atoi(env) >= 1 && atoi(env) <= 3 ? atoi(env) : 2, tp;
	int checks = suite_cases(cases, sizeof(cases), &tp);
	struct verdicts v;

	cr_assert_gt(checks, 0, "no case files left to run");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(db, sizeof(db), "%s/c.db", dir);
	snprintf(cmd, sizeof(cmd), "cd '%s' && for i in $(seq %d); do ('%s' run %s "
	         "--db '%s' --quiet --golden '%s/golden' >out$i 2>&1; echo $? >rc$i) & done; "
	         "wait", dir, reruns, LKS_BIN, cases, db, LKS_SRC);
	cr_assert_eq(lks_run_sh(cmd, NULL, 0), 0);
	for (int i = 1; i <= reruns; i++) {
		snprintf(path, sizeof(path), "cat '%s/rc%d' && tail -n 40 '%s/out%d'", dir, i, dir, i);
		lks_run_sh(path, out, sizeof(out));
		cr_assert_eq(atoi(out), 0, "rerun %d exits %s", i, out);
		snprintf(path, sizeof(path), "%s/rc%d", dir, i);
		unlink(path);
		snprintf(path, sizeof(path), "%s/out%d", dir, i);
		unlink(path);
	}
	read_verdicts(db, &v);
	/* the clean cases' only expected divergences: tp.ini's nine, where each tp run first
	   parts from TP 1 (its first row-parallel sum) and each sequence-parallel run from TP
	   (its first norm gain's gradient), in each suite */
	cr_assert_eq(v.expected_fail, reruns * (tp ? 9 : 0));
	/* and every other check of every suite passed */
	cr_assert_eq(v.pass + v.expected_fail, reruns * checks, "%d suites of %d checks: %d passed",
	             reruns, checks, v.pass);
	remove_db(db);
	rmdir(dir);
}

/* The detection table: what each check catches on the same faulty and clean runs. The
   rows follow from what each fault does: a flipped mantissa bit moves no loss by 5% and
   makes no NaN (nor does one in a weight on rank 0, which only the comparison with a clean
   run and of the replicas see); a NaN in a weight gradient is what a NaN check of collective inputs sees,
   and the loss only turns NaN a step later; a rank that skips the all-reduce is a replica
   that drifts, while the all-reduced gradient of that step is still right (sqnr misses
   it); stale backward scales leave the recompute equal to the forward. */
Test(fault, detection_table, .timeout = 300)
{
	static const char *const rows[] = {
		"| bitflip | step 3 | - | - | - | - | n/a | - |",
		"| faulty_rank0 | step 2 | - | - | - | step 2 | n/a | - |",
		"| nan | step 2 | step 3 | step 2 | step 2 | - | n/a | step 2 |",
		"| nan_step1 | step 1 | step 2 | step 1 | step 1 | - | n/a | step 1 |",
		"| ag_stale | step 3 | - | step 3 | - | - | n/a | - |",
		"| rs_drop_tail | step 2 | - | step 2 | - | - | n/a | - |",
		"| scale_round_up | step 0 | - | step 0 | - | - | n/a | - |",
		"| skip_allreduce | step 3 | - | - | - | step 3 | n/a | - |",
		"| stale_bwd_scale | step 1 | - | step 1 | - | - | - | - |",
	};
	char args[1200], out[16384];

	snprintf(args, sizeof(args), "bench detect '%s/cases/faults'", LKS_SRC);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "| fault | bitwise/golden | loss rtol 5% | sqnr 20 dB | finite | "
	                               "ranks_agree | recompute | NaN collective |"), "%s", out);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		cr_assert_not_null(strstr(out, rows[i]), "missing row %s in\n%s", rows[i], out);
	cr_assert_not_null(strstr(out, "bitflip          bitwise/golden  step 3, rank 1, "
	                               "blocks.0.mlp.up.out"), "%s", out);
	/* a faulty rank 0 is blamed on rank 0 by the comparison of replicas too */
	cr_assert_not_null(strstr(out, "faulty_rank0     ranks_agree     step 2, rank 0, "
	                               "blocks.1.mlp.down.weight"), "%s", out);
}
