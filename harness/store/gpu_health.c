/*
 * gpu_health.c: GPU health around a run, from NVML into the health table
 * (harness/store/gpu_health.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/store/gpu_health.h"
#include "kernels/err.h"

#define LKS_XID_CAP 64   /* XIDs kept per run; a GPU that raises more is a finding anyway */

int lks_gpu_health_rows(const lks_nvml *h, const lks_nvml_snap *snap, const char *phase,
                        lks_health_row *rows, int cap)
{
	int n = 0;

	if (!lks_nvml_present(h)) {
		if (cap > 0)
			rows[n++] = (lks_health_row){ .phase = phase, .device = -1, .key = "absent",
			                              .text = lks_nvml_reason(h) };
		return n;
	}
	for (int i = 0; i < snap->ndev; i++) {
		const lks_nvml_device *d = &snap->dev[i];

		if (n < cap)
			rows[n++] = (lks_health_row){ phase, i, "name", 0, d->name };
		if (n < cap)
			rows[n++] = (lks_health_row){ phase, i, "uuid", 0, d->uuid };
		for (int k = 0; k < LKS_NVML_NKEYS && n < cap; k++)
			if (d->v[k] != LKS_NVML_NONE)
				rows[n++] = (lks_health_row){ phase, i, lks_nvml_key_name(k), d->v[k], NULL };
		if (d->errors[0] && n < cap)
			rows[n++] = (lks_health_row){ phase, i, "errors", 0, d->errors };
	}
	return n;
}

void lks_gpu_health_before(lks_nvml *h, lks_nvml_snap *before)
{
	lks_nvml_xid old[LKS_XID_CAP];
	int n;

	do
		lks_nvml_poll_xid(h, old, LKS_XID_CAP, &n);
	while (n == LKS_XID_CAP);
	lks_nvml_snapshot(h, before);
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

int lks_gpu_health_after(lks_nvml *h, lks_store *s, int64_t run_id,
                         const lks_nvml_snap *before, char *buf, size_t size)
{
	/* two phases of at most every device's name, uuid, readings and errors */
	enum { CAP = 2 * LKS_NVML_MAX_DEVICES * (LKS_NVML_NKEYS + 3) };
	lks_nvml_xid xids[LKS_XID_CAP];
	lks_health_row *rows = malloc(CAP * sizeof(*rows));
	lks_nvml_snap *after = malloc(sizeof(*after));
	int nxid = 0, n, rc = -1;

	if (size)
		buf[0] = '\0';
	if (!rows || !after) {
		lks_err("out of memory");
		goto out;
	}
	lks_nvml_poll_xid(h, xids, LKS_XID_CAP, &nxid);
	lks_nvml_snapshot(h, after);
	n = lks_gpu_health_rows(h, before, "before", rows, CAP);
	n += lks_gpu_health_rows(h, after, "after", rows + n, CAP - n);
	if (lks_store_health(s, run_id, rows, n))
		goto out;
	if (lks_nvml_findings(before, after, xids, nxid, buf, size)
	    && lks_gpu_health_events(s, run_id, buf))
		goto out;
	rc = 0;
out:
	free(rows);
	free(after);
	return rc;
}
