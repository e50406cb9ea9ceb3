/*
 * gpu_health.c: GPU health around a run, from NVML into the health table
 * (harness/store/gpu_health.h): the GPUs each process used, read there, gathered to
 * process 0 and stored by it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/store/gpu_health.h"
#include "kernels/err.h"

#define LKS_TERMINATE(s) ((s)[sizeof(s) - 1] = '\0')

void lks_gpu_health_reset(lks_gpu_health *g)
{
	memset(g, 0, sizeof(*g));
}

/* rank appended to the list of u's ranks; a list too long for it ends in ",..." (room
   for which is always left) */
static void lks_gpu_add_rank(lks_gpu_used *u, int rank)
{
	size_t len = strlen(u->ranks), room = sizeof(u->ranks) - len;
	char r[16];

	if (len >= 3 && !strcmp(u->ranks + len - 3, "..."))
		return;
	snprintf(r, sizeof(r), "%s%d", len ? "," : "", rank);
	if (strlen(r) + sizeof(",...") <= room)
		memcpy(u->ranks + len, r, strlen(r) + 1);
	else
		snprintf(u->ranks + len, room, ",...");
}

int lks_gpu_health_use(lks_gpu_health *g, const char *uuid, int ordinal, int rank,
                       const char *host)
{
	lks_gpu_used *u = NULL;

	if (!uuid || !*uuid)
		return 0;
	for (int i = 0; i < g->ndev && !u; i++)
		if (!strcmp(g->used[i].uuid, uuid))
			u = &g->used[i];
	if (!u) {
		if (g->ndev == LKS_NVML_MAX_DEVICES)
			return lks_err("GPU health: more than %d GPUs in one process: '%s' (rank %d) "
			               "is not read", LKS_NVML_MAX_DEVICES, uuid, rank);
		u = &g->used[g->ndev++];
		snprintf(u->uuid, sizeof(u->uuid), "%s", uuid);
		snprintf(u->host, sizeof(u->host), "%s", host ? host : "");
		u->ordinal = ordinal;
	}
	lks_gpu_add_rank(u, rank);
	return 0;
}

void lks_gpu_health_before(lks_nvml *h, lks_gpu_health *g)
{
	const char *uuids[LKS_NVML_MAX_DEVICES];
	lks_nvml_xid old[LKS_GPU_HEALTH_XIDS];
	int n;

	if (g->ndev == 0)
		return;
	if (!lks_nvml_present(h)) {
		snprintf(g->absent, sizeof(g->absent), "%s", lks_nvml_reason(h));
		return;
	}
	for (int i = 0; i < g->ndev; i++)
		uuids[i] = g->used[i].uuid;
	lks_nvml_select(h, uuids, g->ndev);  /* ndev is within its bound */
	do
		lks_nvml_poll_xid(h, old, LKS_GPU_HEALTH_XIDS, &n);
	while (n == LKS_GPU_HEALTH_XIDS);
	lks_nvml_snapshot(h, &g->before);
}

void lks_gpu_health_after(lks_nvml *h, lks_gpu_health *g)
{
	if (g->ndev == 0 || g->absent[0])
		return;
	lks_nvml_poll_xid(h, g->xid, LKS_GPU_HEALTH_XIDS, &g->nxid);
	lks_nvml_snapshot(h, &g->after);
}

/* What came from another process kept within its bounds (the same build sent it, so
   this only guards the reader) */
static void lks_gpu_health_bound(lks_gpu_health *g)
{
	lks_nvml_snap *snaps[] = { &g->before, &g->after };

	if (g->ndev < 0 || g->ndev > LKS_NVML_MAX_DEVICES)
		g->ndev = 0;
	if (g->nxid < 0 || g->nxid > LKS_GPU_HEALTH_XIDS)
		g->nxid = 0;
	LKS_TERMINATE(g->absent);
	for (int i = 0; i < g->ndev; i++) {
		LKS_TERMINATE(g->used[i].uuid);
		LKS_TERMINATE(g->used[i].ranks);
		LKS_TERMINATE(g->used[i].host);
	}
	for (int p = 0; p < 2; p++) {
		if (snaps[p]->ndev < 0 || snaps[p]->ndev > g->ndev)
			snaps[p]->ndev = 0;
		for (int i = 0; i < snaps[p]->ndev; i++) {
			LKS_TERMINATE(snaps[p]->dev[i].name);
			LKS_TERMINATE(snaps[p]->dev[i].uuid);
			LKS_TERMINATE(snaps[p]->dev[i].errors);
		}
	}
}

