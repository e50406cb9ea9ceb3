/*
 * test_import_tensor_formats.c: the tensor trace formats of frameworks' own dumps
 * (import_titan_numerics.c, import_megatron_tensors.c) on the fixtures of
 * data/titan_numerics and data/megatron_tensors (each written by the gen.py beside it as
 * the framework writes them): two runs of 2 ranks x 3 steps, b differing from a in one
 * tensor at one step and rank, with one op inserted before it. Each imported, read back
 * (names, phases, values bit for bit as the text says, their printed decimals), and the
 * bitwise check locating the difference at its step, rank and tensor; bad input refused at
 * its file:line, nothing stored.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "store_fixture.h"
#include "harness/import/import.h"
#include "harness/store/run.h"
#include "harness/store/tensor_trace.h"
#include "harness/verify/check.h"
#include "kernels/err.h"

static lks_store *open_store(void)
{
	char db[512];
	lks_store *s;

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "t.db");
	cr_assert_eq(lks_store_open(db, &s), 0, "%s", lks_errmsg());
	return s;
}

/* The files (or folders) rel[0..n), under the data folder, imported as run name. */
static int64_t import_paths(lks_store *s, const char *fmt, const char *name,
                            const char *const *rel, int n, lks_import_result *res)
{
	char buf[8][512];
	const char *paths[8];
	lks_import_opts o = { .fmt = lks_import_format_find(fmt), .case_name = "c",
	                      .run_name = name };

	cr_assert_not_null(o.fmt);
	cr_assert(n <= 8);
	for (int i = 0; i < n; i++) {
		snprintf(buf[i], sizeof(buf[i]), "%s/%s", LKS_IMPORT_DIR, rel[i]);
		paths[i] = buf[i];
	}
	cr_assert_eq(lks_import_tensor_files(s, &o, paths, n, res), 0, "%s", lks_errmsg());
	return res->run_id;
}

static void bitwise(lks_store *s, int64_t a, int64_t b, lks_check_result *r)
{
	lks_check_cfg k = { .name = "k", .kind = LKS_CHECK_BITWISE, .a = "a", .b = "b",
	                    .exp_step = -1, .exp_rank = -1 };

	cr_assert_eq(lks_check_eval(s, &k, NULL, a, b, r), 0, "%s", lks_errmsg());
}

/* The value of statistic stat of entry e, its printed decimals too; the entry must have it. */
static const lks_tval *stat_of(const lks_tensor_trace *tt, const lks_tentry *e,
                               const char *stat)
{
	int k = lks_tensor_trace_stat(tt, stat);

	cr_assert(k >= 0, "no statistic %s", stat);
	for (int i = 0; i < e->n; i++)
		if (tt->val[e->first + i].stat == k)
			return &tt->val[e->first + i];
	cr_assert_fail("tensor %d has no %s", e->tensor, stat);
	return NULL;
}

/* Text written to a file of tmpdir called name, then imported as fmt: bad input, the
   message holding why and name:line (line < 0: none), and nothing stored. */
