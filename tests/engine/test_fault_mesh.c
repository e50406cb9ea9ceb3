/*
 * test_fault_mesh.c: the faults of sharded layouts (FSDP, tensor and sequence parallel)
 * planted on layouts, ranks, steps and models other than the shipped cases, each found by
 * the suite's own checks where it strikes: the collectives' faults (rs_drop_tail,
 * ag_stale) in the fsdp group's and the tp group's collectives, the scale-group faults
 * (amax_local, amax_group), and a NaN named before a tp collective spreads it. LKS_BIN is
 * the built program (tests/engine/CMakeLists.txt).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "fault_fixture.h"
#include "fault_run_fixture.h"
#include "run_bin.h"
#include "harness/engine/model.h"


/* A scratch folder for one test's case file (f.ini) and database (f.db). */
struct scratch {
	char dir[64], path[600], db[600];
};

static void scratch_open(struct scratch *s)
{
	snprintf(s->dir, sizeof(s->dir), "/tmp/lks_fault_mesh_XXXXXX");
	cr_assert_not_null(mkdtemp(s->dir));
	snprintf(s->path, sizeof(s->path), "%s/f.ini", s->dir);
	snprintf(s->db, sizeof(s->db), "%s/f.db", s->dir);
}

/* The case text run into a fresh database: the program's exit code, its output in out. */
static int scratch_run(struct scratch *s, const char *text, char *out, size_t size)
{
	char args[1400];

	write_file(s->path, text);
	remove_db(s->db);
	snprintf(args, sizeof(args), "run '%s' --db '%s' --quiet", s->path, s->db);
	return lks_run_bin(NULL, args, out, size);
}

static void scratch_close(struct scratch *s)
{
	remove_db(s->db);
	unlink(s->path);
	rmdir(s->dir);
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
   cases (cases/faults/rs_drop_tail.ini, ag_stale.ini), FSDP and HSDP (fsdp < world: the
   struck rank's fsdp group's collectives): each found by a bitwise check against the clean
   run at its step, in the first tensor of the elements it corrupts, computed here from the
   model's flat vector and the shards' size (runner_fsdp.c: nparams / fsdp rounded up to
   16, the last shard padded; rank r holds shard r mod fsdp). The rank named: rank 0 for a reduce-scatter (the dp
   all-reduce spreads the lost tail to every replica), the struck fsdp group's first rank
   for an all-gather (only its ranks receive the stale shard). */
Test(fault, fsdp_collective_faults_found_where_they_strike, .timeout = 300)
{
	static const struct {
		const char *kind;
		int world, rank, step;
		long long count;        /* rs_drop_tail: the last count elements of the shard */
		int attention, fsdp;
	} t[] = {
		{ "rs_drop_tail", 2, 0, 1, 3, 0, 2 },
		{ "rs_drop_tail", 3, 1, 2, 40, 1, 3 },
		{ "rs_drop_tail", 4, 3, 1, 200, 1, 4 },
		{ "rs_drop_tail", 4, 3, 2, 40, 1, 2 },
		{ "rs_drop_tail", 6, 4, 1, 1, 0, 3 },
		{ "ag_stale", 2, 1, 1, 0, 0, 2 },
		{ "ag_stale", 3, 0, 2, 0, 1, 3 },
		{ "ag_stale", 4, 2, 3, 0, 0, 4 },
		{ "ag_stale", 4, 3, 1, 0, 1, 2 },
		{ "ag_stale", 6, 2, 2, 0, 0, 3 },
	};
	struct scratch sc;
	char text[2048], inject[128], out[16384];

	scratch_open(&sc);
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		lks_model_cfg cfg = { 64, 16, 32, 2, 8, 1, t[i].attention, t[i].attention ? 2 : 0,
		                      t[i].attention ? 8 : 0 };
		size_t S, end, a, s = (size_t)(t[i].rank % t[i].fsdp);
		int named = t[i].count ? 0 : t[i].rank / t[i].fsdp * t[i].fsdp;
		const char *want;
		struct verdicts v;
		lks_model m;

		cr_assert_eq(lks_model_init(&m, &cfg), 0);
		S = ((m.nparams + (size_t)t[i].fsdp - 1) / (size_t)t[i].fsdp + 15) & ~(size_t)15;
		end = (s + 1) * S < m.nparams ? (s + 1) * S : m.nparams;
		/* the shard's last count elements, its padding past nparams among them */
		a = t[i].count ? (s + 1) * S - (size_t)t[i].count : s * S;
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
		         "step = %d\nrank = %d\ntensor = %s\n", t[i].world,
		         t[i].attention ? "attention = causal\nheads = 2\n" : "", t[i].fsdp,
		         t[i].fsdp, inject, t[i].step, named, want);
		cr_assert_eq(scratch_run(&sc, text, out, sizeof(out)), 0, "%s\n%s", text, out);
		read_verdicts(sc.db, &v);
		cr_assert_eq(v.expected_fail, 1, "%s: %s", inject, out);
		lks_model_release(&m);
	}
	scratch_close(&sc);
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
   divergence is that operand). An operand whose scale group is none is refused when read. */
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
	struct scratch sc;
	char text[2048], out[16384];

	scratch_open(&sc);
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
		cr_assert_eq(scratch_run(&sc, text, out, sizeof(out)), 1, "%s\n%s", text, out);
		read_verdicts(sc.db, &v);
		cr_assert_eq(v.n, 2, "%s", out);
		cr_assert_str_eq(v.tensor[0], t[i].operand, "%s\n%s", text, out);
		cr_assert_str_eq(v.tensor[1], t[i].operand, "%s\n%s", text, out);
		cr_assert_geq(v.step[0], t[i].step, "%s", out);
		cr_assert_eq(v.step[1], v.step[0], "%s", out);
		cr_assert_eq(v.rank[0], t[i].rank / t[i].tp * t[i].tp, "the group's first rank: %s", out);
		cr_assert_eq(v.rank[1], t[i].tp >= 3 ? t[i].rank : -1, "%s", out);
	}
	/* fp8_rowwise scales W per row across the column split of up: no group, nothing to
	   take locally; the case is refused when read, saying so */
	snprintf(text, sizeof(text), "[case]\nsteps = 2\nworld_size = 2\n"
	         "[model]\nvocab = 64\nhidden = 16\nffn = 32\nlayers = 1\nseq = 8\nbatch = 1\n"
	         "[run struck]\nrecipe = fp8_rowwise\ntp = 2\n"
	         "inject = amax_local tensor=blocks.0.mlp.up.fwd.w\n");
	cr_assert_eq(scratch_run(&sc, text, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "f.ini:11: run 'struck': inject: amax_local never acts on "
	                               "'blocks.0.mlp.up.fwd.w'"), "%s", out);
	scratch_close(&sc);
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
   every rank's scales; under sequence parallel the rows it gathers), at its step; the other
   rank, which the NaN reached through that collective, has no event (its shares after it
   are not where the NaN began: named, they came first in rank order). A NaN aimed at a
   tensor traced as a gathered copy is refused when the case is read; with trace = shards it
   strikes the rank's own shard and is named at that rank. */
