/*
 * test_fault_cli.c: planted faults caught by the program, run as a user would. The fault
 * cases in cases/faults each find their fault at the declared step, rank and tensor (and
 * fail when the declared place is off by one step), and the report says so; LOCKSTEP_INJECT
 * plants a fault from the environment; --steps that stop before a fault warn; a faulty
 * rank is named by the majority of three replicas, two replicas name the pair; a close
 * check on tensor statistics catches a NaN run; the clean nightly cases pass three reruns;
 * the detection table of 'bench detect'. LKS_BIN is the built program, LKS_SRC the source
 * tree (tests/engine/CMakeLists.txt).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "fault_fixture.h"
#include "run_bin.h"
#include "harness/engine/case.h"
#include "harness/engine/model.h"
#include "harness/store/trace_store.h"
#include "harness/store/trace_store_impl.h"
#include "kernels/err.h"

struct verdicts {
	int n, expected_fail, pass;
	char seen[16][LKS_NAME_MAX];
	int step[16], rank[16];
	char tensor[16][128];
};

static int collect(void *arg, const lks_check_rec *r)
{
	struct verdicts *v = arg;

	if (v->n < 16 && !strncmp(r->check_name, "caught", 6)) {  /* caught, caught_by_... */
		snprintf(v->seen[v->n], LKS_NAME_MAX, "%s", r->case_name);
		v->step[v->n] = r->step;
		v->rank[v->n] = r->rank;
		snprintf(v->tensor[v->n], 128, "%s", r->tensor ? r->tensor : "");
		v->n++;
	}
	v->expected_fail += !strcmp(r->verdict, "expected_fail");
	v->pass += !strcmp(r->verdict, "pass");
	return 0;
}

static void read_verdicts(const char *db, struct verdicts *v)
{
	lks_store *s;

	memset(v, 0, sizeof(*v));
	cr_assert_eq(lks_store_open(db, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_get_checks(s, 0, collect, v), 0, "%s", lks_errmsg());
	lks_store_close(s);
}

static void remove_db(const char *db)
{
	char p[700];

	unlink(db);
	snprintf(p, sizeof(p), "%s-wal", db);
	unlink(p);
	snprintf(p, sizeof(p), "%s-shm", db);
	unlink(p);
}

struct event {
	int step, rank;
	char tensor[128], message[256];
};

/* An event's row (step, rank, tensor, message) from st into ev. */
static void event_of(sqlite3_stmt *st, struct event *ev)
{
	ev->step = sqlite3_column_int(st, 0);
	ev->rank = sqlite3_column_int(st, 1);
	snprintf(ev->tensor, sizeof(ev->tensor), "%s", (const char *)sqlite3_column_text(st, 2));
	snprintf(ev->message, sizeof(ev->message), "%s", (const char *)sqlite3_column_text(st, 3));
}

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
	/* and the report of that suite says so: caught, but not where planted */
	snprintf(args, sizeof(args), "report --db '%s' -o '%s/report'", db, dir);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "planted faults: 0 of 1 caught exactly where planted"), "%s", out);
	cr_assert_not_null(lks_grep_file(dir, "report/report.md",
	                   "| bitflip | caught | bitwise | step 4, rank 1, blocks.0.mlp.up.out | "
	                   "step 3, rank 1, blocks.0.mlp.up.out | found elsewhere |"));
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
	cr_assert_not_null(strstr(out, "no run fits"), "%s", out);
	cr_assert_eq(lks_run_bin("LOCKSTEP_INJECT='skip_allreduce step=1 rank=0 run=nosuch'", args, out,
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
	snprintf(args, sizeof(args), "run '%s/cases/faults/bitflip.ini' --db '%s' --quiet --steps 4",
	         LKS_SRC, db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_null(strstr(out, "warning"), "step 3 of 4 is planted: %s", out);
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
	                               "poisoned=nan clean="), "%s", out);
	cr_assert_not_null(strstr(out, "amax                       close       FAIL: step 2, tensor "
	                               "'blocks.1.mlp.down.weight.grad' (backward), rank 1: amax "
	                               "poisoned=nan clean="), "%s", out);
	cr_assert_not_null(strstr(out, "2 checks: 0 passed, 2 failed"), "%s", out);
	unlink(path);
	remove_db(db);
	rmdir(dir);
}

/* No false alarm: the clean nightly cases pass three reruns into one database. */
Test(fault, clean_cases_pass_three_reruns, .timeout = 600)
{
	char dir[] = "/tmp/lks_fault_clean_XXXXXX", db[600], args[1600], out[16384];
	struct verdicts v;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(db, sizeof(db), "%s/c.db", dir);
	snprintf(args, sizeof(args), "run '%s/cases' --db '%s' --quiet --golden '%s/golden'",
	         LKS_SRC, db, LKS_SRC);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "rerun %d: %s", i + 1, out);
	read_verdicts(db, &v);
	/* the clean cases' only expected divergences: tp.ini's nine, where each tp run first
	   parts from TP 1 (its first row-parallel sum) and each sequence-parallel run from TP
	   (its first norm gain's gradient), in each of three suites */
	cr_assert_eq(v.expected_fail, 3 * 9);
	cr_assert_gt(v.pass, 3 * 40, "every check of three suites, %d", v.pass);
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

