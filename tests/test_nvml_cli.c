/*
 * test_nvml_cli.c: GPU health end to end, on the CPU: 'lockstep run' with the fake
 * libnvidia-ml (LKS_NVML_LIB) stores a snapshot before and after the run, and a rise of
 * ECC and an XID during it as events; without NVML, one 'absent' row per phase; 'lockstep
 * env' says which. Part of test_nvml.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run_bin.h"
#include "harness/store/trace_store.h"
#include "kernels/err.h"

static const char tiny_case[] =
	"[case]\nsteps = 2\n[model]\nvocab = 16\nhidden = 8\nffn = 16\nlayers = 1\nseq = 4\n"
	"batch = 1\n[run a]\nrecipe = bf16\n";

struct seen {
	int n, absent;
	char text[4096];
};

static int see_row(void *arg, const lks_health_row *r)
{
	struct seen *s = arg;
	size_t len = strlen(s->text);

	s->n++;
	s->absent += strcmp(r->key, "absent") == 0 && r->device == -1;
	if (r->text)
		snprintf(s->text + len, sizeof(s->text) - len, "%s %d %s '%s'\n", r->phase, r->device,
		         r->key, r->text);
	else
		snprintf(s->text + len, sizeof(s->text) - len, "%s %d %s %lld\n", r->phase,
		         r->device, r->key, (long long)r->value);
	return 0;
}

static int see_event(void *arg, const lks_event_rec *ev)
{
	struct seen *s = arg;
	size_t len = strlen(s->text);

	if (strcmp(ev->kind, "gpu_health") == 0)
		s->n++;
	snprintf(s->text + len, sizeof(s->text) - len, "%s: %s\n", ev->kind,
	         ev->message ? ev->message : "");
	return 0;
}

/* 'lockstep run' of the tiny case under env in a new folder; the run's health rows and
   events into rows and events. */
static void run_tiny(const char *env, struct seen *rows, struct seen *events)
{
	char dir[] = "/tmp/lks_test_nvml_XXXXXX", path[600], args[1400], out[4096];
	lks_store *s;
	FILE *f;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/tiny.ini", dir);
	cr_assert_not_null(f = fopen(path, "w"));
	fputs(tiny_case, f);
	fclose(f);
	snprintf(args, sizeof(args), "run --quiet --db '%s/t.db' '%s'", dir, path);
	cr_assert_eq(lks_run_bin(env, args, out, sizeof(out)), 0, "%s", out);
	snprintf(path, sizeof(path), "%s/t.db", dir);
	cr_assert_eq(lks_store_open_readonly(path, &s), 0, "%s", lks_errmsg());
	memset(rows, 0, sizeof(*rows));
	memset(events, 0, sizeof(*events));
	cr_assert_eq(lks_store_get_health(s, 1, see_row, rows), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_get_events(s, 1, see_event, events), 0, "%s", lks_errmsg());
	lks_store_close(s);
	snprintf(args, sizeof(args), "rm -rf '%s'", dir);
	cr_assert_eq(system(args), 0);
}

Test(nvml_cli, a_run_stores_health_before_and_after_and_what_rose)
{
	struct seen rows, events;

	run_tiny("LKS_NVML_LIB='" FAKE_NVML "' FAKE_NVML_DEVICES=2 FAKE_NVML_RISE=1", &rows,
	         &events);
	cr_expect_eq(rows.absent, 0, "%s", rows.text);
	cr_expect(strstr(rows.text, "before 0 name 'Fake GPU 0'\n"), "%s", rows.text);
	cr_expect(strstr(rows.text, "after 1 uuid 'GPU-fake-1'\n"), "%s", rows.text);
	cr_expect(strstr(rows.text, "before 1 memory_total 85899345920\n"), "%s", rows.text);
	cr_expect(strstr(rows.text, "before 1 ecc_uncorrected 1\n"), "%s", rows.text);
	cr_expect(strstr(rows.text, "after 1 ecc_uncorrected 2\n"), "%s", rows.text);
	/* 2 phases x 2 devices x (name, uuid, 12 readings) */
	cr_expect_eq(rows.n, 2 * 2 * 14, "%s", rows.text);
	cr_expect_eq(events.n, 2, "%s", events.text);
	cr_expect(strstr(events.text, "gpu_health: gpu 1: uncorrected ECC errors rose from 1 to 2\n"),
	          "%s", events.text);
	cr_expect(strstr(events.text, "gpu_health: gpu 1: XID 79\n"), "%s", events.text);
}

Test(nvml_cli, a_run_without_nvml_stores_it_absent_and_goes_on)
{
	struct seen rows, events;

	run_tiny("LKS_NVML_LIB=/nonexistent/libnvidia-ml.so.1", &rows, &events);
	cr_expect_eq(rows.n, 2, "%s", rows.text);
	cr_expect_eq(rows.absent, 2, "%s", rows.text);
	cr_expect(strstr(rows.text, "before -1 absent 'no NVML library: /nonexistent/"), "%s",
	          rows.text);
	cr_expect_eq(events.n, 0, "%s", events.text);
}

Test(nvml_cli, env_says_whether_nvml_is_there)
{
	char out[8192];

	cr_assert_eq(lks_run_bin("LKS_NVML_LIB=/nonexistent/nvml.so", "env", out, sizeof(out)), 0);
	cr_expect(strstr(out, "nvml                   absent: no NVML library: /nonexistent/nvml.so"),
	          "%s", out);
	cr_assert_eq(lks_run_bin("LKS_NVML_LIB='" FAKE_NVML "' FAKE_NVML_DEVICES=2", "env --json",
	                         out, sizeof(out)), 0);
	cr_expect(strstr(out, "\"nvml\": \"present: 2 GPUs ("), "%s", out);
}
