/*
 * test_import_precision.c: how precise an imported value is (issue 32, Build 4). A value
 * read from a log's text keeps the decimals it was written with through the store (the
 * block codec's printed columns, import_block.h); 'bitwise' on two text logs says "equal to
 * the printed precision"; the same run imported from its Megatron-LM log (tb_megatron.log)
 * and from its TensorBoard event file (tb_tensorboardx.tfevents) differs bit for bit, and
 * 'lockstep diff' says they agree to the printed precision and that the event file holds
 * more. And printed.c's agreement, digit by digit, on the cases a tolerance would blur.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "import_fixture.h"
#include "run_bin.h"
#include "store_fixture.h"
#include "harness/import/import.h"
#include "harness/store/import_block.h"
#include "harness/verify/check.h"
#include "harness/verify/printed.h"
#include "kernels/err.h"

/* ---- agreement at the printed precision ---- */

Test(printed, a_text_agrees_with_the_value_it_was_printed_from)
{
	/* Megatron-LM's "lm loss: 8.901099E+00" of the float32 8.90109920501709 */
	cr_assert(lks_printed_agree(8.901099, 7, 8.9010992050170898, 0));
	cr_assert(lks_printed_agree(8.9010992050170898, 0, 8.901099, 7), "either side");
	cr_assert_not(lks_printed_agree(8.901100, 7, 8.9010992050170898, 0), "one digit off");
	/* 0.125 is exact in binary: "%.2f" rounds the tie to even, as Python's format does */
	cr_assert(lks_printed_agree(0.12, 3, 0.125, 0));
	cr_assert_not(lks_printed_agree(0.13, 3, 0.125, 0));
	/* a tiny negative value prints "-0.0000": that is the text "0.0000" */
	cr_assert(lks_printed_agree(0.0, 5, -0.00001, 0));
	cr_assert(lks_printed_agree(-0.0, 0, 0.0, 5) == 1);
	/* a negative value's sign counts */
	cr_assert_not(lks_printed_agree(1.5, 2, -1.5, 0));
}

Test(printed, two_texts_agree_at_the_coarser_a_tie_either_way)
{
	/* "2.35" rounded to one decimal: the value it was printed from may have been either
	   side of 2.35, so both 2.3 and 2.4 agree with it, 2.5 does not */
	cr_assert(lks_printed_agree(2.4, 2, 2.35, 3));
	cr_assert(lks_printed_agree(2.3, 2, 2.35, 3));
	cr_assert_not(lks_printed_agree(2.5, 2, 2.35, 3));
	cr_assert(lks_printed_agree(-2.35, 3, -2.4, 2), "negative, either side");
	cr_assert_not(lks_printed_agree(-2.35, 3, 2.4, 2));
	/* no tie: "2.3449" is 2.34 at two decimals, and 2.35 is not */
	cr_assert(lks_printed_agree(2.34, 3, 2.3449, 5));
	cr_assert_not(lks_printed_agree(2.35, 3, 2.3449, 5));
	/* the same decimals: the same digits */
	cr_assert(lks_printed_agree(10.5, 5, 10.5, 5));
	cr_assert_not(lks_printed_agree(10.5, 5, 10.5001, 5));
}

Test(printed, full_precision_is_bit_for_bit_and_nonfinite_only_itself)
{
	cr_assert_eq(lks_printed_common(0, 0), -1);
	cr_assert_eq(lks_printed_common(5, 0), 4);
	cr_assert_eq(lks_printed_common(5, 3), 2);
	cr_assert(lks_printed_agree(0.1, 0, 0.1, 0));
	cr_assert_not(lks_printed_agree(0.1, 0, nextafter(0.1, 1.0), 0));
	cr_assert(lks_printed_agree(NAN, 5, NAN, 0));
	cr_assert_not(lks_printed_agree(NAN, 5, 1.0, 0));
	cr_assert(lks_printed_agree(INFINITY, 5, INFINITY, 0));
	cr_assert_not(lks_printed_agree(INFINITY, 5, -INFINITY, 0));
}

/* ---- the codec keeps the decimals ---- */

struct seen {
	double v[8];
	int printed[8], n;
};

static int collect(void *arg, int step, int rank, const lks_metric_row *rows, int n)
{
	struct seen *s = arg;

	(void)step, (void)rank;
	for (int i = 0; i < n && s->n < 8; i++, s->n++) {
		s->v[s->n] = rows[i].value;
		s->printed[s->n] = rows[i].printed;
	}
	return 0;
}

