/*
 * test_import_debugmode.c: debugmode, PyTorch DebugMode's dumps of tensor hashes
 * (harness/import/import_debugmode.c), on tests/import/data/debugmode/: debug_string()'s
 * (run_a/, run_b/: make_fixtures.py), save_logs' JSON (logs/) and dump_tensor_hashes'
 * text (hashes/: make_dumps.py writes both as DebugMode lays them out), and dumps torch
 * 2.15.0's DebugMode wrote itself (torch/: make_torch_dumps.py). Ops with a hash
 * read as records in order, named by module, op and place (the two newer dumps), their
 * L1 norms as statistics and their uint64 hashes as the record's hash, bit for bit; a
 * JSON dump and a hash dump of one step read alike; two runs whose logs differ in length
 * (an op inserted: DebugMode's own check refuses them) compared anyway, the changed op
 * found at its step and rank; the step of a file whose path says none its place; bad
 * input (hashes that are no number, a truncated dump, JSON not save_logs') refused,
 * nothing stored.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "store_fixture.h"
#include "harness/import/import.h"
#include "harness/store/run.h"
#include "harness/store/tensor_trace.h"
#include "harness/verify/check.h"
#include "kernels/err.h"

static int import_paths(lks_store *s, const char **paths, int n, const char *run, int64_t *id)
{
	lks_import_opts o = { .fmt = lks_import_format_find("debugmode"), .case_name = "dm",
	                      .run_name = run };
	lks_import_result res;
	int rc = lks_import_files(s, &o, paths, n, &res);

	*id = res.run_id;
	return rc;
}

static int64_t import_run(lks_store *s, const char *run)
{
	char p1[1024], p2[1024];
	const char *paths[2] = { p1, p2 };
	int64_t id;

	snprintf(p1, sizeof(p1), "%s/debugmode/%s/step_1", LKS_IMPORT_DIR, run);
	snprintf(p2, sizeof(p2), "%s/debugmode/%s/step_2", LKS_IMPORT_DIR, run);
	cr_assert_eq(import_paths(s, paths, 2, run, &id), 0, "%s", lks_errmsg());
	return id;
}

static lks_store *open_store(void)
{
	char db[512];
	lks_store *s;

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "dm.db");
	cr_assert_eq(lks_store_open(db, &s), 0, "%s", lks_errmsg());
	return s;
}

Test(debugmode, hashed_ops_read_back_in_order)
{
	lks_store *s = open_store();
	int64_t id = import_run(s, "run_a");
	lks_stored_run r;
	const lks_tentry *e;

	cr_assert_eq(lks_stored_run_load(s, id, LKS_LOAD_TRACE, &r), 0, "%s", lks_errmsg());
	cr_assert_eq(r.W, 2, "rank_0 and rank_1");
	cr_assert_eq(r.nsteps, 3, "step_1 and step_2");
	cr_assert_eq(lks_tensor_trace_step(r.tt, 2), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_tensor_trace_rank(r.tt, 1, &e), 5, "the ops with a hash");
	cr_assert_str_eq(r.names[e[0].tensor], "aten::t");
	cr_assert_str_eq(r.names[e[1].tensor], "aten::mm");
	cr_assert_eq(e[3].tensor, e[1].tensor, "one name, two calls");
	cr_assert(e[1].has_hash);
	/* (0x9E3779B97F4A7C15 * 3 + 2000 + 1) mod 2^64, as make_fixtures.py writes it */
	cr_assert_eq(e[1].hash, 0x9E3779B97F4A7C15ull * 3 + 2001);
	cr_assert_eq(e[1].n, 1);
	cr_assert_eq(r.tt->val[e[1].first].value, 10.0 + 1.25 * 2 + 0.5 * 2 + 0.125);
	lks_stored_run_release(&r);
	lks_store_close(s);
}

