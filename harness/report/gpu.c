/*
 * gpu.c: a case's GPU health and GEMM algorithms in the report. Beside the checks: each
 * GPU health finding of a run (events of kind 'gpu_health', which gpu_health.c stores when
 * ECC, retired pages or remapped rows rose, or an XID came, during the run), counted in
 * the summary too; the readings before and after each run (temperature, power, memory),
 * each GPU named by its CUDA ordinal and UUID (in a database from before the run's GPUs
 * were matched by UUID, by the number it was stored under: NVML's index); where NVML was
 * absent, why; which runs used no GPU. And the algorithms cuBLASLt ran each run's GEMMs with (the
 * gemm_algos table), or the fallback and its reason. Everything is read through the
 * store's functions (trace_store.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/report/report_impl.h"
#include "kernels/err.h"

/* ---- findings ---- */

struct lks_findings {
	struct lks_report *r;
	const char *run_name;
	int n;                    /* findings seen */
	int show;                 /* 1: a row for each */
};

static int lks_finding_row(void *arg, const lks_event_rec *ev)
{
	static const char *const cls[] = { NULL, "fail", NULL };
	struct lks_findings *f = arg;
	const char *cells[3];

	if (strcmp(ev->kind, "gpu_health") != 0)
		return 0;
	if (f->show) {
		cells[0] = f->run_name;
		cells[1] = "gpu health";
		cells[2] = ev->message ? ev->message : "";
		lks_row(f->r, "bad", cells, cls, 3);
	}
	f->n++;
	return 0;
}

int lks_gpu_findings(struct lks_report *r, const lks_stored_run *run, int *n)
{
	struct lks_findings f = { .r = r, .run_name = run->run_name };

	if (lks_store_get_events(r->s, run->id, lks_finding_row, &f))
		return -1;
	*n = f.n;
	return 0;
}

/* The findings of the case's runs as rows of one table, none when there are none. */
static int lks_case_findings(struct lks_report *r, const char *case_name)
{
	static const char *const heads[] = { "run", "finding", "what happened during the run" };
	int total = 0;

	for (int i = 0; i < r->nruns; i++) {
		const lks_stored_run *run = &r->runs[i];
		struct lks_findings f = { .r = r, .run_name = run->run_name, .show = 1 };
		int n;

		if (strcmp(run->case_name, case_name) != 0)
			continue;
		if (lks_gpu_findings(r, run, &n))
			return -1;
		if (n == 0)
			continue;
		if (total == 0)
			lks_table_head(r, heads, 3);
		if (lks_store_get_events(r->s, run->id, lks_finding_row, &f))
			return -1;
		total += n;
	}
	if (total)
		lks_table_end(r);
	return 0;
}

/* ---- readings ---- */

/* The readings shown, before and after a run, and how each is written. */
static const struct {
	const char *key, *label;
	double div;               /* the stored value / div is shown */
	const char *fmt;
} lks_shown[] = {
	{ "temperature_c", "temperature (C)", 1.0, "%.0f" },
	{ "power_mw", "power (W)", 1000.0, "%.1f" },
	{ "memory_used", "memory used (MiB)", 1048576.0, "%.0f" },
	{ "memory_total", "memory total (MiB)", 1048576.0, "%.0f" },
};
#define LKS_NSHOWN ((int)(sizeof(lks_shown) / sizeof(lks_shown[0])))
/* GPUs of a run shown: a run's readings are 4 table rows per GPU, and a run on more
   GPUs than this says how many more it had */
#define LKS_GPU_DEVICES 256

struct lks_readings {
	int64_t v[2][LKS_GPU_DEVICES][LKS_NSHOWN];  /* [after][device][shown] */
	int have[2][LKS_GPU_DEVICES][LKS_NSHOWN];
	int ndev;                                   /* devices shown: the highest index + 1 */
	int beyond;                                 /* the highest index + 1 of those not */
	char uuid[LKS_GPU_DEVICES][48];
	int ordinal[LKS_GPU_DEVICES];               /* CUDA's; -1: not said */
	int matched[LKS_GPU_DEVICES];               /* 1: a GPU of the run, matched by UUID (it
	                                               has a ranks row); 0: stored by NVML's index */
	char absent[512];                           /* why NVML was absent; "" when present */
	int no_gpu;                                 /* the run used no GPU */
};

