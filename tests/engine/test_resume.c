/*
 * test_resume.c: a run resumed from the state another kept after a step trains the steps
 * after it bit for bit as the other did (issue 34): for every recipe of the table, with
 * and without checkpointing, on layouts that shard the state (FSDP, tp with sequence
 * parallel, the FP8 all-gather); the resume check catches a resumed run that departs, at
 * its step and tensor; 'run --keep-state' and '--resume-from' give the same bits; and a
 * state that is missing, of another run's shape, of another training (recipe, optimizer,
 * data) or damaged, or a fault before the steps the run trains, is refused (exit 2). Run as a user would (LKS_BIN,
 * tests/engine/CMakeLists.txt).
 */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fault_fixture.h"
#include "fault_run_fixture.h"
#include "run_bin.h"
#include "harness/engine/recipe.h"
#include "harness/store/run.h"
#include "harness/verify/walk.h"

/* A case of 5 steps on ws ranks, an attention model. */
#define RESUME_HEAD \
	"[case]\nsteps = 5\nseed = 11\nworld_size = %d\n" \
	"[model]\nvocab = 64\nhidden = 32\nffn = 64\nlayers = 2\nseq = 8\nbatch = 2\n" \
	"attention = causal\nheads = 2\n"

struct tmp {
	char dir[64], path[600], db[600];
};

static void tmp_make(struct tmp *t)
{
	snprintf(t->dir, sizeof(t->dir), "/tmp/lks_resume_XXXXXX");
	cr_assert_not_null(mkdtemp(t->dir));
	snprintf(t->path, sizeof(t->path), "%s/r.ini", t->dir);
	snprintf(t->db, sizeof(t->db), "%s/r.db", t->dir);
}

static void tmp_drop(struct tmp *t)
{
	remove_db(t->db);
	unlink(t->path);
	rmdir(t->dir);
}

/* Runs the case text; returns the exit code, the verdicts into v. */
static int run_case(struct tmp *t, const char *text, struct verdicts *v, char *out, size_t n)
{
	char args[1400];
	int rc;

	write_file(t->path, text);
	snprintf(args, sizeof(args), "run '%s' --db '%s' --quiet", t->path, t->db);
	rc = lks_run_bin(NULL, args, out, n);
	if (access(t->db, F_OK) == 0)
		read_verdicts(t->db, v);
	return rc;
}

/* For every recipe: a run of the layout (keys), and runs resumed from it after step 1 and
   after step 3 (one with checkpointing flipped), each held to it by a resume check. */
static void every_recipe(int ws, const char *keys, int checkpoint)
{
	static char text[65536];
	static char out[65536];
	size_t len = 0;
	int checks = 0;
	struct verdicts v;
	struct tmp t;

	tmp_make(&t);
	case_add(text, sizeof(text), &len, RESUME_HEAD, ws);
	for (int r = 0; r < LKS_RECIPE_COUNT; r++) {
		const char *name = lks_recipe_name((lks_recipe)r);
		const char *ck = checkpoint ? "blocks" : "none", *other = checkpoint ? "none" : "blocks";

		case_add(text, sizeof(text), &len,
		         "[run %s]\nrecipe = %s\ncheckpoint = %s\n%s\n"
		         "[run %s_1]\nrecipe = %s\ncheckpoint = %s\n%s\nresume_from = %s@1\n"
		         "[run %s_3]\nrecipe = %s\ncheckpoint = %s\n%s\nresume_from = %s@3\n"
		         "[check resumed_%s_1]\nkind = resume\na = %s\nb = %s_1\n"
		         "[check resumed_%s_3]\nkind = resume\na = %s\nb = %s_3\n",
		         name, name, ck, keys, name, name, ck, keys, name, name, name, other, keys,
		         name, name, name, name, name, name, name);
		checks += 2;
	}
	cr_assert_eq(run_case(&t, text, &v, out, sizeof(out)), 0, "%s", out);
	cr_assert_eq(v.pass, checks, "%s", out);
	cr_assert_geq(checks, 2 * 5, "every recipe of the table");
	tmp_drop(&t);
}