int lks_gpu_health_gather(lks_comm *job, const lks_gpu_health *g, lks_gpu_health **all,
                          int *n)
{
	size_t *counts = NULL;
	void *out = NULL;
	int root = !job || job->rank == LKS_COMM_ROOT, rc = -1;

	*all = NULL;
	*n = 0;
	if (!job) {
		if (!(*all = malloc(sizeof(**all))))
			return lks_err("out of memory");
		**all = *g;
		*n = 1;
		return 0;
	}
	/* a collective: a root that cannot take part ends the others' wait */
	if (root && !(counts = calloc((size_t)job->size, sizeof(*counts)))) {
		lks_comm_abort(job, "process 0 is out of memory");
		return lks_err("out of memory");
	}
	if (lks_comm_gather(job, g, sizeof(*g), &out, counts))
		goto out;
	for (int p = 0; root && p < job->size; p++)
		if (counts[p] != sizeof(*g)) {
			lks_err("GPU health: process %d sent %zu bytes, not %zu", p, counts[p],
			        sizeof(*g));
			goto out;
		}
	if (root) {
		*all = out;
		*n = job->size;
		out = NULL;
		for (int p = 0; p < *n; p++)
			lks_gpu_health_bound(&(*all)[p]);
	}
	rc = 0;
out:
	free(out);
	free(counts);
	return rc;
}

/* ---- the rows and findings of every process, on process 0 ---- */

/* The rows of one process's GPUs in one phase, numbered from base: which GPU (ordinal,
   uuid, ranks, host), then NVML's name, PCI bus id and serial (those it gave), every
   reading there is (one row per key: a key added to nvml.h is a new row, no new column)
   and NVML's errors; or,
   without NVML, which GPU and the one 'absent' row (why: its text). Rows point into g. */
static int lks_gpu_health_rows(const lks_gpu_health *g, const lks_nvml_snap *snap,
                               int base, const char *phase, const char *why,
                               lks_health_row *rows, int cap)
{
	int n = 0;

	for (int i = 0; i < g->ndev; i++) {
		const lks_gpu_used *u = &g->used[i];
		const lks_nvml_device *d = i < snap->ndev && !g->absent[0] ? &snap->dev[i] : NULL;
		int dev = base + i;

		if (u->ordinal >= 0 && n < cap)
			rows[n++] = (lks_health_row){ phase, dev, "cuda_ordinal", u->ordinal, NULL };
		if (n + 3 <= cap) {
			rows[n++] = (lks_health_row){ phase, dev, "uuid", 0, u->uuid };
			rows[n++] = (lks_health_row){ phase, dev, "ranks", 0, u->ranks };
			rows[n++] = (lks_health_row){ phase, dev, "host", 0, u->host };
		}
		if (!d)
			continue;
		if (d->name[0] && n < cap)
			rows[n++] = (lks_health_row){ phase, dev, "name", 0, d->name };
		if (d->pci[0] && n < cap)
			rows[n++] = (lks_health_row){ phase, dev, "pci", 0, d->pci };
		if (d->serial[0] && n < cap)
			rows[n++] = (lks_health_row){ phase, dev, "serial", 0, d->serial };
		for (int k = 0; k < LKS_NVML_NKEYS && n < cap; k++)
			if (d->v[k] != LKS_NVML_NONE)
				rows[n++] = (lks_health_row){ phase, dev, lks_nvml_key_name(k), d->v[k], NULL };
		if (d->errors[0] && n < cap)
			rows[n++] = (lks_health_row){ phase, dev, "errors", 0, d->errors };
	}
	if (g->ndev && g->absent[0] && n < cap)
		rows[n++] = (lks_health_row){ .phase = phase, .device = -1, .key = "absent",
		                              .text = why };
	return n;
}

/* Both phases of every process's GPUs, or the run's 'no_gpu' rows; whys[p]: process p's
   'absent' text, kept until the rows are stored. */