/* A text row: which GPU a device is, why NVML was absent (each reason once), no GPU */
static void lks_reading_text(struct lks_readings *x, const lks_health_row *row)
{
	size_t len = strlen(x->absent);

	if (!strcmp(row->key, "absent") && !strstr(x->absent, row->text))
		snprintf(x->absent + len, sizeof(x->absent) - len, "%s%s", len ? "; " : "", row->text);
	else if (!strcmp(row->key, "no_gpu"))
		x->no_gpu = 1;
	else if (row->device < 0 || row->device >= LKS_GPU_DEVICES)
		return;
	else if (!strcmp(row->key, "uuid"))
		snprintf(x->uuid[row->device], sizeof(x->uuid[0]), "%s", row->text);
	else if (!strcmp(row->key, "ranks"))
		x->matched[row->device] = 1;
}

static int lks_reading(void *arg, const lks_health_row *row)
{
	struct lks_readings *x = arg;
	int after = strcmp(row->phase, "after") == 0;

	if (row->text) {
		lks_reading_text(x, row);
		return 0;
	}
	if (row->device >= LKS_GPU_DEVICES && row->device >= x->beyond)
		x->beyond = row->device + 1;
	if (row->device < 0 || row->device >= LKS_GPU_DEVICES)
		return 0;
	if (strcmp(row->key, "cuda_ordinal") == 0)
		x->ordinal[row->device] = (int)row->value;
	for (int k = 0; k < LKS_NSHOWN; k++)
		if (strcmp(row->key, lks_shown[k].key) == 0) {
			x->v[after][row->device][k] = row->value;
			x->have[after][row->device][k] = 1;
			if (row->device >= x->ndev)
				x->ndev = row->device + 1;
		}
	return 0;
}

/* Device d as the readings name it: CUDA ordinal and UUID, or the number it was stored
   under where it was not matched by UUID (NVML's index, in an older database) */
static void lks_reading_gpu(const struct lks_readings *x, int d, char *buf, size_t size)
{
	if (!x->matched[d])
		snprintf(buf, size, "%d", d);
	else if (x->ordinal[d] >= 0)
		snprintf(buf, size, "%d %s", x->ordinal[d], x->uuid[d]);
	else
		snprintf(buf, size, "%s", x->uuid[d]);
}

/* The rows of one run's readings, the table begun before the first of the case's (*any) */
static void lks_run_readings(struct lks_report *r, const char *run_name,
                             const struct lks_readings *x, int *any)
{
	static const char *const heads[] = { "run", "gpu", "reading", "before", "after" };
	static const char *const cls[] = { NULL, "mono", NULL, "num", "num" };

	for (int d = 0; d < x->ndev; d++)
		for (int k = 0; k < LKS_NSHOWN; k++) {
			char dev[80], b[32], a[32];
			const char *cells[5] = { run_name, dev, lks_shown[k].label, b, a };

			if (!x->have[0][d][k] && !x->have[1][d][k])
				continue;
			if (!(*any)++)
				lks_table_head(r, heads, 5);
			lks_reading_gpu(x, d, dev, sizeof(dev));
			snprintf(b, sizeof(b), x->have[0][d][k] ? lks_shown[k].fmt : "",
			         (double)x->v[0][d][k] / lks_shown[k].div);
			snprintf(a, sizeof(a), x->have[1][d][k] ? lks_shown[k].fmt : "",
			         (double)x->v[1][d][k] / lks_shown[k].div);
			lks_row(r, NULL, cells, cls, 5);
		}
}

/* The paragraphs of one run: NVML absent and why, GPUs beyond those shown */
static void lks_run_notes(struct lks_report *r, const char *run_name,
                          const struct lks_readings *x)
{
	char line[640];

	if (x->absent[0]) {
		snprintf(line, sizeof(line), "run %s: NVML absent: %s", run_name, x->absent);
		lks_para(r, 1, line);
	}
	if (x->beyond) {
		snprintf(line, sizeof(line), "run %s: the readings of its GPUs %d to %d are not "
		         "shown", run_name, LKS_GPU_DEVICES, x->beyond - 1);
		lks_para(r, 1, line);
	}
}

/* The readings of run into x */
static int lks_health_load(struct lks_report *r, const lks_stored_run *run,
                           struct lks_readings *x)
{
	memset(x, 0, sizeof(*x));
	for (int d = 0; d < LKS_GPU_DEVICES; d++)
		x->ordinal[d] = -1;
	return lks_store_get_health(r->s, run->id, lks_reading, x);
}

/* One row per run, device and reading; after the table, a paragraph per run where NVML
   was absent, and one naming the runs that used no GPU. */