Test(resume, every_recipe_without_checkpointing, .timeout = 300)
{
	every_recipe(2, "", 0);
}

Test(resume, every_recipe_with_checkpointing, .timeout = 300)
{
	every_recipe(2, "", 1);
}

/* the layouts that shard what a rank keeps: FSDP's moments, tp's shards of the weights */
Test(resume, every_recipe_under_fsdp, .timeout = 300)
{
	every_recipe(2, "fsdp = 2\nreshard_after_forward = on", 1);
}

Test(resume, every_recipe_under_tp_and_sequence_parallel, .timeout = 300)
{
	every_recipe(4, "tp = 2\nsequence_parallel = on", 0);
}

/* A state resumes into another layout bit for bit where the layouts are: a rank of an
   FSDP run keeps the moments of its own shard only, so its state is stored with the whole
   moments, which DP's ranks need (a DP run resumed from FSDP's state drifted apart, and
   ranks_agree blamed the one rank whose moments were right). FSDP x TP into TP too; HSDP
   is not DP's bits (its sums are grouped), but DP resumed from it keeps its ranks alike. */
Test(resume, a_state_resumes_across_sharded_and_whole_layouts, .timeout = 300)
{
	static char text[16384];
	static char out[65536];
	static const char *const recipes[] = { "bf16", "fp8_delayed" };
	size_t len = 0;
	struct verdicts v;
	struct tmp t;

	tmp_make(&t);
	case_add(text, sizeof(text), &len, RESUME_HEAD, 4);
	for (int i = 0; i < 2; i++)
		case_add(text, sizeof(text), &len,
		         "[run dp_%1$s]\nrecipe = %1$s\n"
		         "[run fs_%1$s]\nrecipe = %1$s\nfsdp = 4\n"
		         "[run hs_%1$s]\nrecipe = %1$s\nfsdp = 2\n"
		         "[run tpfs_%1$s]\nrecipe = %1$s\ntp = 2\nfsdp = 2\n"
		         "[run dp_from_fs_%1$s]\nrecipe = %1$s\nresume_from = fs_%1$s@1\n"
		         "[run dp_from_hs_%1$s]\nrecipe = %1$s\nresume_from = hs_%1$s@2\n"
		         "[run tp_from_tpfs_%1$s]\nrecipe = %1$s\ntp = 2\nresume_from = tpfs_%1$s@1\n"
		         "[check fs_is_dp_%1$s]\nkind = bitwise\na = fs_%1$s\nb = dp_%1$s\n"
		         "[check dp_from_fs_%1$s]\nkind = resume\na = fs_%1$s\nb = dp_from_fs_%1$s\n"
		         "[check agree_hs_%1$s]\nkind = ranks_agree\na = dp_from_hs_%1$s\n"
		         "[check tp_from_tpfs_%1$s]\nkind = resume\na = tpfs_%1$s\n"
		         "b = tp_from_tpfs_%1$s\n"
		         "[check agree_%1$s]\nkind = ranks_agree\na = dp_from_fs_%1$s\n", recipes[i]);
	cr_assert_eq(run_case(&t, text, &v, out, sizeof(out)), 0, "%s", out);
	cr_assert_eq(v.pass, 2 * 5, "%s", out);
	tmp_drop(&t);
}

/* A resumed run that departs (a planted bit flip) is caught by the resume check at the
   step and tensor where it was planted; the run it resumed from is not blamed. */
Test(resume, a_departing_resumed_run_is_caught_where_it_departs, .timeout = 120)
{
	static char text[8192];
	static char out[65536];
	size_t len = 0;
	struct verdicts v;
	struct tmp t;

	tmp_make(&t);
	case_add(text, sizeof(text), &len, RESUME_HEAD, 2);
	case_add(text, sizeof(text), &len,
	         "[run a]\nrecipe = fp8_delayed\n"
	         "[run b]\nrecipe = fp8_delayed\nresume_from = a@1\n"
	         "inject = bitflip step=3 rank=1 tensor=blocks.0.mlp.up.out element=5 bit=27\n"
	         "[check caught]\nkind = resume\na = a\nb = b\nexpect = fail\nstep = 3\nrank = 1\n"
	         "tensor = blocks.0.mlp.up.out\n");
	cr_assert_eq(run_case(&t, text, &v, out, sizeof(out)), 0, "%s", out);
	cr_assert_eq(v.expected_fail, 1, "%s", out);
	cr_assert_eq(v.step[0], 3);
	cr_assert_eq(v.rank[0], 1);
	cr_assert_str_eq(v.tensor[0], "blocks.0.mlp.up.out");
	tmp_drop(&t);
}

