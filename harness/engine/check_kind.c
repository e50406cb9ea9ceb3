/*
 * check_kind.c: the check-kind table and the metric table (see check_kind.h). Adding a
 * kind is one row here, its value of lks_check_kind and its function in verify/check.c;
 * the case parser, 'lockstep list' and 'lockstep bench detect' read it from here.
 */
#include "harness/engine/check_kind.h"

#include <stdio.h>
#include <string.h>

#include "harness/base/name.h"
#include "harness/engine/case.h"
#include "harness/store/trace_store.h"
#include "kernels/err.h"

static const lks_check_kind_info lks_check_kinds[] = {
	[LKS_CHECK_BITWISE] = {
		"bitwise", 2, 0, 0, "bit for bit",
		"every value and hash both runs traced is the same, bit for bit",
		{ "bitwise/golden" } },
	[LKS_CHECK_CLOSE] = {
		"close", 2, LKS_CK_METRIC | LKS_CK_TOL, 0, "{metric} rtol {rtol} atol {atol}",
		"a's metric is within atol + rtol |b| of b's at every step (NaN: never)",
		/* the loose check that loss curves get */
		{ "loss rtol 5%", "loss", 0.05 } },
	[LKS_CHECK_SQNR] = {
		"sqnr", 2, LKS_CK_FLOOR, LKS_CK_TRAINED, "SQNR >= {floor_db} dB",
		"the SQNR of a's all-reduced weight gradients against b's >= floor_db",
		/* 20 dB: a gradient error a tenth of the gradient */
		{ "sqnr 20 dB", .floor_db = 20.0 } },
	[LKS_CHECK_GOLDEN] = {
		"golden", 1, LKS_CK_TOL, 0, "rtol {rtol} atol {atol} off cpu",
		"a matches its golden file: bit for bit on cpu, else within rtol, atol",
		/* on the cpu backend a golden is met bit for bit, and one made from the clean
		   run holds the clean run's trace */
		{ .none = "the clean run's golden, bit for bit on cpu: see bitwise/golden" } },
	[LKS_CHECK_FINITE] = {
		"finite", 1, 0, 0, "",
		"no NaN or Inf in any traced value, loss or grad norm",
		{ "finite" } },
	[LKS_CHECK_RANKS_AGREE] = {
		"ranks_agree", 1, 0, LKS_CK_MAJORITY, "bit for bit",
		"every rank holds the same parameters at every step; under tp each tp group every "
		"traced tensor",
		{ "ranks_agree" } },
	[LKS_CHECK_RECOMPUTE] = {
		"recompute", 1, 0, LKS_CK_CHECKPOINT | LKS_CK_TRAINED, "bit for bit",
		"every recomputed activation equals the forward's (checkpoint = blocks)",
		{ "recompute" } },
	[LKS_CHECK_RESUME] = {
		"resume", 2, 0, LKS_CK_RESUMED | LKS_CK_TRAINED, "bit for bit from b's first step",
		"b, resumed from a's state after a step (resume_from), equals a bit for bit at "
		"every step after it",
		{ .none = "it holds a resumed run against the run it resumed from, not a faulty run "
		  "against a clean one" } },
};

_Static_assert(sizeof(lks_check_kinds) / sizeof(lks_check_kinds[0]) == LKS_CHECK_COUNT,
               "one row per lks_check_kind");

const lks_check_kind_info *lks_check_kind_of(lks_check_kind k)
{
	return (unsigned)k < LKS_CHECK_COUNT ? &lks_check_kinds[k] : NULL;
}

const char *lks_check_kind_name(lks_check_kind k)
{
	const lks_check_kind_info *row = lks_check_kind_of(k);

	return row ? row->name : "?";
}

int lks_check_kind_nruns(lks_check_kind k)
{
	const lks_check_kind_info *row = lks_check_kind_of(k);

	return row ? row->nruns : 1;
}

const char *lks_check_kind_names(char *buf, size_t size)
{
	return lks_names_join(lks_check_kinds, sizeof(lks_check_kinds[0]),
	                      offsetof(lks_check_kind_info, name), LKS_CHECK_COUNT, buf, size);
}

int lks_check_kind_parse(const char *s, lks_check_kind *out)
{
	char list[256];

	for (int i = 0; i < LKS_CHECK_COUNT; i++)
		if (strcmp(s, lks_check_kinds[i].name) == 0) {
			*out = (lks_check_kind)i;
			return 0;
		}
	return lks_err("unknown check kind '%s' (%s)", s, lks_check_kind_names(list, sizeof(list)));
}

const char *lks_check_kind_shown(const lks_check_cfg *k, char *buf, size_t size)
{
	static const char *const keys[] = { "{metric}", "{rtol}", "{atol}", "{floor_db}" };
	const lks_check_kind_info *row = lks_check_kind_of(k->kind);
	const char *p = row ? row->shown : "";
	size_t len = 0;

#define LKS_ADD(...) (len += (size_t)snprintf(buf + len, len < size ? size - len : 0, __VA_ARGS__))
	buf[0] = 0;
	while (*p) {
		size_t n = strcspn(p, "{");
		int i = 0;

		LKS_ADD("%.*s", (int)n, p);
		if (!*(p += n))
			break;
		while (i < 4 && strncmp(p, keys[i], strlen(keys[i])))
			i++;
		if (i == 0 && k->tensors[0])
			LKS_ADD("%s of %s", k->metric, k->tensors);
		else if (i == 0)
			LKS_ADD("%s", k->metric);
		else if (i < 4)
			LKS_ADD("%g", i == 1 ? k->rtol : i == 2 ? k->atol : k->floor_db);
		else  /* not a key: shown as it is */
			LKS_ADD("{");
		p += i < 4 ? strlen(keys[i]) : 1;
	}
#undef LKS_ADD
	return buf;
}

/* ---- the metrics of close ---- */

static const lks_metric lks_metrics[] = {
	{ "loss", LKS_METRIC_STEP_MEAN, offsetof(lks_step_row, loss), 0, 0,
	  "the step's loss, the mean over ranks" },
	{ "grad_norm", LKS_METRIC_STEP_GLOBAL, offsetof(lks_step_row, grad_norm), 0, 0,
	  "the global gradient norm before clipping" },
	{ "l2", LKS_METRIC_TENSOR, offsetof(lks_stat_row, l2), 0, 0,
	  "each tensor's L2 norm, per rank" },
	{ "amax", LKS_METRIC_TENSOR, offsetof(lks_stat_row, amax), 1, 0,
	  "each tensor's largest magnitude, per rank" },
	{ "scale", LKS_METRIC_TENSOR, offsetof(lks_stat_row, scale), 1, 1,
	  "each FP8 operand's smallest scale, per rank" },
};

#define LKS_NMETRICS ((int)(sizeof(lks_metrics) / sizeof(lks_metrics[0])))

const lks_metric *lks_metric_at(int i)
{
	return i >= 0 && i < LKS_NMETRICS ? &lks_metrics[i] : NULL;
}

const lks_metric *lks_metric_find(const char *name)
{
	for (int i = 0; i < LKS_NMETRICS; i++)
		if (strcmp(name, lks_metrics[i].name) == 0)
			return &lks_metrics[i];
	return NULL;
}

const char *lks_metric_names(char *buf, size_t size)
{
	return lks_names_join(lks_metrics, sizeof(lks_metrics[0]), offsetof(lks_metric, name),
	                      LKS_NMETRICS, buf, size);
}