Test(fault, a_nan_in_a_tp_group_is_named_before_its_collective, .timeout = 120)
{
	static const struct { const char *recipe, *struck; } t[] = {
		{ "bf16", "blocks.1.attn.proj.out" },
		{ "fp8_rowwise", "blocks.1.attn.proj.fwd.x" },
	};
	struct scratch sc;
	char text[1024], out[16384];
	struct event ev;

	scratch_open(&sc);
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		snprintf(text, sizeof(text), "[case]\nsteps = 4\nworld_size = 2\n"
		         "[model]\nvocab = 64\nhidden = 32\nffn = 64\nlayers = 2\nseq = 8\nbatch = 2\n"
		         "attention = causal\nheads = 2\n"
		         "[run struck]\nrecipe = %s\ntp = 2\n"
		         "inject = nan step=2 rank=1 tensor=blocks.1.attn_norm.out element=5\n"
		         "[check caught]\nkind = finite\na = struck\nexpect = fail\nstep = 2\n"
		         "tensor = blocks.1.attn_norm.out\n", t[i].recipe);
		cr_assert_eq(scratch_run(&sc, text, out, sizeof(out)), 0, "%s", out);
		cr_assert(tp_event(sc.db, 1, &ev), "%s: no event on rank 1", t[i].recipe);
		cr_assert_eq(ev.step, 2);
		cr_assert_str_eq(ev.tensor, t[i].struck);
		cr_assert_not_null(strstr(ev.message, "before the tp group's collective"), "%s",
		                   ev.message);
		cr_assert(!tp_event(sc.db, 0, &ev), "%s: rank 0, which the NaN reached through the "
		          "collective, blamed at step %d, %s", t[i].recipe, ev.step, ev.tensor);
	}
	/* a gathered copy: refused, naming the file and line of the run */
	cr_assert_eq(scratch_run(&sc, "[case]\nsteps = 4\nworld_size = 2\n[model]\nvocab = 64\n"
	                         "hidden = 32\nffn = 64\nlayers = 2\nseq = 8\nbatch = 2\n"
	                         "[run struck]\nrecipe = bf16\ntp = 2\n"
	                         "inject = nan step=2 rank=1 tensor=blocks.1.mlp.up.out\n", out,
	                         sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "f.ini:11: run 'struck': inject: nan strikes a tensor"),
	                   "%s", out);
	/* under sequence parallel a NaN in the rank's rows is named at the all-gather that would
	   spread it, the next norm's output; the other rank, which gathered it, not at all */
	cr_assert_eq(scratch_run(&sc, "[case]\nsteps = 4\nworld_size = 2\n[model]\nvocab = 64\n"
	                         "hidden = 32\nffn = 64\nlayers = 2\nseq = 8\nbatch = 2\n"
	                         "attention = causal\nheads = 2\n[run struck]\nrecipe = bf16\n"
	                         "tp = 2\nsequence_parallel = on\ntrace = shards\n"
	                         "inject = nan step=2 rank=1 tensor=blocks.1.attn.out element=5\n",
	                         out, sizeof(out)), 0, "%s", out);
	cr_assert(tp_event(sc.db, 1, &ev), "sequence parallel: no event on rank 1");
	cr_assert_eq(ev.step, 2);
	cr_assert_str_eq(ev.tensor, "blocks.1.norm.out");
	cr_assert_not_null(strstr(ev.message, "a shard to gather"), "%s", ev.message);
	cr_assert(!tp_event(sc.db, 0, &ev), "sequence parallel: rank 0 blamed at step %d, %s",
	          ev.step, ev.tensor);
	/* traced by shard it is the rank's own: struck there, and named at that rank */
	cr_assert_eq(scratch_run(&sc, "[case]\nsteps = 4\nworld_size = 2\n[model]\nvocab = 64\n"
	                         "hidden = 32\nffn = 64\nlayers = 2\nseq = 8\nbatch = 2\n"
	                         "[run struck]\nrecipe = bf16\ntp = 2\ntrace = shards\n"
	                         "inject = nan step=2 rank=1 tensor=blocks.1.mlp.up.out\n"
	                         "[check caught]\nkind = finite\na = struck\nexpect = fail\n"
	                         "step = 2\nrank = 1\ntensor = blocks.1.mlp.up.out\n", out,
	                         sizeof(out)), 0, "%s", out);
	scratch_close(&sc);
}