/* A case that holds a run to a resume it does not make, or resumes from a later run, is
   refused when read: exit 2, nothing written. */
Test(resume, a_resume_the_case_does_not_make_is_refused, .timeout = 60)
{
	static const char *const bad[][2] = {
		{ "[run a]\nrecipe = bf16\n[run b]\nrecipe = bf16\n"
		  "[check r]\nkind = resume\na = a\nb = b\n", "needs run 'b' to resume from run 'a'" },
		{ "[run b]\nrecipe = bf16\nresume_from = a@1\n[run a]\nrecipe = bf16\n",
		  "no earlier run of the case" },
		{ "[run a]\nrecipe = bf16\n[run b]\nrecipe = bf16\nresume_from = a@4\n",
		  "leaves no step" },
		{ "[run a]\nrecipe = bf16\n[run b]\nrecipe = bf16\nresume_from = a\n",
		  "want RUN@STEP" },
		{ "[run a]\nrecipe = bf16\n[run b]\nrecipe = bf16\nworld_size = 1\nresume_from = a@1\n",
		  "a state per rank" },
		/* another training: its steps would not be the other's */
		{ "[run a]\nrecipe = fp8_rowwise\n[run b]\nrecipe = fp8_delayed\nresume_from = a@1\n",
		  ":16: run 'b': resume_from a@1: run 'a' trains fp8_rowwise, this run fp8_delayed "
		  "(amax_history = 16, amax_algo = max, margin = 0): a run resumes from one of its "
		  "recipe and settings" },
		{ "[run a]\nrecipe = fp8_delayed\n[run b]\nrecipe = fp8_delayed\namax_history = 8\n"
		  "resume_from = a@1\n", "run 'a' trains fp8_delayed (amax_history = 16, amax_algo = "
		  "max, margin = 0), this run fp8_delayed (amax_history = 8," },
	};
	static char text[8192];
	char out[4096];
	struct verdicts v;
	struct tmp t;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t len = 0;

		tmp_make(&t);
		case_add(text, sizeof(text), &len, RESUME_HEAD "%s", 2, bad[i][0]);
		cr_assert_eq(run_case(&t, text, &v, out, sizeof(out)), 2, "%s", out);
		cr_assert_not_null(strstr(out, bad[i][1]), "want '%s' in: %s", bad[i][1], out);
		cr_assert_neq(access(t.db, F_OK), 0, "nothing written");
		tmp_drop(&t);
	}
}

/* The resumed run (stored run 2) against run 1 from step from on, as the resume check
   walks them: 0 when they agree bit for bit. */
