/*
 * screen_out.c: 'lockstep screen' said (screen_out.h): a line per device, the node's JSON
 * document (in the spirit of 'dcgmi diag -j': per device its identity, verdict, first
 * divergence with both values and their bits, the replay's class) and JUnit (a testcase
 * per device). Both files are written aside and renamed into place.
 */
#include "harness/cli/screen_out.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "build_info.h"
#include "harness/base/atomic_file.h"
#include "harness/base/status.h"
#include "harness/report/junit.h"
#include "harness/store/trace_store.h"
#include "kernels/err.h"

/* "stand-in 2" or "gpu 2 (GPU-8d5e...)" */
static void lks_dev_title(const lks_screen_dev *d, char *buf, size_t n)
{
	if (d->standin)
		snprintf(buf, n, "stand-in %d", d->index);
	else
		snprintf(buf, n, "gpu %d (%s)", d->index, d->uuid[0] ? d->uuid : "no uuid");
}

/* The first divergence in words ("run 'fp8', step 3, tensor ...") or the error. */
static void lks_dev_why(const lks_screen_dev *d, char *buf, size_t n)
{
	char div[700];

	if (d->verdict == LKS_SCREEN_ERROR) {
		snprintf(buf, n, "%s", d->error);
		return;
	}
	if (d->verdict == LKS_SCREEN_UNDECIDED) {
		snprintf(buf, n, "run '%s': no golden file, and no majority of the devices agrees",
		         d->run);
		return;
	}
	lks_check_describe(&d->div, "device", d->golden ? "golden" : "majority", div,
	                   sizeof(div));
	snprintf(buf, n, "run '%s', %s", d->run, div);
}

/* A value's bits as hex: a float's 32, a double's 64, a count's or hash's 64. */
static void lks_bits(const lks_check_result *r, int b, char *buf, size_t n)
{
	double v = b ? r->b : r->a;
	int64_t iv = b ? r->ib : r->ia;

	if (r->value_type == LKS_VALUE_REAL && r->value_f32) {
		float f = (float)v;
		uint32_t u;

		memcpy(&u, &f, 4);
		snprintf(buf, n, "0x%08" PRIx32, u);
	} else if (r->value_type == LKS_VALUE_REAL) {
		uint64_t u;

		memcpy(&u, &v, 8);
		snprintf(buf, n, "0x%016" PRIx64, u);
	} else {
		snprintf(buf, n, "0x%016" PRIx64, (uint64_t)iv);
	}
}

/* The screen's result as the document and the store name it, from its exit code. */
static const char *lks_screen_result(int rc)
{
	return rc == LKS_EXIT_OK ? "pass" : rc == LKS_EXIT_FAIL ? "fail" : "error";
}

static json_t *lks_dev_divergence(const lks_screen_dev *d)
{
	const lks_check_result *r = &d->div;
	json_t *o = json_object();
	char a[64], b[64], why[900];

	json_object_set_new(o, "run", json_string(d->run));
	json_object_set_new(o, "step", json_integer(r->step));
	json_object_set_new(o, "rank", json_integer(r->rank));
	json_object_set_new(o, "tensor", r->tensor[0] ? json_string(r->tensor) : json_null());
	json_object_set_new(o, "phase", r->phase >= 0
	                    ? json_string(lks_phase_name((lks_phase)r->phase)) : json_null());
	json_object_set_new(o, "field", r->field ? json_string(r->field) : json_null());
	if (r->field && r->value_type != LKS_VALUE_NONE) {
		lks_check_value_text(a, sizeof(a), r, 0);
		lks_check_value_text(b, sizeof(b), r, 1);
		json_object_set_new(o, "device", json_string(a));
		json_object_set_new(o, "known", json_string(b));
		lks_bits(r, 0, a, sizeof(a));
		lks_bits(r, 1, b, sizeof(b));
		json_object_set_new(o, "device_bits", json_string(a));
		json_object_set_new(o, "known_bits", json_string(b));
	}
	lks_dev_why(d, why, sizeof(why));
	json_object_set_new(o, "words", json_string(why));
	return o;
}