/* The collectives' faults in a tp group's collectives, on layouts other than the shipped
   cases: sequence parallel's reduce-scatter after each row-parallel layer (rs_drop_tail),
   and the group's all-gathers of the run's data (ag_stale; a trace's copies gathered whole
   are passed over, so that the run computes with the stale shard, as its loss shows):
   under sequence parallel the first of a step gathers the first norm's output rows,
   without it the first split weight gradient of the backward (the last layer's down
   projection's). Each found by a bitwise check against the clean run at
   its step, in the tensor that collective makes, at the tp group's first rank where that
   tensor is traced whole (every rank of the group gathers the same), at the struck rank
   where each rank traces its own shard (trace = shards: only its rows lost their tail). */
Test(fault, tp_collective_faults_found_where_they_strike, .timeout = 300)
{
	static const struct {
		const char *kind;
		int world, tp, sp, shards, rank, step;
		long long count;
		int attention;
	} t[] = {
		{ "rs_drop_tail", 2, 2, 1, 0, 1, 1, 5, 1 },
		{ "rs_drop_tail", 4, 2, 1, 1, 3, 2, 1, 0 },
		{ "rs_drop_tail", 4, 4, 1, 0, 2, 3, 17, 1 },
		{ "rs_drop_tail", 6, 2, 1, 1, 4, 1, 30, 1 },
		{ "ag_stale", 4, 2, 1, 0, 3, 1, 0, 1 },
		{ "ag_stale", 4, 4, 0, 0, 1, 2, 0, 0 },
		{ "ag_stale", 6, 3, 0, 0, 4, 1, 0, 1 },
		{ "ag_stale", 4, 2, 1, 0, 3, 1, 0, 0 },
	};
	struct scratch sc;
	char text[2048], inject[128], want[64], out[16384];

	scratch_open(&sc);
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		int named = t[i].shards ? t[i].rank : t[i].rank / t[i].tp * t[i].tp;
		struct verdicts v;

		if (t[i].count)
			snprintf(want, sizeof(want), "blocks.0.%s.out",
			         t[i].attention ? "attn.proj" : "mlp.down");
		else
			snprintf(want, sizeof(want), "%s", !t[i].sp ? "blocks.1.mlp.down.weight.grad"
			         : t[i].attention ? "blocks.0.attn_norm.out" : "blocks.0.norm.out");
		snprintf(inject, sizeof(inject), "%s step=%d rank=%d", t[i].kind, t[i].step,
		         t[i].rank);
		if (t[i].count)
			snprintf(inject + strlen(inject), sizeof(inject) - strlen(inject),
			         " count=%lld", t[i].count);
		/* heads and ffn divide by 2, 3 and 4, seq by 2 and 4 */
		snprintf(text, sizeof(text), "[case]\nsteps = 5\nworld_size = %d\n"
		         "[model]\nvocab = 64\nhidden = 48\nffn = 48\nlayers = 2\nseq = 8\nbatch = 1\n"
		         "%s[run clean]\nrecipe = bf16\ntp = %d\nsequence_parallel = %s\ntrace = %s\n"
		         "[run struck]\nrecipe = bf16\ntp = %d\nsequence_parallel = %s\ntrace = %s\n"
		         "inject = %s\n"
		         "[check caught]\nkind = bitwise\na = struck\nb = clean\nexpect = fail\n"
		         "step = %d\nrank = %d\ntensor = %s\n", t[i].world,
		         t[i].attention ? "attention = causal\nheads = 12\n" : "", t[i].tp,
		         t[i].sp ? "on" : "off", t[i].shards ? "shards" : "whole", t[i].tp,
		         t[i].sp ? "on" : "off", t[i].shards ? "shards" : "whole", inject, t[i].step,
		         named, want);
		cr_assert_eq(scratch_run(&sc, text, out, sizeof(out)), 0, "%s\n%s", text, out);
		read_verdicts(sc.db, &v);
		cr_assert_eq(v.expected_fail, 1, "%s: %s", inject, out);
	}
	scratch_close(&sc);
}