/* The lowest-index parameter tensor (the update's trace order) with an element in [a, b)
   of the flat vector, or NULL: where a fault that corrupts those elements shows first. */
static const char *first_tensor_in(const lks_model *m, size_t a, size_t b)
{
	for (int i = 0; i < m->nt; i++)
		if (m->t[i].off < b && m->t[i].off + m->t[i].n > a)
			return m->t[i].name;
	return NULL;
}

/* The FSDP collectives' faults on layouts, ranks, steps and models other than the shipped
   cases (cases/faults/rs_drop_tail.ini, ag_stale.ini): each found by a bitwise check
   against the clean run at its step, on rank 0 (every rank gathers the same), in the first
   tensor of the elements it corrupts, computed here from the model's flat vector and the
   shards' size (runner_fsdp.c: nparams / fsdp rounded up to 16). */
Test(fault, fsdp_collective_faults_found_where_they_strike, .timeout = 300)
{
	static const struct {
		const char *kind;
		int world, rank, step;
		long long count;        /* rs_drop_tail: the last count elements of the shard */
		int attention;
	} t[] = {
		{ "rs_drop_tail", 2, 0, 1, 3, 0 },
		{ "rs_drop_tail", 3, 1, 2, 40, 1 },
		{ "rs_drop_tail", 4, 3, 1, 200, 1 },
		{ "ag_stale", 2, 1, 1, 0, 0 },
		{ "ag_stale", 3, 0, 2, 0, 1 },
		{ "ag_stale", 4, 2, 3, 0, 0 },
	};
	char dir[] = "/tmp/lks_fault_fsdp_XXXXXX", path[600], db[600], args[1600];
	char text[2048], inject[128], out[16384];

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/f.ini", dir);
	snprintf(db, sizeof(db), "%s/f.db", dir);
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		lks_model_cfg cfg = { 64, 16, 32, 2, 8, 1, t[i].attention, t[i].attention ? 2 : 0,
		                      t[i].attention ? 8 : 0 };
		size_t S, end, a;
		const char *want;
		struct verdicts v;
		lks_model m;

		cr_assert_eq(lks_model_init(&m, &cfg), 0);
		S = ((m.nparams + (size_t)t[i].world - 1) / (size_t)t[i].world + 15) & ~(size_t)15;
		end = (size_t)(t[i].rank + 1) * S < m.nparams ? (size_t)(t[i].rank + 1) * S : m.nparams;
		a = t[i].count ? end - (size_t)t[i].count : (size_t)t[i].rank * S;
		want = first_tensor_in(&m, a, end);
		cr_assert_not_null(want, "%s: the corrupted elements hold no parameter", t[i].kind);
		if (t[i].count)
			snprintf(inject, sizeof(inject), "%s step=%d rank=%d count=%lld", t[i].kind,
			         t[i].step, t[i].rank, t[i].count);
		else
			snprintf(inject, sizeof(inject), "%s step=%d rank=%d", t[i].kind, t[i].step,
			         t[i].rank);
		snprintf(text, sizeof(text), "[case]\nsteps = 5\nworld_size = %d\n"
		         "[model]\nvocab = 64\nhidden = 16\nffn = 32\nlayers = 2\nseq = 8\nbatch = 1\n"
		         "%s[optim]\nclip = 0\n"
		         "[run clean]\nrecipe = bf16\nfsdp = %d\n"
		         "[run struck]\nrecipe = bf16\nfsdp = %d\ninject = %s\n"
		         "[check caught]\nkind = bitwise\na = struck\nb = clean\nexpect = fail\n"
		         "step = %d\nrank = 0\ntensor = %s\n", t[i].world,
		         t[i].attention ? "attention = causal\nheads = 2\n" : "", t[i].world,
		         t[i].world, inject, t[i].step, want);
		write_file(path, text);
		unlink(db);
		snprintf(args, sizeof(args), "run '%s' --db '%s' --quiet", path, db);
		cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s\n%s", text, out);
		read_verdicts(db, &v);
		cr_assert_eq(v.expected_fail, 1, "%s: %s", inject, out);
		lks_model_release(&m);
	}
	remove_db(db);
	unlink(path);
	rmdir(dir);
}