Test(printed, a_block_keeps_each_value_s_decimals_trailing_zeros_too)
{
	lks_block *b = lks_block_new();
	lks_import_rec rec = { .step = 1, .n = 2 };
	const unsigned char *data;
	size_t len;
	struct seen s = { 0 };

	cr_assert_not_null(b);
	/* "10.50": two decimals, though 10.5 needs one; "1e300" of a text: no short decimal */
	snprintf(rec.m[0].name, sizeof(rec.m[0].name), "loss");
	rec.m[0].nlen = 4;
	rec.m[0].value = 10.5;
	rec.m[0].dec = (int64_t)1050 << 4 | 2;
	snprintf(rec.m[1].name, sizeof(rec.m[1].name), "lr");
	rec.m[1].nlen = 2;
	rec.m[1].value = 2.5;
	rec.m[1].dec = LKS_IMPORT_NO_DEC;  /* a binary value: 2.5 exactly, not "2.5" printed */
	cr_assert_eq(lks_block_add_rec(b, &rec), 0, "%s", lks_errmsg());
	rec.step = 2;
	rec.m[0].value = 1e300;
	rec.m[0].dec = LKS_IMPORT_NO_DEC;
	cr_assert_eq(lks_block_add_rec(b, &rec), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_block_encode(b, &data, &len), 0);
	cr_assert_eq(lks_block_decode(data, len, collect, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(s.n, 4);
	cr_assert_eq(s.v[0], 10.5);
	cr_assert_eq(s.printed[0], 3, "10.50: 2 decimals, got %d", s.printed[0] - 1);
	cr_assert_eq(s.v[1], 2.5);
	cr_assert_eq(s.printed[1], 0, "a column no text printed says nothing");
	cr_assert_eq(s.v[2], 1e300);
	cr_assert_eq(s.printed[2], 0, "a printed column's value without decimals: none said");
	cr_assert_eq(s.printed[3], 0);
	/* "1511" (0 decimals) is a count: no rounding said */
	rec.step = 3;
	rec.m[0].value = 1511;
	rec.m[0].dec = (int64_t)1511 << 4;
	cr_assert_eq(lks_block_add_rec(b, &rec), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_block_encode(b, &data, &len), 0);
	s.n = 0;
	cr_assert_eq(lks_block_decode(data, len, collect, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(s.n, 6);
	cr_assert_eq(s.printed[0], 3, "10.50 still");
	cr_assert_eq(s.v[4], 1511);
	cr_assert_eq(s.printed[4], 0);

	/* a restart's rewrite (lks_block_add of decoded rows) keeps them */
	lks_block_reset(b);
	{
		lks_metric_row rows[2] = { { 0, 0, "loss", LKS_METRIC_NUMERICS, 10.5, 3 },
		                           { 0, 0, "lr", LKS_METRIC_NUMERICS, 2.5, 0 } };
		struct seen t = { 0 };

		cr_assert_eq(lks_block_add(b, 1, 0, rows, 2), 0, "%s", lks_errmsg());
		cr_assert_eq(lks_block_encode(b, &data, &len), 0);
		cr_assert_eq(lks_block_decode(data, len, collect, &t), 0, "%s", lks_errmsg());
		cr_assert_eq(t.printed[0], 3);
		cr_assert_eq(t.printed[1], 0);
	}
	lks_block_free(b);
}

Test(printed, a_version_1_block_reads_with_no_precision_said)
{
	/* version 1, 1 record, 1 name (kind 0, "loss"), rank 0, step 0, every record has it,
	   t = zz(25) << 4 | 1: 2.5 */
	unsigned char v1[] = { 1, 1, 1, 0, 'l', 'o', 's', 's', 0, 0, 0, 0, 0xa1, 0x06 };
	struct seen s = { 0 };

	cr_assert_eq(lks_block_decode(v1, sizeof(v1), collect, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(s.n, 1);
	cr_assert_eq(s.v[0], 2.5);
	cr_assert_eq(s.printed[0], 0);
	/* the same as version 2 with the name printed: 1 decimal */
	v1[0] = 2;
	v1[3] = 2;
	s.n = 0;
	cr_assert_eq(lks_block_decode(v1, sizeof(v1), collect, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(s.printed[0], 2);
	/* version 1 knew no printed bit: a damaged block */
	v1[0] = 1;
	cr_assert_neq(lks_block_decode(v1, sizeof(v1), collect, &s), 0);
}

/* ---- a text log and its event file ---- */

static void bitwise(lks_store *s, int64_t a, int64_t b, lks_check_result *r)
{
	lks_check_cfg k = { .name = "k", .kind = LKS_CHECK_BITWISE, .a = "text", .b = "events",
	                    .exp_step = -1, .exp_rank = -1 };

	cr_assert_eq(lks_check_eval(s, &k, NULL, a, b, r), 0, "%s", lks_errmsg());
}

Test(printed, two_text_logs_are_equal_to_the_printed_precision)
{
	char db[512];
	lks_store *s;
	int64_t a, b, ev;
	lks_check_result r;

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "p.db");
	cr_assert_eq(lks_store_open(db, &s), 0, "%s", lks_errmsg());
	a = import_run(s, "megatron-log", "tb_megatron.log", "a");
	b = import_run(s, "megatron-log", "tb_megatron.log", "b");
	ev = import_run(s, "tensorboard", "tb_tensorboardx.tfevents", "ev");
	bitwise(s, a, b, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	/* loss scale "1.0": 1 decimal ... learning rate "1.000000E-04": 10; consumed samples
	   are whole numbers, counts, which say no rounding */
	cr_assert_str_eq(r.message, "equal to the printed precision (1 to 10 decimals)");
	/* the text against the event file: bit for bit they part at the first loss, which
	   agrees at the 6 decimals Megatron-LM printed */
	bitwise(s, a, ev, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_FAIL, "%s", r.message);
	cr_assert_eq(r.step, 1);
	cr_assert_str_eq(r.metric, "loss");
	cr_assert_not_null(strstr(r.message, "text printed to 6 decimals, events at full "
	                          "precision: equal at 6 decimals"), "%s", r.message);
	/* two event files: full precision, no word of decimals */
	bitwise(s, ev, ev, &r);
	cr_assert_eq(r.verdict, LKS_VERDICT_PASS, "%s", r.message);
	cr_assert_null(strstr(r.message, "printed"), "%s", r.message);
	lks_store_close(s);
	rm_tmp();
}

/* A tmp file of text imported as run name: its run id. */
static int64_t import_text(lks_store *s, const char *fmt, const char *text, const char *name)
{
	char path[512];
	const char *files[] = { path };
	lks_import_opts o = { .fmt = lks_import_format_find(fmt), .case_name = "c",
	                      .run_name = name };
	lks_import_result res;
	FILE *f;

	path_in_tmp(path, sizeof(path), name);
	cr_assert_not_null(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
	cr_assert_eq(lks_import_files(s, &o, files, 1, &res), 0, "%s", lks_errmsg());
	return res.run_id;
}

/* Writers that drop the zeros after what they rounded to print fewer digits than they
   kept: NeMo's '{:.4}' ("11.5" is 11.50), Hugging Face's round(loss, 4) ("10.5" is
   10.5000), Megatron's golden values round(x, 5) ("10.84" is 10.84000). Against the full
   value (11.5432, 10.5432, 10.8449) they differ at their precision; they were said to
   agree at 1 or 2 decimals. */
Test(printed, a_writers_rounding_is_its_precision_not_its_shortest_text)
{
	static const struct { const char *fmt, *text, *full, *printed; } w[] = {
		{ "nemo", "Training epoch 0, iteration 0/9 | global_step: 1 | reduced_train_loss: "
		  "11.5\n", "{\"step\": 1, \"loss\": 11.5432}\n", "printed to 2 decimals" },
		{ "hf-trainer", "{\"log_history\": [{\"loss\": 10.5, \"step\": 1}]}\n",
		  "{\"step\": 1, \"loss\": 10.5432}\n", "printed to 4 decimals" },
		{ "megatron-golden", "{\"lm loss\": {\"start_step\": 1, \"end_step\": 1, "
		  "\"step_interval\": 1, \"values\": {\"1\": 10.84}}}\n",
		  "{\"step\": 1, \"loss\": 10.8449}\n", "printed to 5 decimals" },
	};
	char db[512];
	lks_store *s;
	lks_check_result r;

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "w.db");
	cr_assert_eq(lks_store_open(db, &s), 0, "%s", lks_errmsg());
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		char a[32], b[32];

		snprintf(a, sizeof(a), "text%zu", i);
		snprintf(b, sizeof(b), "full%zu", i);
		bitwise(s, import_text(s, w[i].fmt, w[i].text, a),
		        import_text(s, "jsonl", w[i].full, b), &r);
		cr_assert_eq(r.verdict, LKS_VERDICT_FAIL, "%s: %s", w[i].fmt, r.message);
		cr_assert_not_null(strstr(r.message, w[i].printed), "%s: %s", w[i].fmt, r.message);
		cr_assert_null(strstr(r.message, "equal at"), "%s: %s", w[i].fmt, r.message);
	}
	lks_store_close(s);
	rm_tmp();
}

Test(printed, diff_of_a_text_log_and_its_event_file_says_what_each_holds)
{
	char db[512], args[2048], out[8192], log[512];

	mkdir_tmp();
	path_in_tmp(db, sizeof(db), "d.db");
	snprintf(args, sizeof(args), "import --db '%s' --format megatron-log --case c --run text "
	         "'%s/tb_megatron.log' && " LKS_BIN " import --db '%s' --format tensorboard "
	         "--case c --run events '%s/tb_tensorboardx.tfevents'", db, LKS_IMPORT_DIR, db,
	         LKS_IMPORT_DIR);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 0, "%s", out);
	snprintf(args, sizeof(args), "diff --db '%s' c/text c/events", db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 1, "%s", out);
	/* 5 values each, all differ bit for bit, none at the decimals the text printed */
	cr_assert_not_null(strstr(out, "loss                          5        5  1          "
	                          "1.33e-07   6         full      0"), "%s", out);
	cr_assert_not_null(strstr(out, "grad_norm                     5        5  1          "
	                          "0.00025    3         full      0"), "%s", out);
	cr_assert_not_null(strstr(out, "loss: the runs agree to the printed precision (6 "
	                          "decimals); b holds more: full precision"), "%s", out);
	cr_assert_not_null(strstr(out, "grad_norm: the runs agree to the printed precision (3 "
	                          "decimals); b holds more: full precision"), "%s", out);

	/* a log whose third loss is one unit of its last decimal off: diff finds it */
	path_in_tmp(log, sizeof(log), "off.log");
	snprintf(args, sizeof(args), "sed 's/3.201581E+00/3.201582E+00/' '%s/tb_megatron.log' > "
	         "'%s' && grep -q 3.201582E+00 '%s'", LKS_IMPORT_DIR, log, log);
	cr_assert_eq(lks_run_sh(args, out, sizeof(out)), 0, "%s", out);
	snprintf(args, sizeof(args), "import --db '%s' --format megatron-log --case c --run off "
	         "'%s' && " LKS_BIN " diff --db '%s' c/off c/events", db, log, db);
	cr_assert_eq(lks_run_bin(NULL, args, out, sizeof(out)), 1, "%s", out);
	cr_assert_not_null(strstr(out, "loss: 1 of 5 values differ at the printed precision (6 "
	                          "decimals); b holds more: full precision"), "%s", out);
	rm_tmp();
}

/* A JSON number has no text jansson keeps: its shortest form's decimals, which is how
   Python's json wrote it (Megatron-LM's golden files, Hugging Face's trainer_state.json). */
Test(printed, a_json_value_is_as_precise_as_its_shortest_form)
{
	cr_assert_eq(lks_import_shortest_dec(10.84385), (int64_t)1084385 << 4 | 5);
	cr_assert_eq(lks_import_shortest_dec(2.0), (int64_t)2 << 4 | 0);
	cr_assert_eq(lks_import_shortest_dec(-0.5), (int64_t)((uint64_t)-5 << 4) | 1);
	cr_assert_eq(lks_import_shortest_dec(0.1 + 0.2), LKS_IMPORT_NO_DEC, "17 digits");
	cr_assert_eq(lks_import_shortest_dec(-0.0), LKS_IMPORT_NO_DEC);
	cr_assert_eq(lks_import_shortest_dec(NAN), LKS_IMPORT_NO_DEC);
	cr_assert_eq(lks_import_shortest_dec(1e16), LKS_IMPORT_NO_DEC);
}