/* An NVML snapshot's readings by name; a reading not available left out. */
static json_t *lks_readings(const lks_nvml_device *v)
{
	json_t *o = json_object();

	for (int k = 0; k < LKS_NVML_NKEYS; k++)
		if (v->v[k] != LKS_NVML_NONE)
			json_object_set_new(o, lks_nvml_key_name((lks_nvml_key)k),
			                    json_integer((json_int_t)v->v[k]));
	if (v->errors[0])
		json_object_set_new(o, "errors", json_string(v->errors));
	return o;
}

static json_t *lks_dev_nvml(const lks_screen_dev *d)
{
	json_t *o = json_object();

	json_object_set_new(o, "before", lks_readings(&d->before));
	json_object_set_new(o, "after", lks_readings(&d->after));
	json_object_set_new(o, "xid_events", json_integer(d->nxid));
	json_object_set_new(o, "findings", json_string(d->findings));
	return o;
}

static json_t *lks_dev_json(const lks_screen_dev *d)
{
	json_t *o = json_object();

	json_object_set_new(o, "index", json_integer(d->index));
	json_object_set_new(o, "uuid", json_string(d->uuid));
	json_object_set_new(o, "name", json_string(d->name));
	json_object_set_new(o, "pci_bus_id", d->pci[0] ? json_string(d->pci) : json_null());
	json_object_set_new(o, "serial", d->serial[0] ? json_string(d->serial) : json_null());
	json_object_set_new(o, "standin", json_boolean(d->standin));
	json_object_set_new(o, "verdict", json_string(lks_screen_verdict_name(d->verdict)));
	json_object_set_new(o, "known_answer", json_string(d->golden ? "golden" : "majority"));
	json_object_set_new(o, "seconds", json_real(d->seconds));
	json_object_set_new(o, "readings", d->nvml ? lks_dev_nvml(d) : json_null());
	if (d->verdict == LKS_SCREEN_FAIL)
		json_object_set_new(o, "divergence", lks_dev_divergence(d));
	if (d->verdict == LKS_SCREEN_FAIL) {
		json_t *r = json_object();

		json_object_set_new(r, "class", d->cls ? json_string(lks_screen_class_name(d->cls))
		                                      : json_null());
		json_object_set_new(r, "words", json_string(d->replay));
		json_object_set_new(o, "replay", r);
	}
	if (d->verdict == LKS_SCREEN_ERROR || d->verdict == LKS_SCREEN_UNDECIDED) {
		char why[900];

		lks_dev_why(d, why, sizeof(why));
		json_object_set_new(o, "error", json_string(why));
	}
	return o;
}

/* The run across the GPUs: whether it ran (else why not), and where it departed. */
static json_t *lks_coll_json(const lks_screen_coll *c)
{
	json_t *o = json_object();
	char why[900];

	json_object_set_new(o, "ran", json_boolean(c->ran));
	json_object_set_new(o, "verdict", json_string(c->error ? "error" : !c->ran ? "not run"
	                                              : c->failed ? "fail" : "pass"));
	json_object_set_new(o, "words", json_string(c->note));
	if (c->failed) {
		lks_check_describe(&c->div, "gpus", "cpu", why, sizeof(why));
		json_object_set_new(o, "gpu", c->gpu >= 0 ? json_integer(c->gpu) : json_null());
		json_object_set_new(o, "divergence", json_string(why));
	}
	return o;
}