static int lks_case_readings(struct lks_report *r, const char *case_name)
{
	struct lks_readings *x = malloc(sizeof(*x));
	int any = 0, notes = 0, no_gpu = 0, rc = -1;
	char unused[400] = "", line[480];

	if (!x)
		return lks_err("out of memory");
	for (int i = 0; i < r->nruns; i++)
		if (!strcmp(r->runs[i].case_name, case_name)) {
			if (lks_health_load(r, &r->runs[i], x))
				goto out;
			lks_run_readings(r, r->runs[i].run_name, x, &any);
		}
	if (any)
		lks_table_end(r);
	for (int i = 0; i < r->nruns; i++) {
		size_t len = strlen(unused);

		if (strcmp(r->runs[i].case_name, case_name))
			continue;
		if (lks_health_load(r, &r->runs[i], x))
			goto out;
		lks_run_notes(r, r->runs[i].run_name, x);
		notes += x->absent[0] || x->beyond;
		/* the runs that used no GPU are named together, the first 8 of them */
		if (x->no_gpu && no_gpu < 8)
			snprintf(unused + len, sizeof(unused) - len, "%s%s", len ? ", " : "",
			         r->runs[i].run_name);
		else if (x->no_gpu && no_gpu == 8)
			snprintf(unused + len, sizeof(unused) - len, ", ...");
		no_gpu += x->no_gpu;
	}
	if (no_gpu) {
		snprintf(line, sizeof(line), "run%s %s used no GPU: no GPU health is read for %s",
		         no_gpu > 1 ? "s" : "", unused, no_gpu > 1 ? "them" : "it");
		lks_para(r, 1, line);
	}
	if (!any && !notes && !no_gpu)
		lks_para(r, 1, "no GPU health stored for the runs of this case");
	rc = 0;
out:
	free(x);
	return rc;
}

int lks_case_gpu_health(struct lks_report *r, const char *case_name)
{
	return lks_case_findings(r, case_name) || lks_case_readings(r, case_name) ? -1 : 0;
}

/* ---- GEMM algorithms ---- */

struct lks_algos {
	struct lks_report *r;
	const char *run_name;
	int n;                    /* rows written so far, of every run */
};

static int lks_algo_row(void *arg, const lks_gemm_algo *p)
{
	static const char *const heads[] = { "run", "role", "m n k", "types a b c", "scaling a b",
	                                     "fast accum", "algo", "tile", "stages", "split-K",
	                                     "reduction", "gemms", "fallback" };
	static const char *const cls[] = { NULL, NULL, "num", "mono", NULL, NULL, "num", "num",
	                                   "num", "num", "num", "num", NULL };
	struct lks_algos *x = arg;
	char mnk[64], types[48], scaling[48], id[16], tile[16], stages[16], splitk[16], red[16];
	char gemms[24];
	const char *cells[13];

	if (x->n++ == 0) {
		lks_heading(x->r, 3, "cuBLASLt algorithms");
		lks_table_head(x->r, heads, 13);
	}
	snprintf(mnk, sizeof(mnk), "%d %d %d", p->M, p->N, p->K);
	snprintf(types, sizeof(types), "%s %s %s", lks_dtype_name(p->a), lks_dtype_name(p->b),
	         lks_dtype_name(p->out));
	snprintf(scaling, sizeof(scaling), "%s %s", lks_scaling_name(p->scaling_a),
	         lks_scaling_name(p->scaling_b));
	snprintf(id, sizeof(id), p->fallback ? "" : "%" PRId32, p->algo);
	snprintf(tile, sizeof(tile), p->fallback ? "" : "%" PRIu32, p->tile);
	snprintf(stages, sizeof(stages), p->fallback ? "" : "%" PRIu32, p->stages);
	snprintf(splitk, sizeof(splitk), p->fallback ? "" : "%" PRId32, p->splitk);
	snprintf(red, sizeof(red), p->fallback ? "" : "%" PRIu32, p->reduction);
	snprintf(gemms, sizeof(gemms), "%" PRId64, p->gemms);
	cells[0] = x->run_name;
	cells[1] = lks_gemm_role_name(p->role);
	cells[2] = mnk;
	cells[3] = types;
	cells[4] = scaling;
	cells[5] = p->fast_accum ? "yes" : "no";
	cells[6] = id;
	cells[7] = tile;
	cells[8] = stages;
	cells[9] = splitk;
	cells[10] = red;
	cells[11] = gemms;
	cells[12] = p->fallback ? p->reason : "";
	lks_row(x->r, p->fallback ? "bad" : NULL, cells, cls, 13);
	return 0;
}

/* A table of the algorithms, under its heading, where a run of the case has one. */
int lks_case_gemm_algos(struct lks_report *r, const char *case_name)
{
	struct lks_algos x = { .r = r };

	for (int i = 0; i < r->nruns; i++) {
		if (strcmp(r->runs[i].case_name, case_name) != 0)
			continue;
		x.run_name = r->runs[i].run_name;
		if (lks_store_get_gemm_plans(r->s, r->runs[i].id, lks_algo_row, &x))
			return -1;
	}
	if (x.n)
		lks_table_end(r);
	return 0;
}