Test(debugmode, logs_of_other_lengths_compared_the_changed_op_found)
{
	lks_store *s = open_store();
	int64_t a = import_run(s, "run_a"), b = import_run(s, "run_b");
	lks_check_cfg k = { .name = "k", .kind = LKS_CHECK_BITWISE, .a = "a", .b = "b",
	                    .exp_step = -1, .exp_rank = -1 };
	lks_check_result r;

	cr_assert_eq(lks_check_eval(s, &k, NULL, a, b, &r), 0, "%s", lks_errmsg());
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL, "%s", r.message);
	cr_assert_eq(r.step, 2);
	cr_assert_eq(r.rank, 1);
	cr_assert_str_eq(r.tensor, "aten::mm");
	cr_assert_str_eq(r.field, "l1", "the L1 norm first, then the hash");
	cr_assert(strstr(r.note, "inserted in b (first: aten::add)"), "%s", r.note);
	lks_store_close(s);
}

Test(debugmode, a_hash_that_is_no_number_is_refused_at_its_line)
{
	lks_store *s = open_store();
	char path[512];
	const char *paths[1] = { path };
	FILE *f;
	int64_t id;

	snprintf(path, sizeof(path), "%s/rank_0.txt", tmpdir);
	cr_assert_not_null(f = fopen(path, "w"));
	fputs("aten::t(t$1: f32[2])  ->  t$3: f32[2]  # {'hash': 1.5}\n"
	      "aten::mm(t$1: f32[2])  ->  t$3: f32[2]  # {'hash': (2.5, tensor(3))}\n", f);
	fclose(f);
	cr_assert_eq(import_paths(s, paths, 1, "bad", &id), LKS_E_BAD_INPUT);
	cr_assert(strstr(lks_errmsg(), "rank_0.txt':2") && strstr(lks_errmsg(), "no number"),
	          "%s", lks_errmsg());
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM runs"), 0);
	lks_store_close(s);
}

/* ---- save_logs' JSON and dump_tensor_hashes' text (make_dumps.py) ---- */

static int64_t import_dir(lks_store *s, const char *dir, const char *run)
{
	char p[1024];
	const char *paths[1] = { p };
	int64_t id;

	snprintf(p, sizeof(p), "%s/debugmode/%s/%s", LKS_IMPORT_DIR, dir, run);
	cr_assert_eq(import_paths(s, paths, 1, run, &id), 0, "%s", lks_errmsg());
	return id;
}

/* make_dumps.py's uint64 of tensor k at (step, rank) */
static uint64_t dump_hash(int k, int step, int rank)
{
	return 0x9E3779B97F4A7C15ull * (uint64_t)(k + 1) + (uint64_t)(step * 1000 + rank);
}

/* The names of a step's first ops, either dump: module/op.in|out.place */
static const char *const first_names[] = {
	"Net.fc1/aten::t.in.0", "Net.fc1/aten::t.out", "Net.fc1/aten::addmm.in.0",
	"Net.fc1/aten::addmm.in.1", "Net.fc1/aten::addmm.in.2", "Net.fc1/aten::addmm.out",
	"Net/aten::relu.in.0", "Net/aten::relu.out", "Net/aten::native_layer_norm.in.0",
	"Net/aten::native_layer_norm.out.0", "Net/aten::native_layer_norm.out.1",
	"Net/aten::native_layer_norm.out.2", "Net.fc2/aten::t.in.0", "Net.fc2/aten::t.out",
	"Net.fc2/aten::addmm.in.0", "Net.fc2/aten::addmm.in.1", "Net.fc2/aten::addmm.in.2",
	"Net.fc2/aten::addmm.out", "aten::sum.in.0", "aten::sum.out",
};
#define NFIRST (sizeof(first_names) / sizeof(first_names[0]))