/* The casts' faults under tp act on the struck rank's casts as under DP, and are found at
   the same place: scale_round_up from its step on, at the step's first power-of-two cast
   (the first layer's x, whole on every rank of the group), on the struck rank;
   stale_bwd_scale at step 1 (the first step whose dy scales are given), at the last
   layer's first backward cast, on rank 0 (every rank's). */
Test(fault, cast_faults_under_tp_found_where_they_strike, .timeout = 300)
{
	static const struct {
		const char *inject, *recipe;
		int world, tp, sp, step, rank;
		const char *tensor;
	} t[] = {
		{ "scale_round_up step=2 rank=3", "fp8_rowwise", 4, 2, 0, 2, 3,
		  "blocks.0.attn.qkv.fwd.x" },
		{ "scale_round_up step=1 rank=4", "fp8_rowwise_gw_hp", 6, 3, 1, 1, 4,
		  "blocks.0.attn.qkv.fwd.x" },
		{ "stale_bwd_scale", "fp8_delayed", 2, 2, 0, 1, 0, "blocks.1.mlp.down.dgrad.dy" },
		{ "stale_bwd_scale", "fp8_delayed", 6, 3, 1, 1, 0, "blocks.1.mlp.down.dgrad.dy" },
	};
	struct scratch sc;
	char text[2048], out[16384];

	scratch_open(&sc);
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct verdicts v;

		snprintf(text, sizeof(text), "[case]\nsteps = 4\nworld_size = %d\n"
		         "[model]\nvocab = 64\nhidden = 48\nffn = 48\nlayers = 2\nseq = 12\nbatch = 1\n"
		         "attention = causal\nheads = 12\n"
		         "[run clean]\nrecipe = %s\ncheckpoint = blocks\ntp = %d\nsequence_parallel = %s\n"
		         "[run struck]\nrecipe = %s\ncheckpoint = blocks\ntp = %d\n"
		         "sequence_parallel = %s\ninject = %s\n"
		         "[check caught]\nkind = bitwise\na = struck\nb = clean\nexpect = fail\n"
		         "step = %d\nrank = %d\ntensor = %s\n", t[i].world, t[i].recipe, t[i].tp,
		         t[i].sp ? "on" : "off", t[i].recipe, t[i].tp, t[i].sp ? "on" : "off",
		         t[i].inject, t[i].step, t[i].rank, t[i].tensor);
		cr_assert_eq(scratch_run(&sc, text, out, sizeof(out)), 0, "%s\n%s", text, out);
		read_verdicts(sc.db, &v);
		cr_assert_eq(v.expected_fail, 1, "%s: %s", t[i].inject, out);
	}
	scratch_close(&sc);
}