static void expect_bad(const char *fmt, const char *name, const char *text, const char *why,
                       long line)
{
	lks_store *s = open_store();
	char path[512], at[128];
	const char *paths[1] = { path };
	lks_import_opts o = { .fmt = lks_import_format_find(fmt), .case_name = "c",
	                      .run_name = "bad" };
	lks_import_result res;
	FILE *f;

	path_in_tmp(path, sizeof(path), name);
	cr_assert_not_null(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
	cr_assert_eq(lks_import_files(s, &o, paths, 1, &res), LKS_E_BAD_INPUT, "%s", text);
	snprintf(at, sizeof(at), "%s':%ld:", name, line);
	cr_assert(strstr(lks_errmsg(), why) && (line < 0 || strstr(lks_errmsg(), at)), "%s",
	          lks_errmsg());
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM runs"), 0);
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM tensor_blocks"), 0);
	lks_store_close(s);
	rm_tmp();
}

/* ---- titan-numerics ---- */

static const char *const titan_a[] = { "titan_numerics/a/step_1", "titan_numerics/a/step_2",
                                       "titan_numerics/a/step_3" };
static const char *const titan_b[] = { "titan_numerics/b/step_1", "titan_numerics/b/step_2",
                                       "titan_numerics/b/step_3" };

Test(titan_numerics, a_dump_reads_back_as_written)
{
	lks_store *s = open_store();
	lks_import_result res;
	int64_t id = import_paths(s, "titan-numerics", "a", titan_a, 3, &res);
	lks_stored_run r;
	const lks_tentry *e;
	const lks_tval *v;

	cr_assert_eq(res.world_size, 2);
	cr_assert_eq(res.steps, 3, "the step the folder names");
	cr_assert_eq(res.counts.records, 2 * 3 * 7);
	cr_assert_eq(lks_stored_run_load(s, id, LKS_LOAD_TRACE, &r), 0, "%s", lks_errmsg());
	cr_assert_eq(r.nt, 7);
	cr_assert_str_eq(r.names[0], "tok_embeddings/op_0_embedding");
	cr_assert_str_eq(r.names[3], "layers.0.feed_forward.w1/op_0_mm");
	cr_assert_eq(r.phases[3], LKS_PHASE_FORWARD);
	cr_assert_str_eq(r.names[5], "layers.0.feed_forward.w1/op_1_mm");
	cr_assert_eq(r.phases[5], LKS_PHASE_BACKWARD, "its Phase: backward");
	cr_assert_str_eq(r.names[6], "<none>/op_0__fused_adam_");
	cr_assert_eq(lks_tensor_trace_step(r.tt, 2), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_tensor_trace_rank(r.tt, 1, &e), 7);
	/* step_2/rank_1_activations.log, [layers.0.feed_forward.w1/op_0_mm] */
	v = stat_of(r.tt, &e[3], "l2");
	cr_assert_eq(v->value, 1.259375e+01, "bit for bit");
	cr_assert_eq(v->printed, 1 + 5, "1.259375e+01: 5 decimals");
	v = stat_of(r.tt, &e[3], "min");
	cr_assert_eq(v->value, -3.541667e+00);
	cr_assert_eq(v->printed, 1 + 6);
	cr_assert_eq(stat_of(r.tt, &e[3], "max")->value, 3.642857e+00);
	v = stat_of(r.tt, &e[3], "mean");
	cr_assert_eq(v->value, 3.000000e-05);
	cr_assert_eq(v->printed, 1 + 11, "3.000000e-05: 11 decimals");
	cr_assert_eq(stat_of(r.tt, &e[3], "numel")->value, 2 * 16 * 256, "the Shape's");
	cr_assert_eq(stat_of(r.tt, &e[3], "output_hash")->value, 4.407813e+01);
	cr_assert_eq(stat_of(r.tt, &e[3], "input_hash")->value, 1.050000e+02);
	cr_assert(e[3].has_hash, "the hash lines' text as its content hash");
	/* the in-place op: hashes, no stats */
	cr_assert_eq(e[6].n, 1);
	cr_assert_eq(stat_of(r.tt, &e[6], "input_hash")->value, 1.080000e+02);
	cr_assert_eq(lks_tensor_trace_step(r.tt, 0), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_tensor_trace_rank(r.tt, 0, &e), 0, "no step 0");
	lks_stored_run_release(&r);
	lks_store_close(s);
	rm_tmp();
}

Test(titan_numerics, the_changed_op_is_located_despite_the_inserted_one)
{
	lks_store *s = open_store();
	lks_import_result res;
	int64_t a = import_paths(s, "titan-numerics", "a", titan_a, 3, &res);
	int64_t b = import_paths(s, "titan-numerics", "b", titan_b, 3, &res);
	int64_t same = import_paths(s, "titan-numerics", "same", titan_a, 3, &res);
	lks_check_result r;

	bitwise(s, a, same, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	bitwise(s, a, b, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL, "%s", r.message);
	cr_assert_eq(r.step, 2);
	cr_assert_eq(r.rank, 1);
	cr_assert_str_eq(r.tensor, "layers.0.feed_forward.w1/op_0_mm", "%s", r.message);
	cr_assert_str_eq(r.field, "l2");
	cr_assert_eq(r.a, 1.259375e+01);
	cr_assert_eq(r.b, 1.260634e+01);
	cr_assert(strstr(r.note, "inserted in b")
	          && strstr(r.note, "layers.0.feed_forward.gate_norm/op_0_rms_norm"), "%s",
	          r.note);
	lks_store_close(s);
	rm_tmp();
}

Test(titan_numerics, bad_input_names_the_line_and_stores_nothing)
{
	const char *head = "Total captured activations: 1\n"
	                   "Excluded ops dispatched: view\n"
	                   "================================================================\n\n";
	char text[1024];

	snprintf(text, sizeof(text), "%s[x/op_0_mm]\n  L2 norm: 1.5e+00\n  Min: big\n", head);
	expect_bad("titan-numerics", "rank_0_activations.log", text, "bad value of min", 7);
	snprintf(text, sizeof(text), "%s[x/op_0_mm]\n  L2 norm: 1.5e+00\n  Phase: sideways\n",
	         head);
	expect_bad("titan-numerics", "rank_0_activations.log", text, "Phase: forward or", 7);
	snprintf(text, sizeof(text), "%s[x/op_0_mm\n  L2 norm: 1.5e+00\n", head);
	expect_bad("titan-numerics", "rank_0_activations.log", text, "in brackets", 5);
	snprintf(text, sizeof(text), "%s[x/op_0_mm]\n  L2 norm: 1.5e+00\n  L1 norm: 1\n"
	         "  L2 norm: 2.5e+00\n", head);
	expect_bad("titan-numerics", "rank_0_activations.log", text, "statistic 'l2' twice", 8);
	snprintf(text, sizeof(text), "%s[x/op_0_mm]\n  Shape: torch.Size([2, x]), Dtype: f\n",
	         head);
	expect_bad("titan-numerics", "rank_0_activations.log", text, "want Shape", 6);
	snprintf(text, sizeof(text), "Total captured activations: 3\n\n[x/op_0_mm]\n"
	         "  L2 norm: 1.5e+00\n\n[x/op_1_mm]\n  L2 norm: 2.5e+00\n");
	expect_bad("titan-numerics", "rank_0_activations.log", text, "says 3 activations", 1);
	snprintf(text, sizeof(text), "%s[x/op_0_mm]\n  L2 norm: 1.5e+00\n%s", head, head);
	expect_bad("titan-numerics", "rank_0_activations.log", text, "one dump a file", 7);
	snprintf(text, sizeof(text), "%s[x/op_0_mm]\n  L2 norm: 1.5e+00\n", head);
	expect_bad("titan-numerics", "rank_1_activations.log", text, "rank 0 holds no tensor",
	           -1);
}

/* ---- megatron-tensors ---- */

#define MEGA_L3 "decoder.layers.3.mlp.experts.linear_fc1.tokens_per_expert"

Test(megatron_tensors, a_log_reads_back_as_written)
{
	static const char *const a[] = { "megatron_tensors/a" };
	lks_store *s = open_store();
	lks_import_result res;
	int64_t id = import_paths(s, "megatron-tensors", "a", a, 1, &res);
	lks_stored_run r;
	const lks_tentry *e;
	const lks_tval *v;

	cr_assert_eq(res.world_size, 2, "rank0.jsonl, rank1.jsonl");
	cr_assert_eq(res.steps, 3, "the last iter");
	cr_assert_eq(res.counts.records, 2 * 3 * 3 * 2, "ranks x iters x layers x calls");
	cr_assert_eq(lks_stored_run_load(s, id, LKS_LOAD_TRACE, &r), 0, "%s", lks_errmsg());
	cr_assert_eq(r.nt, 3);
	cr_assert_str_eq(r.names[0], "decoder.layers.1.mlp.experts.linear_fc1.tokens_per_expert");
	cr_assert_str_eq(r.names[1], MEGA_L3);
	cr_assert_str_eq(r.names[2], "mtp.layers.0.mtp_model_layer.layers.0.mlp.experts."
	                             "linear_fc1.tokens_per_expert");
	cr_assert_eq(r.phases[1], LKS_PHASE_FORWARD);
	cr_assert_eq(lks_tensor_trace_step(r.tt, 2), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_tensor_trace_rank(r.tt, 1, &e), 6);
	/* rank1.jsonl: {"iter": 2, "block": "decoder", "layer": 3, "tpe": [[142, 153, 164,
	   175], [145, 156, 167, 178]]}: its second call */
	cr_assert_eq(e[3].tensor, 1);
	cr_assert_eq(e[3].micro, 1);
	cr_assert_eq(e[3].n, 4);
	cr_assert(!e[3].has_hash);
	cr_assert_eq(stat_of(r.tt, &e[3], "tokens_e0")->value, 145);
	v = stat_of(r.tt, &e[3], "tokens_e3");
	cr_assert_eq(v->value, 178);
	cr_assert_eq(v->printed, 0, "a count: a whole number, stored exact, no decimals claimed");
	cr_assert_eq(e[2].micro, 0);
	cr_assert_eq(stat_of(r.tt, &e[2], "tokens_e3")->value, 175);
	lks_stored_run_release(&r);
	lks_store_close(s);
	rm_tmp();
}

Test(megatron_tensors, the_changed_count_is_located_despite_the_inserted_layer)
{
	static const char *const a[] = { "megatron_tensors/a" }, *const b[] = {
		"megatron_tensors/b/rank0.jsonl", "megatron_tensors/b/rank1.jsonl" };
	lks_store *s = open_store();
	lks_import_result res;
	int64_t ia = import_paths(s, "megatron-tensors", "a", a, 1, &res);
	int64_t ib = import_paths(s, "megatron-tensors", "b", b, 2, &res);
	int64_t same = import_paths(s, "megatron-tensors", "same", a, 1, &res);
	lks_check_result r;

	bitwise(s, ia, same, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	bitwise(s, ia, ib, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL, "%s", r.message);
	cr_assert_eq(r.step, 2);
	cr_assert_eq(r.rank, 1);
	cr_assert_str_eq(r.tensor, MEGA_L3, "%s", r.message);
	cr_assert_str_eq(r.field, "value", "a statistic of the format's own");
	cr_assert_str_eq(r.metric, "tokens_e3");
	cr_assert_eq(r.a, 178);
	cr_assert_eq(r.b, 179);
	cr_assert(strstr(r.note, "inserted in b")
	          && strstr(r.note, "decoder.layers.2.mlp.experts.linear_fc1.tokens_per_expert"),
	          "%s", r.note);
	lks_store_close(s);
	rm_tmp();
}

/* #3842's lines, before "block"; and a rank of more than 32 local experts */
Test(megatron_tensors, first_version_lines_and_many_experts)
{
	lks_store *s = open_store();
	char path[512], line[1024];
	const char *paths[1] = { path };
	lks_import_opts o = { .fmt = lks_import_format_find("megatron-tensors"),
	                      .case_name = "c", .run_name = "old" };
	lks_import_result res;
	lks_stored_run r;
	const lks_tentry *e;
	FILE *f;
	int n = 0;

	path_in_tmp(path, sizeof(path), "rank0.jsonl");
	cr_assert_not_null(f = fopen(path, "w"));
	fputs("{\"iter\": 10, \"layer\": 1, \"tpe\": [[3, 4]]}\n", f);
	n = snprintf(line, sizeof(line), "{\"iter\": 10, \"layer\": 2, \"tpe\": [[");
	for (int k = 0; k < 40; k++)
		n += snprintf(line + n, sizeof(line) - (size_t)n, "%s%d", k ? ", " : "", k * 2);
	fprintf(f, "%s]]}\n", line);
	fclose(f);
	cr_assert_eq(lks_import_files(s, &o, paths, 1, &res), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_stored_run_load(s, res.run_id, LKS_LOAD_TRACE, &r), 0, "%s",
	             lks_errmsg());
	cr_assert_eq(r.nt, 3);
	cr_assert_str_eq(r.names[0], "decoder.layers.1.mlp.experts.linear_fc1.tokens_per_expert");
	cr_assert_str_eq(r.names[1],
	                 "decoder.layers.2.mlp.experts.linear_fc1.tokens_per_expert.e0");
	cr_assert_str_eq(r.names[2],
	                 "decoder.layers.2.mlp.experts.linear_fc1.tokens_per_expert.e32");
	cr_assert_eq(lks_tensor_trace_step(r.tt, 10), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_tensor_trace_rank(r.tt, 0, &e), 3);
	cr_assert_eq(e[1].n, 32);
	cr_assert_eq(e[2].n, 8);
	cr_assert_eq(stat_of(r.tt, &e[2], "tokens_e39")->value, 78);
	lks_stored_run_release(&r);
	lks_store_close(s);
	rm_tmp();
}

Test(megatron_tensors, bad_input_names_the_line_and_stores_nothing)
{
	const char *ok = "{\"iter\": 2, \"block\": \"decoder\", \"layer\": 1, \"tpe\": [[1, 2]]}\n";
	char text[1024];

	snprintf(text, sizeof(text), "%s{\"iter\": 1, \"block\": \"decoder\", \"layer\": 1, "
	         "\"tpe\": [[1, 2]]}\n", ok);
	expect_bad("megatron-tensors", "rank0.jsonl", text, "after its step 2", 2);
	snprintf(text, sizeof(text), "%s{\"iter\": 3, \"layer\": 1, \"tpe\": [[1, 2.5]]}\n", ok);
	expect_bad("megatron-tensors", "rank0.jsonl", text, "whole numbers from 0", 2);
	snprintf(text, sizeof(text), "%s{\"iter\": 3, \"layer\": 1, \"tpe\": [[1, -2]]}\n", ok);
	expect_bad("megatron-tensors", "rank0.jsonl", text, "whole numbers from 0", 2);
	snprintf(text, sizeof(text), "%s{\"iter\": 3, \"layer\": 1, \"tpe\": [3]}\n", ok);
	expect_bad("megatron-tensors", "rank0.jsonl", text, "a list per forward call", 2);
	snprintf(text, sizeof(text), "%s{\"iter\": 3, \"block\": \"mtp\", \"layer\": 1, "
	         "\"tpe\": [[1]]}\n", ok);
	expect_bad("megatron-tensors", "rank0.jsonl", text, "\"mtp_idx\"", 2);
	snprintf(text, sizeof(text), "%s{\"iter\": 3, \"block\": \"encoder\", \"layer\": 1, "
	         "\"tpe\": [[1]]}\n", ok);
	expect_bad("megatron-tensors", "rank0.jsonl", text, "\"block\"", 2);
	snprintf(text, sizeof(text), "%s{\"layer\": 1, \"tpe\": [[1]]}\n", ok);
	expect_bad("megatron-tensors", "rank0.jsonl", text, "\"iter\"", 2);
	snprintf(text, sizeof(text), "%s{\"iter\": 3, \"layer\": 1, \"tpe\": [[1]]\n", ok);
	expect_bad("megatron-tensors", "rank0.jsonl", text, "not JSON", 2);
	expect_bad("megatron-tensors", "rank1.jsonl", ok, "rank 0 holds no tensor", -1);
	expect_bad("megatron-tensors", "mp_rank_00.pth", "PK\003\004\024\000archive/data.pkl",
	           "a torch.save file", -1);
}