static int lks_gpu_health_put(lks_store *s, int64_t run_id, const lks_gpu_health *all,
                              int n, char (*whys)[400])
{
	static const char *const phases[] = { "before", "after" };
	int total = 0, cap, nrows = 0, rc;
	lks_health_row *rows;

	for (int p = 0; p < n; p++)
		total += all[p].ndev;
	if (total == 0) {
		const lks_health_row none[] = {
			{ .phase = "before", .device = -1, .key = "no_gpu", .text = "the run used no GPU" },
			{ .phase = "after", .device = -1, .key = "no_gpu", .text = "the run used no GPU" },
		};

		return lks_store_health(s, run_id, none, 2);
	}
	/* per GPU: cuda_ordinal, uuid, ranks, host, name, pci, serial, errors and the readings;
	   per process one 'absent'; both phases */
	cap = 2 * (total * (LKS_NVML_NKEYS + 8) + n);
	if (!(rows = malloc((size_t)cap * sizeof(*rows))))
		return lks_err("out of memory");
	for (int ph = 0; ph < 2; ph++)
		for (int p = 0, base = 0; p < n; base += all[p++].ndev) {
			const lks_gpu_health *g = &all[p];

			snprintf(whys[p], sizeof(whys[p]), "%s (host %s)", g->absent,
			         g->ndev ? g->used[0].host : "?");
			nrows += lks_gpu_health_rows(g, ph ? &g->after : &g->before, base, phases[ph],
			                             whys[p], rows + nrows, cap - nrows);
		}
	rc = lks_store_health(s, run_id, rows, nrows);
	free(rows);
	return rc;
}

/* The findings of every process's GPUs into buf, each GPU named by its CUDA ordinal,
   UUID, ranks and host; returns their number. */
static int lks_gpu_health_findings(const lks_gpu_health *all, int n, char *buf, size_t size)
{
	char names[LKS_NVML_MAX_DEVICES][200];
	const char *np[LKS_NVML_MAX_DEVICES];
	size_t len = 0;
	int found = 0;

	if (size)
		buf[0] = '\0';
	for (int p = 0; p < n && len + 1 < size; p++) {
		const lks_gpu_health *g = &all[p];
		char ord[16] = "";

		if (g->ndev == 0 || g->absent[0])
			continue;
		for (int i = 0; i < g->ndev; i++) {
			const lks_gpu_used *u = &g->used[i];

			if (u->ordinal >= 0)
				snprintf(ord, sizeof(ord), "%d ", u->ordinal);
			snprintf(names[i], sizeof(names[i]), "gpu %s%s (rank%s %s on %s)", ord, u->uuid,
			         strchr(u->ranks, ',') ? "s" : "", u->ranks, u->host);
			np[i] = names[i];
			ord[0] = '\0';
		}
		found += lks_nvml_findings(&g->before, &g->after, g->xid, g->nxid, np, buf + len,
		                           size - len);
		len = strlen(buf);
	}
	return found;
}

/* Each line of text (the findings) as an event of the run. */
static int lks_gpu_health_events(lks_store *s, int64_t run_id, const char *text)
{
	char line[256];

	for (const char *p = text, *end; *p; p = *end ? end + 1 : end) {
		if (!(end = strchr(p, '\n')))
			end = p + strlen(p);
		snprintf(line, sizeof(line), "%.*s", (int)(end - p), p);
		if (lks_store_event(s, run_id, -1, -1, NULL, "gpu_health", line))
			return -1;
	}
	return 0;
}

int lks_gpu_health_store(lks_store *s, int64_t run_id, const lks_gpu_health *all, int n,
                         char *buf, size_t size)
{
	char (*whys)[400] = calloc(n > 0 ? (size_t)n : 1, sizeof(*whys));
	int rc = -1;

	if (size)
		buf[0] = '\0';
	if (!whys) {
		lks_err("out of memory");
		goto out;
	}
	if (lks_gpu_health_put(s, run_id, all, n, whys))
		goto out;
	if (lks_gpu_health_findings(all, n, buf, size) && lks_gpu_health_events(s, run_id, buf))
		goto out;
	rc = 0;
out:
	free(whys);
	return rc;
}