/* Rank's entries of step in r: the first names, 32 in all, hashes and norms as written. */
static void expect_step(lks_stored_run *r, int step, int rank)
{
	const lks_tentry *e;

	cr_assert_eq(lks_tensor_trace_step(r->tt, step), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_tensor_trace_rank(r->tt, rank, &e), 32, "each tensor hashed");
	for (size_t i = 0; i < NFIRST; i++)
		cr_assert_str_eq(r->names[e[i].tensor], first_names[i], "entry %zu", i);
	cr_assert_neq(e[1].tensor, e[13].tensor, "aten::t of fc1 and of fc2: two names");
	/* Net.fc1/aten::t.out: CALLS[2], k = 20, over 2^63 (an int64 holds it not) */
	cr_assert_eq(e[1].hash, dump_hash(20, step, rank), "%#llx", (unsigned long long)e[1].hash);
	cr_assert_geq(e[1].hash, 1ull << 63);
	/* Net.fc2/aten::addmm.out: CALLS[9], k = 90 */
	cr_assert(e[17].has_hash);
	cr_assert_eq(e[17].hash, dump_hash(90, step, rank), "%#llx",
	             (unsigned long long)e[17].hash);
	cr_assert_eq(e[17].n, 1);
	cr_assert_str_eq(r->tt->stats[r->tt->val[e[17].first].stat], "l1");
	cr_assert_eq(r->tt->val[e[17].first].value, 10.0 + 1.25 * 90 + 0.5 * step + 0.125 * rank);
	/* its second input, CALLS[9]'s 5 + 1 */
	cr_assert_eq(e[15].hash, dump_hash(96, step, rank));
	/* the layer norm's rstd: an infinite norm, its hash still the uint64 */
	cr_assert(isinf(r->tt->val[e[11].first].value));
	cr_assert_eq(e[11].hash, dump_hash(62, step, rank));
	for (int i = 0; i < 32; i++)
		cr_assert_eq(r->phases[e[i].tensor], LKS_PHASE_FORWARD, "an eager run says no "
		             "backward");
}

Test(debugmode, save_logs_json_read_back_in_order_steps_by_file)
{
	lks_store *s = open_store();
	int64_t id = import_dir(s, "logs", "run_a");
	lks_stored_run r;

	cr_assert_eq(lks_stored_run_load(s, id, LKS_LOAD_TRACE, &r), 0, "%s", lks_errmsg());
	cr_assert_eq(r.W, 1);
	cr_assert_eq(r.nsteps, 3, "0001.json step 1, 0002.json step 2: their place");
	expect_step(&r, 1, 0);
	expect_step(&r, 2, 0);
	lks_stored_run_release(&r);
	lks_store_close(s);
}

Test(debugmode, hash_dump_read_like_the_json)
{
	lks_store *s = open_store();
	int64_t id = import_dir(s, "hashes", "run_a");
	lks_stored_run r;

	cr_assert_eq(lks_stored_run_load(s, id, LKS_LOAD_TRACE, &r), 0, "%s", lks_errmsg());
	cr_assert_eq(r.W, 2, "rank_0.txt and rank_1.txt");
	cr_assert_eq(r.nsteps, 2, "each the first file of its rank: step 1");
	expect_step(&r, 1, 0);
	expect_step(&r, 1, 1);
	lks_stored_run_release(&r);
	lks_store_close(s);
}

static void expect_changed(const char *dir, int step)
{
	lks_store *s = open_store();
	int64_t a = import_dir(s, dir, "run_a"), b = import_dir(s, dir, "run_b");
	lks_check_cfg k = { .name = "k", .kind = LKS_CHECK_BITWISE, .a = "a", .b = "b",
	                    .exp_step = -1, .exp_rank = -1 };
	lks_check_result r;

	cr_assert_eq(lks_check_eval(s, &k, NULL, a, b, &r), 0, "%s", lks_errmsg());
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL, "%s", r.message);
	cr_assert_eq(r.step, step);
	cr_assert_eq(r.rank, 0);
	cr_assert_str_eq(r.tensor, "Net.fc2/aten::addmm.out");
	cr_assert_str_eq(r.field, "hash", "the norm as it was, the uint64 changed");
	cr_assert_eq((uint64_t)r.ia ^ (uint64_t)r.ib, 1);
	cr_assert(strstr(r.note, "inserted in b (first: Net/aten::clone.in.0)"), "%s", r.note);
	lks_store_close(s);
}