static int walk_from(const char *db, int from)
{
	lks_store *s;
	lks_stored_run a, b;
	lks_check_result res;
	lks_walk_opts o = { .exact = 1, .from_step = from,
	                    .step_fields = LKS_WALK_LOSS | LKS_WALK_GRAD_NORM | LKS_WALK_LR };

	cr_assert_eq(lks_store_open(db, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_stored_run_load(s, 1, LKS_LOAD_TRACE, &a), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_stored_run_load(s, 2, LKS_LOAD_TRACE, &b), 0, "%s", lks_errmsg());
	cr_assert_eq(b.steprows[0].step, from, "the resumed run's first step");
	lks_check_result_init(&res);
	cr_assert_eq(lks_walk(&o, &a, &b, &res, NULL), 0, "%s", lks_errmsg());
	lks_stored_run_release(&a);
	lks_stored_run_release(&b);
	lks_store_close(s);
	return res.failed;
}

/* run --keep-state N keeps each rank's state after every N-th step; --resume-from ID@STEP
   trains the one run chosen from it, bit for bit; what cannot be resumed is refused with
   exit 2 and stores nothing. */
Test(resume, the_command_line_keeps_and_resumes, .timeout = 120)
{
	static char text[4096];
	char args[1600], out[8192];
	size_t len = 0;
	struct tmp t;
	sqlite3 *db;

	tmp_make(&t);
	case_add(text, sizeof(text), &len, RESUME_HEAD, 2);
	case_add(text, sizeof(text), &len, "[run a]\nrecipe = fp8_rowwise\ncheckpoint = blocks\n"
	         "[run b]\nrecipe = bf16\n");
	write_file(t.path, text);
	snprintf(args, sizeof(args), "run '%s' --db '%s' --run a --keep-state 2 --quiet", t.path,
	         t.db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	snprintf(args, sizeof(args), "run '%s' --db '%s' --run a --resume-from 1@3 --quiet", t.path,
	         t.db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	cr_assert_eq(walk_from(t.db, 4), 0, "the resumed steps equal the first run's");

	/* refused: a step it kept no state after, a choice of two runs, another run's shape,
	   a damaged state */
	snprintf(args, sizeof(args), "run '%s' --db '%s' --run a --resume-from 1@2", t.path, t.db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "kept no state after step 2"), "%s", out);
	snprintf(args, sizeof(args), "run '%s' --db '%s' --resume-from 1@1", t.path, t.db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "2 are selected"), "%s", out);
	/* a fault at a step before those it trains would never act */
	snprintf(args, sizeof(args), "run '%s' --db '%s' --run a --resume-from 1@3 --set "
	         "'run.a.inject=nan step=3 rank=1 tensor=head.logits'", t.path, t.db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "run 'a': inject: nan at step 3 never acts: the run "
	                               "resumes after step 3"), "%s", out);
	snprintf(args, sizeof(args), "run '%s' --db '%s' --run b --resume-from 1@1 "
	         "--set model.hidden=48", t.path, t.db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "another model"), "%s", out);
	/* a state of the same bytes but another training: another recipe, learning rate, data */
	snprintf(args, sizeof(args), "run '%s' --db '%s' --run b --resume-from 1@1", t.path, t.db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "the state is of another training than this run's"), "%s",
	                   out);
	snprintf(args, sizeof(args), "run '%s' --db '%s' --run a --resume-from 1@1 "
	         "--set optim.lr=0.01", t.path, t.db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "another training"), "%s", out);
	snprintf(args, sizeof(args), "run '%s' --db '%s' --run a --resume-from 1@1 "
	         "--set case.seed=12", t.path, t.db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "another training"), "%s", out);
	/* the same training with checkpointing off: it resumes */
	snprintf(args, sizeof(args), "run '%s' --db '%s' --run a --resume-from 1@1 "
	         "--set run.a.checkpoint=none --quiet", t.path, t.db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	/* a run the database does not hold is said to be none, not to have kept no state */
	snprintf(args, sizeof(args), "run '%s' --db '%s' --run a --resume-from 99@1", t.path, t.db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "': no run 99"), "%s", out);
	cr_assert_null(strstr(out, "kept no state"), "%s", out);
	cr_assert_eq(sqlite3_open(t.db, &db), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(db, "UPDATE states SET data = CAST(substr(data, 1, 100) || "
	                          "x'a5a5a5a5' || substr(data, 105) AS BLOB) WHERE step = 1", NULL,
	                          NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
	sqlite3_close(db);
	snprintf(args, sizeof(args), "run '%s' --db '%s' --run a --resume-from 1@1", t.path, t.db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "damaged"), "%s", out);
	/* prune takes the kept states with the stat rows: the message says so */
	snprintf(args, sizeof(args), "prune --db '%s' --keep 1", t.db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	snprintf(args, sizeof(args), "run '%s' --db '%s' --run a --resume-from 1@3", t.path, t.db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "its suite was pruned"), "%s", out);
	tmp_drop(&t);
}