/* amax_local and amax_group on layouts, recipes, operands, ranks and steps other than the
   shipped cases (cases/faults/amax_local.ini, amax_group.ini). Where one strikes depends on
   the data: the struck rank's own amax (or its dp group's) differs from its tp group's only
   where its shard misses the whole tensor's largest value (or the other replicas' shards
   hold a larger one). So each is held to what must be true wherever it strikes: a bitwise
   check against
   the clean run and the tp group's vote find the same first divergence, at the struck
   operand, at or after the fault's step, and the vote (tp >= 3: a majority) names the
   struck rank; both runs' other operands and tensors agree until then (bitwise's first
   divergence is that operand). A struck operand whose scale group is none fails the run. */
Test(fault, amax_scale_group_faults_found_where_they_strike, .timeout = 300)
{
	static const struct {
		const char *kind, *recipe, *operand;
		int tp, world, rank, step;
	} t[] = {
		{ "amax_local", "fp8_tensorwise", "blocks.1.attn.qkv.fwd.w", 4, 4, 2, 1 },
		{ "amax_local", "fp8_tensorwise", "blocks.0.mlp.down.dgrad.w", 3, 3, 0, 2 },
		{ "amax_local", "fp8_rowwise", "blocks.1.mlp.down.fwd.x", 4, 4, 1, 0 },
		{ "amax_local", "fp8_rowwise", "blocks.0.attn.proj.fwd.w", 3, 6, 2, 1 },
		{ "amax_local", "fp8_rowwise_gw_hp", "blocks.0.mlp.up.dgrad.dy", 4, 4, 3, 1 },
		{ "amax_local", "fp8_tensorwise", "blocks.1.mlp.up.wgrad.dy", 2, 4, 1, 1 },
		/* the dp group's amax: a replica's other batch */
		{ "amax_group", "fp8_tensorwise", "blocks.0.attn.qkv.dgrad.dy", 3, 6, 4, 1 },
		{ "amax_group", "fp8_rowwise", "blocks.1.mlp.down.fwd.x", 4, 8, 6, 2 },
		{ "amax_group", "fp8_tensorwise", "blocks.1.mlp.up.fwd.w", 2, 4, 3, 0 },
	};
	char dir[] = "/tmp/lks_fault_amax_XXXXXX", path[600], db[600], args[1600];
	char text[2048], out[16384];

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/f.ini", dir);
	snprintf(db, sizeof(db), "%s/f.db", dir);
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct verdicts v;

		/* heads and ffn divide by 2, 3 and 4; head_dim 8 (hidden 96 / 12 heads) */
		snprintf(text, sizeof(text), "[case]\nsteps = 6\nworld_size = %d\n"
		         "[model]\nvocab = 64\nhidden = 96\nffn = 96\nlayers = 2\nseq = 8\n"
		         "batch = 1\nattention = causal\nheads = 12\n"
		         "[run clean]\nrecipe = %s\ntp = %d\n"
		         "[run struck]\nrecipe = %s\ntp = %d\n"
		         "inject = %s tensor=%s rank=%d step=%d\n"
		         "[check caught]\nkind = bitwise\na = struck\nb = clean\n"
		         "[check caught_by_vote]\nkind = ranks_agree\na = struck\n",
		         t[i].world, t[i].recipe, t[i].tp, t[i].recipe, t[i].tp, t[i].kind,
		         t[i].operand, t[i].rank, t[i].step);
		write_file(path, text);
		remove_db(db);
		snprintf(args, sizeof(args), "run '%s' --db '%s' --quiet", path, db);
		cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 1, "%s\n%s", text, out);
		read_verdicts(db, &v);
		cr_assert_eq(v.n, 2, "%s", out);
		cr_assert_str_eq(v.tensor[0], t[i].operand, "%s\n%s", text, out);
		cr_assert_str_eq(v.tensor[1], t[i].operand, "%s\n%s", text, out);
		cr_assert_geq(v.step[0], t[i].step, "%s", out);
		cr_assert_eq(v.step[1], v.step[0], "%s", out);
		cr_assert_eq(v.rank[0], t[i].rank / t[i].tp * t[i].tp, "the group's first rank: %s", out);
		cr_assert_eq(v.rank[1], t[i].tp >= 3 ? t[i].rank : -1, "%s", out);
	}
	/* fp8_rowwise scales W per row across the column split of up: no group, nothing to
	   take locally; the run fails saying so */
	snprintf(text, sizeof(text), "[case]\nsteps = 2\nworld_size = 2\n"
	         "[model]\nvocab = 64\nhidden = 16\nffn = 32\nlayers = 1\nseq = 8\nbatch = 1\n"
	         "[run struck]\nrecipe = fp8_rowwise\ntp = 2\n"
	         "inject = amax_local tensor=blocks.0.mlp.up.fwd.w\n");
	write_file(path, text);
	remove_db(db);
	snprintf(args, sizeof(args), "run '%s' --db '%s' --quiet", path, db);
	cr_assert_neq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "struck nothing"), "%s", out);
	remove_db(db);
	unlink(path);
	rmdir(dir);
}