Test(debugmode, json_runs_of_other_lengths_the_changed_op_found)
{
	expect_changed("logs", 2);
}

Test(debugmode, hash_dumps_of_other_lengths_the_changed_op_found)
{
	expect_changed("hashes", 1);
}

/* Dumps PyTorch's DebugMode wrote itself (data/debugmode/torch/, make_torch_dumps.py: torch
   2.15.0): clean against plant (fc2's weight moved by 1e-3) and against insert (the same,
   and an op before the net), in save_logs' JSON and in debug_string(), whose first line is
   record_nn_module's "[nn.Mod] Net": the first divergence is fc2's weight, at the aten::t
   that takes it, named by its module; the inserted op is told apart. */
static void expect_torch(const char *ext, const char *tensor, const char *inserted)
{
	lks_store *s = open_store();
	const char *names[3] = { "clean", "plant", "insert" };
	lks_check_cfg k = { .name = "k", .kind = LKS_CHECK_BITWISE, .a = "a", .b = "b",
	                    .exp_step = -1, .exp_rank = -1 };
	lks_check_result r;
	int64_t id[3];

	for (int i = 0; i < 3; i++) {
		char p[1024];
		const char *paths[1] = { p };

		snprintf(p, sizeof(p), "%s/debugmode/torch/%s.%s", LKS_IMPORT_DIR, names[i], ext);
		cr_assert_eq(import_paths(s, paths, 1, names[i], &id[i]), 0, "%s", lks_errmsg());
	}
	for (int b = 1; b < 3; b++) {
		cr_assert_eq(lks_check_eval(s, &k, NULL, id[0], id[b], &r), 0, "%s", lks_errmsg());
		cr_assert_eq(r.verdict, LKS_VERDICT_FAIL, "%s", r.message);
		cr_assert_str_eq(r.tensor, tensor, "%s: %s", names[b], r.message);
		cr_assert_eq(r.step, 1);
		cr_assert_eq(r.rank, 0);
		cr_assert_eq(!!strstr(r.note, inserted), b == 2, "%s: %s", names[b], r.note);
	}
	lks_store_close(s);
}

Test(debugmode, torchs_own_json_dumps_locate_the_moved_weight)
{
	expect_torch("json", "Net.fc2/aten::t.in", "2 inserted in b (first: aten::mul.Tensor.in)");
}

Test(debugmode, torchs_own_debug_string_with_modules_locates_the_moved_weight)
{
	expect_torch("txt", "Net.fc2/aten::t", "1 inserted in b (first: aten::mul.Tensor)");
}

