/*
 * screen_gpu.c: the GPUs of a screen named as operators name them, and read by NVML
 * (kernels/nvml/nvml.h): each device's UUID and name from its backend (describe, on a
 * context of its own, before any run), then NVML's view of it matched by that UUID, never
 * by index (NVML counts in PCI order and knows nothing of CUDA_VISIBLE_DEVICES): its
 * readings before the screen and after it, the XID events between, and what worsened.
 * Stand-ins have none of it. Absent NVML is said, never an error.
 */
#include "harness/probe/screen_impl.h"

#include <stdio.h>
#include <string.h>

#include "kernels/err.h"

static void lks_screen_put(void *arg, const char *key, const char *value)
{
	lks_screen_dev *d = arg;

	if (!strcmp(key, "uuid"))
		snprintf(d->uuid, sizeof(d->uuid), "%s", value);
	else if (!strcmp(key, "device"))
		snprintf(d->name, sizeof(d->name), "%s", value);
}

/* The device of snapshot entry k: the k-th GPU that has a UUID, in the screen's order. */
static lks_screen_dev *lks_screen_sel(struct lks_screen_ctx *x, int k)
{
	for (int i = 0; i < x->n; i++)
		if (!x->devs[i].standin && x->devs[i].uuid[0] && k-- == 0)
			return &x->devs[i];
	return NULL;
}

int lks_screen_identify(struct lks_screen_ctx *x)
{
	const char *uuids[LKS_SCREEN_MAX];
	int n = 0;

	for (int i = 0; i < x->n; i++) {
		lks_screen_dev *d = &x->devs[i];
		void *ctx;

		if (d->standin)
			continue;
		if (lks_be_open_rank(x->o->be, 1, d->index, &ctx)) {
			snprintf(d->error, sizeof(d->error), "its context cannot be opened: %s",
			         lks_errmsg());
			d->verdict = LKS_SCREEN_ERROR;
			continue;
		}
		lks_be_describe(x->o->be, ctx, lks_screen_put, d);
		lks_be_close(x->o->be, ctx);
		if (d->uuid[0])
			uuids[n++] = d->uuid;
	}
	if (n == 0)
		return 0;
	if (lks_nvml_open(NULL, &x->nvml))
		return -1;
	if (!lks_nvml_present(x->nvml))
		return 0;
	if (lks_nvml_select(x->nvml, uuids, n) || lks_nvml_snapshot(x->nvml, &x->before))
		return -1;
	x->nsel = n;
	for (int k = 0; k < x->before.ndev && k < n; k++) {  /* as operators name the board */
		lks_screen_dev *d = lks_screen_sel(x, k);

		snprintf(d->pci, sizeof(d->pci), "%s", x->before.dev[k].pci);
		snprintf(d->serial, sizeof(d->serial), "%s", x->before.dev[k].serial);
	}
	return 0;
}

int lks_screen_readings(struct lks_screen_ctx *x)
{
	lks_nvml_xid xids[64];
	int nxid = 0;
	char one[512];

	if (!x->nsel)
		return 0;
	if (lks_nvml_snapshot(x->nvml, &x->after) || lks_nvml_poll_xid(x->nvml, xids, 64, &nxid))
		return -1;
	for (int k = 0; k < x->after.ndev && k < x->nsel; k++) {
		lks_screen_dev *d = lks_screen_sel(x, k);
		lks_nvml_snap b = { 1, { x->before.dev[k] } }, a = { 1, { x->after.dev[k] } };
		lks_nvml_xid mine[64];
		int m = 0;

		if (!d)
			continue;
		for (int j = 0; j < nxid; j++)
			if (xids[j].device == k)
				mine[m++] = (lks_nvml_xid){ 0, xids[j].xid };
		d->nvml = 1;
		d->before = x->before.dev[k];
		d->after = x->after.dev[k];
		d->nxid = m;
		lks_nvml_findings(&b, &a, mine, m, NULL, one, sizeof(one));
		snprintf(d->findings, sizeof(d->findings), "%s", one);
	}
	return 0;
}