/* Rank r's tp-collective event (kind nonfinite_tp) of the latest run, if any: 1, else 0. */
static int tp_event(const char *db, int r, struct event *ev)
{
	sqlite3 *h;
	sqlite3_stmt *st;
	int found;

	cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	cr_assert_eq(sqlite3_prepare_v2(h, "SELECT step, rank, tensor, message FROM events WHERE "
	             "kind = 'nonfinite_tp' AND rank = ?1 AND run_id = (SELECT max(run_id) FROM "
	             "runs)", -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(h));
	sqlite3_bind_int(st, 1, r);
	if ((found = sqlite3_step(st) == SQLITE_ROW))
		event_of(st, ev);
	sqlite3_finalize(st);
	sqlite3_close(h);
	return found;
}

/* A NaN on one rank of a tp group is named before the group's collectives spread it: the
   struck rank's share of the first collective it reaches (a partial sum in bf16; in
   fp8_rowwise the amax of the next K-split operand, which the group's max would spread to
   every rank's scales), at its step; the other rank's first event is a later tensor of the
   same step. A NaN aimed at a tensor traced as a gathered copy is refused when the case is
   read; with trace = shards it strikes the rank's own shard and is named at that rank. */
Test(fault, a_nan_in_a_tp_group_is_named_before_its_collective, .timeout = 120)
{
	static const struct { const char *recipe, *struck, *other; } t[] = {
		{ "bf16", "blocks.1.attn.proj.out", "blocks.1.mlp.down.out" },
		{ "fp8_rowwise", "blocks.1.attn.proj.fwd.x", "blocks.1.attn.proj.out" },
	};
	char dir[] = "/tmp/lks_fault_tpnan_XXXXXX", path[600], db[600], args[1600];
	char text[1024], out[16384];
	struct event ev;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/n.ini", dir);
	snprintf(db, sizeof(db), "%s/n.db", dir);
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		snprintf(text, sizeof(text), "[case]\nsteps = 4\nworld_size = 2\n"
		         "[model]\nvocab = 64\nhidden = 32\nffn = 64\nlayers = 2\nseq = 8\nbatch = 2\n"
		         "attention = causal\nheads = 2\n"
		         "[run struck]\nrecipe = %s\ntp = 2\n"
		         "inject = nan step=2 rank=1 tensor=blocks.1.attn_norm.out element=5\n"
		         "[check caught]\nkind = finite\na = struck\nexpect = fail\nstep = 2\n"
		         "tensor = blocks.1.attn_norm.out\n", t[i].recipe);
		write_file(path, text);
		remove_db(db);
		snprintf(args, sizeof(args), "run '%s' --db '%s' --quiet", path, db);
		cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
		cr_assert(tp_event(db, 1, &ev), "%s: no event on rank 1", t[i].recipe);
		cr_assert_eq(ev.step, 2);
		cr_assert_str_eq(ev.tensor, t[i].struck);
		cr_assert_not_null(strstr(ev.message, "before the tp group's collective"), "%s",
		                   ev.message);
		cr_assert(tp_event(db, 0, &ev), "%s: no event on rank 0", t[i].recipe);
		cr_assert_eq(ev.step, 2);
		cr_assert_str_eq(ev.tensor, t[i].other);
	}
	/* a gathered copy: refused, naming the file and line of the run */
	write_file(path, "[case]\nsteps = 4\nworld_size = 2\n[model]\nvocab = 64\nhidden = 32\n"
	           "ffn = 64\nlayers = 2\nseq = 8\nbatch = 2\n[run struck]\nrecipe = bf16\n"
	           "tp = 2\ninject = nan step=2 rank=1 tensor=blocks.1.mlp.up.out\n");
	snprintf(args, sizeof(args), "run '%s' --db '%s' --quiet", path, db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "n.ini:11: run 'struck': inject: nan strikes a tensor"),
	                   "%s", out);
	/* traced by shard it is the rank's own: struck there, and named at that rank */
	write_file(path, "[case]\nsteps = 4\nworld_size = 2\n[model]\nvocab = 64\nhidden = 32\n"
	           "ffn = 64\nlayers = 2\nseq = 8\nbatch = 2\n[run struck]\nrecipe = bf16\n"
	           "tp = 2\ntrace = shards\ninject = nan step=2 rank=1 tensor=blocks.1.mlp.up.out\n"
	           "[check caught]\nkind = finite\na = struck\nexpect = fail\nstep = 2\n"
	           "rank = 1\ntensor = blocks.1.mlp.up.out\n");
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	remove_db(db);
	unlink(path);
	rmdir(dir);
}
