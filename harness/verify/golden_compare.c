/*
 * golden_compare.c: the comparison of a run with its golden (golden_compare.h), in the
 * order of a divergence (walk.h).
 */
#include "harness/verify/golden_compare.h"

#include <stdio.h>
#include <string.h>

#include "harness/verify/walk.h"

/* Options as the runner writes them, without a planted fault (" inject: ..." up to
   " set: " or the end): a faulty run is still the golden's run, and the golden check is
   to find where the fault struck, not to stop at the options. */
static int lks_options_differ(const char *a, const char *b)
{
	const char *s[2] = { a ? a : "", b ? b : "" }, *cut[2], *rest[2];

	for (int i = 0; i < 2; i++) {
		cut[i] = strstr(s[i], " inject: ");
		rest[i] = cut[i] ? strstr(cut[i], " set: ") : NULL;
		if (!cut[i])
			cut[i] = rest[i] = s[i] + strlen(s[i]);
		else if (!rest[i])
			rest[i] = cut[i] + strlen(cut[i]);
	}
	return cut[0] - s[0] != cut[1] - s[1] || strncmp(s[0], s[1], (size_t)(cut[0] - s[0]))
	       || strcmp(rest[0], rest[1]);
}

/* Header fields: a run of other settings is not the golden's run. */
static int lks_cmp_header(const lks_stored_run *a, const lks_stored_run *b,
                          lks_check_result *res)
{
	const char *sa[] = { a->case_name, a->run_name, a->recipe, a->options };
	const char *sb[] = { b->case_name, b->run_name, b->recipe, b->options };
	static const char *const sf[] = { "case", "run", "recipe", "options" };
	int64_t ia[] = { a->W, a->steps, (int64_t)a->seed };
	int64_t ib[] = { b->W, b->steps, (int64_t)b->seed };
	static const char *const jf[] = { "world_size", "steps", "seed" };

	for (int i = 0; i < 4; i++)
		if (i == 3 ? lks_options_differ(sa[i], sb[i]) : strcmp(sa[i] ? sa[i] : "", sb[i] ? sb[i] : "")) {
			res->failed = 1;
			res->field = sf[i];
			snprintf(res->note, sizeof(res->note), "%s '%s' in the run, '%s' in the golden file", sf[i],
			         sa[i] ? sa[i] : "", sb[i] ? sb[i] : "");
			return 1;
		}
	for (int i = 0; i < 3; i++)
		if (ia[i] != ib[i]) {
			res->failed = 1;
			lks_walk_int(res, jf[i], ia[i], ib[i], 0);
			snprintf(res->note, sizeof(res->note), "the run was made with other settings than the golden");
			return 1;
		}
	for (int i = 0; i < a->nt || i < b->nt; i++)
		if (i >= a->nt || i >= b->nt || a->phases[i] != b->phases[i]
		    || strcmp(a->names[i], b->names[i])) {
			res->failed = 1;
			res->field = "tensor";
			snprintf(res->note, sizeof(res->note), "tensor seq %d is '%s' (%s) in the run, '%s' (%s) in "
			         "the golden file", i, i < a->nt ? a->names[i] : "-",
			         i < a->nt ? lks_phase_name(a->phases[i]) : "none",
			         i < b->nt ? b->names[i] : "-", i < b->nt ? lks_phase_name(b->phases[i]) : "none");
			return 1;
		}
	return 0;
}

int lks_golden_compare(lks_stored_run *run, lks_stored_run *gold, int exact, double rtol,
                       double atol, lks_check_result *res)
{
	lks_walk_opts o = {
		.exact = exact, .rtol = rtol, .atol = atol, .nan_equal = 1,
		.step_fields = LKS_WALK_LOSS | LKS_WALK_GRAD_NORM | LKS_WALK_LR,
		.label_a = "the run", .label_b = "the golden file",
	};

	res->note[0] = 0;
	if (lks_cmp_header(run, gold, res))
		return 0;
	return lks_walk(&o, run, gold, res, NULL);
}

int lks_golden_compare_steps(lks_stored_run *run, lks_stored_run *gold, double rtol,
                             double atol, lks_check_result *res)
{
	static const char *const metrics[] = { "loss", "grad_norm" };
	lks_walk_opts o = {
		.rtol = rtol, .atol = atol, .nan_equal = 1,
		.label_a = "the run", .label_b = "the golden file",
	};

	res->note[0] = 0;
	if (lks_cmp_header(run, gold, res))
		return 0;
	for (int i = 0; i < 2 && !res->failed; i++) {
		o.metric = lks_metric_find(metrics[i]);
		if (lks_walk(&o, run, gold, res, NULL))
			return -1;
	}
	return 0;
}
