/*
 * check_case.c: the checks of one case run in order (lks_check_case, check.h): each
 * evaluated (check.c), printed, stored with its parameters and tallied; a check whose keys
 * are bad names its case file's line.
 */
#include "harness/verify/check.h"

#include <stdio.h>
#include <string.h>

#include "harness/verify/check_impl.h"
#include "kernels/err.h"

static int64_t lks_run_id_of(const lks_case *c, const int64_t *run_ids, const char *name)
{
	const lks_run_cfg *r = name[0] ? lks_case_run(c, name) : NULL;

	return r ? run_ids[r - c->runs] : 0;
}

static void lks_tally_add(lks_check_tally *t, lks_verdict v)
{
	t->total++;
	t->passed += v == LKS_VERDICT_PASS;
	t->failed += v == LKS_VERDICT_FAIL || v == LKS_VERDICT_UNEXPECTED_PASS;
	t->expected_fail += v == LKS_VERDICT_EXPECTED_FAIL;
	t->unsupported += v == LKS_VERDICT_UNSUPPORTED;
	t->skipped += v == LKS_VERDICT_SKIPPED;
}

/* "cases/x.ini:12: " before the message of a check whose keys are bad. */
static void lks_check_at_line(lks_check_result *r, const char *path, int line)
{
	char buf[sizeof(r->message) + 600];

	snprintf(buf, sizeof(buf), "%s:%d: %s", path, line, r->message);
	snprintf(r->message, sizeof(r->message), "%.*s", (int)sizeof(r->message) - 1, buf);
}

static void lks_check_print(FILE *out, const lks_case *c, const lks_check_cfg *k,
                            const lks_check_result *r)
{
	if (!out)
		return;
	fprintf(out, "%-20s %-26s %-11s %s%s%s\n", c->name, k->name, lks_check_kind_name(k->kind),
	        lks_verdict_word(r->verdict), r->message[0] ? ": " : "", r->message);
}

int lks_check_case(lks_store *s, int64_t suite_id, const lks_case *c, const int64_t *run_ids,
                   const lks_check_opts *o, FILE *out, lks_check_tally *tally)
{
	for (int i = 0; i < c->nchecks; i++) {
		const lks_check_cfg *k = &c->checks[i];
		int64_t ra = lks_run_id_of(c, run_ids, k->a), rb = lks_run_id_of(c, run_ids, k->b);
		lks_check_result r;
		lks_check_rec rec;

		if (lks_check_eval(s, k, o, ra, rb, &r))
			return lks_err("case '%s', check '%s': %s", c->name, k->name, lks_errmsg());
		if (r.bad_input == LKS_BAD_CASE)
			lks_check_at_line(&r, c->path, k->line);
		lks_check_print(out, c, k, &r);
		rec = (lks_check_rec){
			.suite_id = suite_id, .case_name = c->name, .check_name = k->name,
			.kind = lks_check_kind_name(k->kind), .run_a = ra, .run_b = rb,
			.verdict = lks_verdict_name(r.verdict), .step = r.step, .rank = r.rank,
			.tensor = r.tensor[0] ? r.tensor : NULL, .type = r.value_type,
			/* an imported run's divergence: its metric is the field */
			.field = r.field ? lks_check_result_field(&r) : NULL,
			.value_a = r.a, .value_b = r.b, .ivalue_a = r.ia, .ivalue_b = r.ib,
			.abs_err = r.abs_err, .rel_err = r.rel_err, .ulp = r.ulp,
			.message = r.message[0] ? r.message : NULL,
			.params = {
				.a = k->a[0] ? k->a : NULL, .b = k->b[0] ? k->b : NULL,
				.metric = k->metric[0] ? k->metric : NULL,
				.tensors = k->tensors[0] ? k->tensors : NULL,
				.rtol = k->rtol, .atol = k->atol, .floor_db = k->floor_db,
				.expect = k->expect_fail ? "fail" : "pass",
				.exp_step = k->exp_step, .exp_rank = k->exp_rank,
				.exp_tensor = k->exp_tensor[0] ? k->exp_tensor : NULL,
			},
		};
		if (lks_store_check(s, &rec))
			return -1;
		lks_tally_add(tally, r.verdict);
		tally->bad_input += r.bad_input != 0;
	}
	if (out)
		fflush(out);
	return 0;
}