static char *write_tmp(const char *name, const char *text)
{
	static char path[512];
	FILE *f;

	mkdir_tmp();
	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	cr_assert_not_null(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
	return path;
}

Test(debugmode, json_phase_kwargs_triton_and_logs_before_hash_leaves)
{
	lks_store *s = open_store();
	const char *paths[1] = { write_tmp("dm.json",
		"{\"format\": \"torch.utils._debug_mode.DebugMode.logs\", \"version\": 1, \"logs\": ["
		"{\"call_depth\": 1, \"type\": \"annotate\", \"tag\": \"Net\", "
		" \"header\": \"nn.Mod (compile bwd)\"},"
		"{\"call_depth\": 2, \"type\": \"op\", \"op_name\": \"aten::add\", \"log\": "
		" {\"type\": \"dict\", \"items\": [[\"input_hash\", {\"type\": \"tuple\", \"items\": ["
		"  {\"type\": \"tuple\", \"items\": [{\"type\": \"scalar\", \"value\": 7}]},"
		"  {\"type\": \"dict\", \"items\": []}]}],"
		"  [\"hash\", {\"type\": \"scalar\", \"value\": 18446744073709551615}]]}},"
		"{\"call_depth\": 2, \"type\": \"triton_kernel\", \"kernel_name\": \"triton_poi_0\","
		" \"pre_hashes\": {\"type\": \"dict\", \"items\": [[\"in_ptr0\","
		"  {\"type\": \"scalar\", \"value\": 2.5}]]},"
		" \"post_hashes\": {\"type\": \"dict\", \"items\": [[\"out_ptr0\","
		"  {\"type\": \"nonfinite_float\", \"value\": \"nan\"}]]}},"
		"{\"call_depth\": 1, \"type\": \"op\", \"op_name\": \"aten::mul\", "
		" \"tensor_hash_leaves\": {\"type\": \"dict\", \"items\": [[\"input\", {\"type\": "
		"  \"list\", \"items\": [{\"type\": \"tuple\", \"items\": [{\"type\": \"scalar\", "
		"  \"value\": \"[1]['other']\"}, {\"type\": \"scalar\", \"value\": -1}]}]}]]}}"
		"]}\n") };
	static const char *const names[] = { "Net/aten::add.in", "Net/aten::add.out",
		"Net/triton_poi_0.in.in_ptr0", "Net/triton_poi_0.out.out_ptr0", "aten::mul.in.other" };
	double half = 2.5;
	uint64_t bits;
	lks_stored_run r;
	const lks_tentry *e;
	int64_t id;

	memcpy(&bits, &half, sizeof(bits));
	cr_assert_eq(import_paths(s, paths, 1, "inline", &id), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_stored_run_load(s, id, LKS_LOAD_TRACE, &r), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_tensor_trace_step(r.tt, 1), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_tensor_trace_rank(r.tt, 0, &e), 5);
	for (int i = 0; i < 5; i++) {
		cr_assert_str_eq(r.names[e[i].tensor], names[i]);
		cr_assert_eq(r.phases[e[i].tensor], i < 4 ? LKS_PHASE_BACKWARD : LKS_PHASE_FORWARD,
		             "%s: under nn.Mod (compile bwd), or not", names[i]);
		cr_assert(e[i].has_hash);
	}
	cr_assert_eq(e[0].hash, 7, "a tree before tensor_hash_leaves: one record");
	cr_assert_eq(e[1].hash, UINT64_MAX, "an int over an int64, bit for bit");
	cr_assert_eq(e[2].hash, bits, "a float alone: its bits");
	cr_assert_eq(r.tt->val[e[2].first].value, 2.5);
	cr_assert(isnan(r.tt->val[e[3].first].value));
	cr_assert_eq(e[4].hash, UINT64_MAX, "-1 mod 2^64");
	lks_stored_run_release(&r);
	lks_store_close(s);
}

/* debug_string()'s nn.Mod annotations name the ops indented below them, the innermost
   first, until a line as little indented; one of a compiled region's backward ("nn.Mod
   (compile bwd)") makes its ops backward; other annotations name nothing. */
Test(debugmode, debug_string_ops_named_by_the_module_they_are_in)
{
	lks_store *s = open_store();
	const char *paths[1] = { write_tmp("modules.txt",
		"    [nn.Mod] Net\n"
		"      [nn.Mod] Net.fc1\n"
		"        aten::addmm(t: f32[4])  ->  t: f32[4]  # {'hash': 1.5}\n"
		"      [annotate] my tag\n"
		"        aten::relu(t: f32[4])  ->  t: f32[4]  # {'hash': 2.5}\n"
		"    aten::sum(t: f32[4])  ->  t: f32[]  # {'hash': 3.5}\n"
		"    [nn.Mod (compile bwd)] Net\n"
		"      [nn.Mod (compile bwd)] Net.fc1\n"
		"        aten::mm(t: f32[4])  ->  t: f32[4]  # {'hash': 4.5}\n"
		"      aten::mm(t: f32[4])  ->  t: f32[4]  # {'hash': 5.5}\n") };
	const char *want[] = { "Net.fc1/aten::addmm", "Net/aten::relu", "aten::sum",
	                       "Net.fc1/aten::mm", "Net/aten::mm" };
	const lks_phase ph[] = { LKS_PHASE_FORWARD, LKS_PHASE_FORWARD, LKS_PHASE_FORWARD,
	                         LKS_PHASE_BACKWARD, LKS_PHASE_BACKWARD };
	lks_stored_run r;
	const lks_tentry *e;
	int64_t id;

	cr_assert_eq(import_paths(s, paths, 1, "mods", &id), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_stored_run_load(s, id, LKS_LOAD_TRACE, &r), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_tensor_trace_step(r.tt, 1), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_tensor_trace_rank(r.tt, 0, &e), 5);
	for (int i = 0; i < 5; i++) {
		cr_assert_str_eq(r.names[e[i].tensor], want[i], "op %d", i);
		cr_assert_eq(r.phases[e[i].tensor], ph[i], "op %d", i);
	}
	lks_stored_run_release(&r);
	lks_store_close(s);
}

static void expect_bad(const char *name, const char *text, const char *where,
                       const char *why)
{
	lks_store *s = open_store();
	const char *paths[1] = { write_tmp(name, text) };
	int64_t id;

	cr_assert_eq(import_paths(s, paths, 1, "bad", &id), LKS_E_BAD_INPUT, "%s", name);
	cr_assert(strstr(lks_errmsg(), where) && strstr(lks_errmsg(), why), "%s",
	          lks_errmsg());
	cr_assert_eq(sql_int(s, "SELECT count(*) FROM runs"), 0);
	lks_store_close(s);
}

#define DM_HEAD "{\"format\": \"torch.utils._debug_mode.DebugMode.logs\", \"version\": 1, "

Test(debugmode, bad_dumps_refused_naming_file_and_line_nothing_stored)
{
	expect_bad("rank_0.json", DM_HEAD "\"logs\": [{\"call_depth\": 1, \"type\": \"op\"",
	           "rank_0.json':1:", "not JSON");
	expect_bad("rank_0.json", "{\"format\": \"x\", \"version\": 1, \"logs\": []}\n",
	           "rank_0.json'", "save_logs");
	expect_bad("rank_0.json", DM_HEAD "\"logs\": [{\"call_depth\": 1, \"type\": \"op\", "
	           "\"op_name\": \"aten::mm\", \"log\": {\"type\": \"dict\", \"items\": [[\"hash\", "
	           "{\"type\": \"scalar\", \"value\": \"abc\"}]]}}]}\n",
	           "rank_0.json': logs[0] (aten::mm)", "no number");
	expect_bad("rank_0.json", DM_HEAD "\"logs\": [{\"call_depth\": 1, \"type\": \"op\", "
	           "\"op_name\": \"aten::mm\", \"log\": {\"type\": \"dict\", \"items\": [[\"hash\", "
	           "{\"type\": \"scalar\", \"value\": 18446744073709551616}]]}}]}\n",
	           "logs[0] (aten::mm)", "no number");
	expect_bad("rank_0.txt", "Total captured tensor hash ops: 2\n" "=====\n\n"
	           "[<none>/op_0_aten::mm]\n  Call type: torch op\n  Call index: 0\n"
	           "  Call depth: 1\n  Output hashes: <root>=[1.5, 12]\n\n",
	           "rank_0.txt'", "truncated");
	expect_bad("rank_0.txt", "Total captured tensor hash ops: 1\n" "=====\n\n"
	           "[<none>/op_0_aten::mm]\n  Call type: torch op\n  Call index: 0\n"
	           "  Call depth: 1\n  Output hashes: <root>=[1.5, x]\n\n",
	           "rank_0.txt':8:", "no number");
	expect_bad("rank_0.txt", "Total captured tensor hash ops: 1\n"
	           "  Output hashes: <root>=12\n", "rank_0.txt':2:", "before its");
	expect_bad("rank_0.json", "\n[{\"call_depth\": 1}]\n", "rank_0.json':2:",
	           "a JSON array");
}
