/*
 * screen.c: the node's screen in the report ('lockstep screen --db', table screens). The
 * screen shown beside a suite is the latest the database kept before the next suite
 * started (any, for the latest suite): a nightly that screens before or after its run
 * shows that night's screen, and a report of a database with screens and no suite is the
 * latest screen alone. From its JSON document (harness/cli/screen_out.c): when, where and
 * how it ran; a row per device with its identity as operators name it (index, name, UUID,
 * PCI bus id, serial), its verdict and time, what NVML saw worsen; for each device that
 * did not pass, its first divergence with both values' bits and the replay's class; the
 * readings before and after; the run across the GPUs. A document that cannot be read is
 * said so on the page, not an error of the report.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "harness/base/status.h"
#include "harness/report/report_impl.h"
#include "kernels/err.h"

/* A member's text: a string as it is, a number or true/false written, "" otherwise. */
static const char *lks_jtext(json_t *o, const char *key, char *buf, size_t n)
{
	json_t *v = json_object_get(o, key);

	if (json_is_string(v))
		return json_string_value(v);
	if (json_is_integer(v))
		snprintf(buf, n, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		snprintf(buf, n, "%.2f", json_real_value(v));
	else if (json_is_boolean(v))
		snprintf(buf, n, "%s", json_is_true(v) ? "yes" : "no");
	else
		buf[0] = 0;
	return buf;
}

static int lks_dev_passed(json_t *d)
{
	const char *v = json_string_value(json_object_get(d, "verdict"));

	return v && !strcmp(v, "pass");
}

/* index, name, uuid, pci bus id, serial, verdict, seconds, known answer, NVML's findings */
static void lks_screen_devices(struct lks_report *r, json_t *gpus)
{
	static const char *const heads[] = { "device", "name", "uuid", "pci bus id", "serial",
	                                     "verdict", "seconds", "known answer",
	                                     "NVML during the screen" };
	static const char *const keys[] = { "index", "name", "uuid", "pci_bus_id", "serial",
	                                    "verdict", "seconds", "known_answer" };
	static const char *const cls[] = { "num", NULL, "mono", "mono", "mono", NULL, "num",
	                                   NULL, NULL };
	size_t i;
	json_t *d;

	lks_table_head(r, heads, 9);
	json_array_foreach(gpus, i, d) {
		char buf[9][96];
		const char *cells[9];
		json_t *nv = json_object_get(d, "readings");

		for (int k = 0; k < 8; k++)
			cells[k] = lks_jtext(d, keys[k], buf[k], sizeof(buf[k]));
		if (json_is_true(json_object_get(d, "standin")))
			cells[1] = "CPU stand-in";
		cells[8] = json_is_object(nv) ? lks_jtext(nv, "findings", buf[8], sizeof(buf[8]))
		           : "no NVML";
		if (json_is_object(nv) && !cells[8][0])
			cells[8] = "nothing worsened";
		lks_row(r, lks_dev_passed(d) ? NULL : "bad", cells, cls, 9);
	}
	lks_table_end(r);
}

/* A row per device that did not pass: where it departed, both values' bits, the replay. */
static void lks_screen_departures(struct lks_report *r, json_t *gpus)
{
	static const char *const heads[] = { "device", "verdict", "first divergence",
	                                     "device's bits", "known bits", "replay",
	                                     "the replay saw" };
	static const char *const cls[] = { "num", NULL, NULL, "mono", "mono", NULL, NULL };
	int any = 0;
	size_t i;
	json_t *d;

	json_array_foreach(gpus, i, d) {
		json_t *div = json_object_get(d, "divergence"), *rep = json_object_get(d, "replay");
		char buf[7][96];
		const char *cells[7];

		if (lks_dev_passed(d))
			continue;
		if (!any++)
			lks_table_head(r, heads, 7);
		cells[0] = lks_jtext(d, "index", buf[0], sizeof(buf[0]));
		cells[1] = lks_jtext(d, "verdict", buf[1], sizeof(buf[1]));
		cells[2] = json_is_object(div) ? lks_jtext(div, "words", buf[2], sizeof(buf[2]))
		           : lks_jtext(d, "error", buf[2], sizeof(buf[2]));
		cells[3] = lks_jtext(div, "device_bits", buf[3], sizeof(buf[3]));
		cells[4] = lks_jtext(div, "known_bits", buf[4], sizeof(buf[4]));
		cells[5] = lks_jtext(rep, "class", buf[5], sizeof(buf[5]));
		cells[6] = lks_jtext(rep, "words", buf[6], sizeof(buf[6]));
		lks_row(r, "bad", cells, cls, 7);
	}
	if (any)
		lks_table_end(r);
}

/* The readings shown, before and after, as the document names them. */
static const struct {
	const char *key, *label;
	double div;
} lks_screen_shown[] = {
	{ "temperature_c", "temperature (C)", 1.0 },
	{ "power_mw", "power (W)", 1000.0 },
	{ "clock_sm_mhz", "SM clock (MHz)", 1.0 },
	{ "clock_mem_mhz", "memory clock (MHz)", 1.0 },
	{ "ecc_uncorrected", "ECC uncorrected", 1.0 },
	{ "remapped_uncorrected", "rows remapped (uncorrectable)", 1.0 },
};
#define LKS_SCREEN_NSHOWN ((int)(sizeof(lks_screen_shown) / sizeof(lks_screen_shown[0])))

static const char *lks_reading(json_t *readings, const char *when, int k, char *buf, size_t n)
{
	json_t *v = json_object_get(json_object_get(readings, when), lks_screen_shown[k].key);

	if (!json_is_integer(v))
		return "";
	snprintf(buf, n, "%.6g", (double)json_integer_value(v) / lks_screen_shown[k].div);
	return buf;
}

static void lks_screen_readings(struct lks_report *r, json_t *gpus)
{
	static const char *const heads[] = { "device", "reading", "before", "after" };
	static const char *const cls[] = { "num", NULL, "num", "num" };
	int any = 0;
	size_t i;
	json_t *d;

	json_array_foreach(gpus, i, d) {
		json_t *nv = json_object_get(d, "readings");
		char idx[32], b[32], a[32];

		for (int k = 0; json_is_object(nv) && k < LKS_SCREEN_NSHOWN; k++) {
			const char *cells[4] = { lks_jtext(d, "index", idx, sizeof(idx)),
			                         lks_screen_shown[k].label,
			                         lks_reading(nv, "before", k, b, sizeof(b)),
			                         lks_reading(nv, "after", k, a, sizeof(a)) };

			if (!cells[2][0] && !cells[3][0])
				continue;
			if (!any++)
				lks_table_head(r, heads, 4);
			lks_row(r, NULL, cells, cls, 4);
		}
	}
	if (any)
		lks_table_end(r);
}

/* The document's opening facts, and the run across the GPUs, in sentences. */
static void lks_screen_lines(struct lks_report *r, const lks_screen_rec *rec, json_t *doc)
{
	json_t *coll = json_object_get(doc, "collective");
	char b[6][96], line[1200];

	snprintf(line, sizeof(line), "screen %lld of host %s: mode %s, gemm %s, backend %s, "
	         "started %s, %s s; case %s. Result: %s.", (long long)rec->screen_id, rec->host,
	         rec->mode, lks_jtext(doc, "gemm", b[0], sizeof(b[0])),
	         lks_jtext(doc, "backend", b[1], sizeof(b[1])), rec->started,
	         lks_jtext(doc, "seconds", b[2], sizeof(b[2])),
	         lks_jtext(doc, "case", b[3], sizeof(b[3])), rec->result);
	lks_para(r, strcmp(rec->result, "pass") != 0, line);
	if (!json_is_object(coll) || !json_is_true(json_object_get(coll, "ran"))) {
		if (!strcmp(rec->mode, "full") && json_is_object(coll))
			snprintf(line, sizeof(line), "across the GPUs: not run: %s",
			         lks_jtext(coll, "words", b[4], sizeof(b[4])));
		else
			return;
	} else {
		snprintf(line, sizeof(line), "across the GPUs: %s: %s%s%s",
		         lks_jtext(coll, "verdict", b[4], sizeof(b[4])),
		         lks_jtext(coll, "words", b[5], sizeof(b[5])),
		         json_is_string(json_object_get(coll, "divergence")) ? "; " : "",
		         json_is_string(json_object_get(coll, "divergence"))
		         ? json_string_value(json_object_get(coll, "divergence")) : "");
	}
	lks_para(r, 0, line);
}

int lks_screen_section(struct lks_report *r, const char *before)
{
	lks_screen_rec rec;
	json_error_t jerr;
	json_t *doc, *gpus;
	char line[600];
	int rc = lks_store_get_screen(r->s, 0, before, &rec);

	if (rc == LKS_E_MISSING)
		return 0;
	if (rc)
		return -1;
	lks_heading(r, 2, "node screen");
	r->info->screen_id = rec.screen_id;
	doc = json_loads(rec.document, 0, &jerr);
	gpus = json_object_get(doc, "gpus");
	if (!json_is_array(gpus)) {
		snprintf(line, sizeof(line), "screen %lld (host %s, %s): its document cannot be read: "
		         "%s", (long long)rec.screen_id, rec.host, rec.started,
		         doc ? "it lists no devices" : jerr.text);
		lks_para(r, 1, line);
		r->info->screen_not_passed = -1;
	} else {
		size_t i;
		json_t *d;

		r->info->screen_devices = (int)json_array_size(gpus);
		json_array_foreach(gpus, i, d)
			r->info->screen_not_passed += !lks_dev_passed(d);
		lks_screen_lines(r, &rec, doc);
		lks_screen_devices(r, gpus);
		lks_screen_departures(r, gpus);
		lks_screen_readings(r, gpus);
	}
	json_decref(doc);
	lks_screen_rec_free(&rec);
	return 0;
}