void lks_screen_sink_start(lks_screen_sink *sink)
{
	struct timespec ts;
	struct tm tm;
	char sec[20];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(sec, sizeof(sec), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(sink->started, sizeof(sink->started), "%.19s.%03dZ", sec,
	         (int)(ts.tv_nsec / 1000000));
}

/* The node's document: who, when, how, and every device. */
static json_t *lks_screen_doc(const lks_screen_opts *o, const char *mode,
                              const lks_screen_dev *devs, int n, const lks_screen_sink *sink,
                              int rc)
{
	json_t *doc = json_object(), *gpus = json_array(), *failed = json_array();
	char host[256] = "";

	gethostname(host, sizeof(host) - 1);
	json_object_set_new(doc, "lockstep", json_string(LKS_VERSION));
	json_object_set_new(doc, "host", json_string(host));
	json_object_set_new(doc, "time", json_string(sink->started));
	json_object_set_new(doc, "seconds", json_real(sink->seconds));
	json_object_set_new(doc, "mode", json_string(mode));
	json_object_set_new(doc, "gemm", json_string(o->gemm ? "cublaslt" : "reference"));
	json_object_set_new(doc, "backend", json_string(o->be ? o->be->name : "cpu"));
	json_object_set_new(doc, "case", json_string(o->case_path));
	json_object_set_new(doc, "result", json_string(lks_screen_result(rc)));
	for (int i = 0; i < n; i++) {
		json_array_append_new(gpus, lks_dev_json(&devs[i]));
		if (devs[i].verdict != LKS_SCREEN_PASS)
			json_array_append_new(failed, json_integer(devs[i].index));
	}
	json_object_set_new(doc, "not_passed", failed);
	if (o->coll)
		json_object_set_new(doc, "collective", lks_coll_json(o->coll));
	json_object_set_new(doc, "gpus", gpus);
	return doc;
}

static int lks_screen_json(json_t *doc, const char *path)
{
	lks_atomic f;

	if (lks_atomic_open(&f, path))
		return -1;
	if (json_dumpf(doc, f.f, JSON_INDENT(2) | JSON_PRESERVE_ORDER) || fputc('\n', f.f) == EOF) {
		lks_atomic_abort(&f);
		return lks_err("cannot write '%s'", path);
	}
	return lks_atomic_commit(&f);
}

/* The document kept in the store, compact. */
static int lks_screen_keep(json_t *doc, const char *mode, const lks_screen_sink *sink, int rc)
{
	lks_screen_rec rec = { .started = (char *)sink->started, .mode = (char *)mode,
	                       .result = (char *)lks_screen_result(rc) };
	char *text = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
	int err;

	if (!text)
		return lks_err("out of memory writing the screen's document");
	rec.host = (char *)json_string_value(json_object_get(doc, "host"));
	rec.document = text;
	err = lks_store_put_screen(sink->db, &rec, NULL);
	free(text);
	return err;
}

static int lks_screen_junit(const lks_screen_dev *devs, int n, const char *path)
{
	int failures = 0, errors = 0;
	lks_atomic f;

	/* a device whose runs could not be made is an error, not a numerical failure */
	for (int i = 0; i < n; i++) {
		errors += devs[i].verdict == LKS_SCREEN_ERROR;
		failures += devs[i].verdict != LKS_SCREEN_PASS && devs[i].verdict != LKS_SCREEN_ERROR;
	}
	if (lks_atomic_open(&f, path))
		return -1;
	fprintf(f.f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n"
	        "<testsuite name=\"lockstep screen\" tests=\"%d\" failures=\"%d\" errors=\"%d\">\n",
	        n, failures, errors);
	for (int i = 0; i < n; i++) {
		char title[160], why[900];
		const char *el;

		lks_dev_title(&devs[i], title, sizeof(title));
		fputs("  <testcase classname=\"screen\" name=\"", f.f);
		lks_xml_text(f.f, title);
		fputs("\"", f.f);
		if (devs[i].verdict == LKS_SCREEN_PASS) {
			fputs("/>\n", f.f);
			continue;
		}
		lks_dev_why(&devs[i], why, sizeof(why));
		el = devs[i].verdict == LKS_SCREEN_ERROR ? "error" : "failure";
		fprintf(f.f, ">\n    <%s message=\"", el);
		lks_xml_text(f.f, why);
		fprintf(f.f, "\" type=\"%s\">", lks_screen_verdict_name(devs[i].verdict));
		lks_xml_text(f.f, devs[i].replay);
		fprintf(f.f, "</%s>\n  </testcase>\n", el);
	}
	fputs("</testsuite>\n</testsuites>\n", f.f);
	return lks_atomic_commit(&f);
}

int lks_screen_out(const lks_screen_opts *o, const char *mode, const lks_screen_dev *devs,
                   int n, const lks_screen_sink *sink)
{
	int rc = LKS_EXIT_OK, err = 0;
	json_t *doc;

	for (int i = 0; i < n; i++) {
		const lks_screen_dev *d = &devs[i];
		char title[160], why[900];

		lks_dev_title(d, title, sizeof(title));
		printf("%-32s %-9s %6.2fs", title, lks_screen_verdict_name(d->verdict), d->seconds);
		if (d->verdict != LKS_SCREEN_PASS) {
			lks_dev_why(d, why, sizeof(why));
			printf("  %s", why);
		}
		if (d->cls)
			printf("\n%32s replay: %s: %s", "", lks_screen_class_name(d->cls), d->replay);
		else if (d->replay[0])
			printf("\n%32s replay: %s", "", d->replay);
		if (d->findings[0])  /* one line each, from NVML */
			printf("\n%32s NVML: %.*s", "", (int)strcspn(d->findings, "\n"), d->findings);
		putchar('\n');
		if (d->verdict == LKS_SCREEN_FAIL || d->verdict == LKS_SCREEN_UNDECIDED)
			rc = LKS_EXIT_FAIL;
		else if (d->verdict == LKS_SCREEN_ERROR && rc == LKS_EXIT_OK)
			rc = LKS_EXIT_INFRA;
	}
	if (o->coll && o->collective) {
		const lks_screen_coll *c = o->coll;
		char why[900] = "";

		if (c->failed)
			lks_check_describe(&c->div, "gpus", "cpu", why, sizeof(why));
		printf("%-32s %-9s  %s%s%s\n", "across the GPUs", c->error ? "error" : !c->ran ? "-"
		       : c->failed ? "fail" : "pass", c->note, c->failed ? ": " : "", why);
		if (c->failed)
			rc = LKS_EXIT_FAIL;
		else if (c->error && rc == LKS_EXIT_OK)
			rc = LKS_EXIT_INFRA;
	}
	fflush(stdout);
	if (!sink->json && !sink->db && !sink->junit)
		return rc;
	/* each output tried whatever another did: one that cannot be written loses no other */
	if (!(doc = lks_screen_doc(o, mode, devs, n, sink, rc))) {
		lks_err("out of memory writing the screen's document");
		err = 1;
		fprintf(stderr, "lockstep: screen: %s\n", lks_errmsg());
	}
	if (doc && sink->json && lks_screen_json(doc, sink->json) && ++err)
		fprintf(stderr, "lockstep: screen: %s\n", lks_errmsg());
	if (doc && sink->db && lks_screen_keep(doc, mode, sink, rc) && ++err)
		fprintf(stderr, "lockstep: screen: %s\n", lks_errmsg());
	if (sink->junit && lks_screen_junit(devs, n, sink->junit) && ++err)
		fprintf(stderr, "lockstep: screen: %s\n", lks_errmsg());
	json_decref(doc);
	return err ? LKS_EXIT_INFRA : rc;
}

void lks_screen_out_clean(const char *dir, const lks_screen_dev *devs, int n)
{
	static const char *const ext[] = { "", "-wal", "-shm", "-journal" };
	char path[700];

	for (int i = 0; i <= n; i++)  /* every device's, and the run across them */
		for (int e = 0; e < 4; e++) {
			if (i < n)
				snprintf(path, sizeof(path), "%s/gpu%d.db%s", dir, devs[i].index, ext[e]);
			else
				snprintf(path, sizeof(path), "%s/collective.db%s", dir, ext[e]);
			unlink(path);
		}
	rmdir(dir);
}
