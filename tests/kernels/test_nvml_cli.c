/*
 * test_nvml_cli.c: GPU health end to end, on the CPU: 'lockstep run' on the cpu backend,
 * with the fake libnvidia-ml (LKS_NVML_LIB) whose GPU 1 sees its ECC count rise and an XID
 * during the run, reads no GPU and blames none on the run: one 'no_gpu' row per phase,
 * with NVML or without; 'lockstep env' says whether NVML is there; 'lockstep report'
 * names a run's GPUs by CUDA ordinal and UUID, and the runs that used none. (A run on a
 * GPU backend needs a GPU; test_gpu_health.c drives its GPU health as the runner would.) Part
 * of test_nvml.
 */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run_bin.h"
#include "harness/store/gpu_health.h"
#include "harness/store/trace_store.h"
#include "kernels/err.h"

static const char tiny_case[] =
	"[case]\nsteps = 2\n[model]\nvocab = 16\nhidden = 8\nffn = 16\nlayers = 1\nseq = 4\n"
	"batch = 1\n[run a]\nrecipe = bf16\n[run b]\nrecipe = bf16\n";

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

/* 'lockstep run' of the tiny case under env into dir (a new folder, its name written)
   /t.db; run 1's health rows and events into rows and events. */
static void run_tiny(char *dir, const char *env, struct seen *rows, struct seen *events)
{
	char path[600], args[1400], out[4096];
	lks_store *s;
	FILE *f;

	strcpy(dir, "/tmp/lks_test_nvml_XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/tiny.ini", dir);
	cr_assert_not_null(f = fopen(path, "w"));
	fputs(tiny_case, f);
	fclose(f);
	snprintf(args, sizeof(args), "run --quiet --db '%s/t.db' '%s'", dir, path);
	cr_assert_eq(lks_run_bin(env, args, out, sizeof(out)), 0, "%s", out);
	cr_expect_null(strstr(out, "GPU health"), "%s", out);
	snprintf(path, sizeof(path), "%s/t.db", dir);
	cr_assert_eq(lks_store_open_readonly(path, &s), 0, "%s", lks_errmsg());
	memset(rows, 0, sizeof(*rows));
	memset(events, 0, sizeof(*events));
	cr_assert_eq(lks_store_get_health(s, 1, see_row, rows), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_get_events(s, 1, see_event, events), 0, "%s", lks_errmsg());
	lks_store_close(s);
}

static void rm_dir(const char *dir)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

/* The node's GPU 1 sees uncorrected ECC errors and XID 79 while a cpu run trains: none of
   it is the run's, and none of the node's GPUs is read for it. */
Test(nvml_cli, a_cpu_run_reads_no_gpu_and_is_blamed_for_none)
{
	struct seen rows, events;
	char dir[64];

	run_tiny(dir, "LKS_NVML_LIB='" FAKE_NVML "' FAKE_NVML_DEVICES=2 FAKE_NVML_RISE=1", &rows,
	         &events);
	cr_expect_str_eq(rows.text, "before -1 no_gpu 'the run used no GPU'\n"
	                            "after -1 no_gpu 'the run used no GPU'\n");
	cr_expect_eq(events.n, 0, "%s", events.text);
	rm_dir(dir);
}

Test(nvml_cli, a_cpu_run_without_nvml_stores_no_gpu_and_goes_on)
{
	struct seen rows, events;
	char dir[64];

	run_tiny(dir, "LKS_NVML_LIB=/nonexistent/libnvidia-ml.so.1", &rows, &events);
	cr_expect_eq(rows.n, 2, "%s", rows.text);
	cr_expect_eq(rows.absent, 0, "%s", rows.text);
	cr_expect(strstr(rows.text, "before -1 no_gpu 'the run used no GPU'\n"), "%s", rows.text);
	cr_expect_eq(events.n, 0, "%s", events.text);
	rm_dir(dir);
}

/* Run b's GPU health replaced by what a run on GPUs stores: its rank 0 on CUDA's device 0,
   which is NVML's 1, and rank 1 on CUDA's 1, NVML's 0 (the fake's FAKE_NVML_RISE raises
   NVML's 1 while the readings are taken). */
static void store_gpu_run(const char *dir)
{
	char path[600], text[512];
	lks_gpu_health g, *all;
	lks_nvml *h;
	lks_store *s;
	sqlite3 *db;
	int n;

	snprintf(path, sizeof(path), "%s/t.db", dir);
	cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(db, "DELETE FROM health WHERE run_id = 2", NULL, NULL, NULL),
	             SQLITE_OK);
	sqlite3_close(db);
	setenv("FAKE_NVML_DEVICES", "2", 1);
	setenv("FAKE_NVML_RISE", "1", 1);
	cr_assert_eq(lks_nvml_open(FAKE_NVML, &h), 0);
	lks_gpu_health_reset(&g);
	lks_gpu_health_use(&g, "GPU-fake-1", 0, 0, "node-a");
	lks_gpu_health_use(&g, "GPU-fake-0", 1, 1, "node-a");
	lks_gpu_health_before(h, &g);
	lks_gpu_health_after(h, &g);
	lks_nvml_close(h);
	cr_assert_eq(lks_gpu_health_gather(NULL, &g, &all, &n), 0);
	cr_assert_eq(lks_store_open(path, &s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_gpu_health_store(s, 2, all, n, text, sizeof(text)), 0, "%s", lks_errmsg());
	lks_store_close(s);
	free(all);
}

/* The file at dir/name, whole, malloc'd */
static char *slurp_in(const char *dir, const char *name)
{
	char path[300], *text = NULL;
	size_t len = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	cr_assert_not_null(f = fopen(path, "r"), "%s", path);
	cr_assert_eq(getdelim(&text, &len, '\0', f) > 0, 1);
	fclose(f);
	return text;
}

/* Run a on the cpu, run b on two GPUs whose first saw ECC errors and an XID: the summary
   counts b's two findings, the command says so, the case's GPU health shows them marked
   bad, b's readings per GPU by ordinal and UUID, and says a used no GPU. */
Test(nvml_cli, report_names_gpus_by_ordinal_and_uuid_and_the_runs_that_used_none)
{
	char dir[64], args[400], out[2048], *md, *html;
	struct seen rows, events;

	run_tiny(dir, "LKS_NVML_LIB=/nonexistent/libnvidia-ml.so.1", &rows, &events);
	store_gpu_run(dir);
	snprintf(args, sizeof(args), "report --db '%s/t.db' -o '%s/r'", dir, dir);
	cr_assert_eq(lks_run_bin("PATH=/nonexistent", args, out, sizeof(out)), 0, "%s", out);
	cr_expect(strstr(out, "GPU health: 2 findings"), "%s", out);
	md = slurp_in(dir, "r/report.md");
	html = slurp_in(dir, "r/index.html");
	cr_expect(strstr(md, "| tiny | 2 | 0 | 0 | pass | 2 |"), "%s", md);
	cr_expect(strstr(md, "| b | gpu health | gpu 0 GPU-fake-1 (rank 0 on node-a): uncorrected "
	                     "ECC errors rose from 0 to 1 |"), "%s", md);
	cr_expect(strstr(html, "<tr class=\"bad\"><td>b</td><td class=\"fail\">gpu health</td>"
	                       "<td>gpu 0 GPU-fake-1 (rank 0 on node-a): XID 79</td></tr>"), "%s",
	          html);
	cr_expect(strstr(html, "<td class=\"mono\">1 GPU-fake-0</td>"), "%s", html);
	cr_expect(strstr(md, "| b | gpu health | gpu 0 GPU-fake-1 (rank 0 on node-a): XID 79 |"),
	          "%s", md);
	cr_expect(strstr(md, "| b | 0 GPU-fake-1 | temperature (C) | 35 | 35 |"), "%s", md);
	cr_expect(strstr(md, "| b | 1 GPU-fake-0 | memory total (MiB) | 81920 | 81920 |"), "%s", md);
	cr_expect(strstr(md, "_run a used no GPU: no GPU health is read for it_"), "%s", md);
	cr_expect_null(strstr(md, "NVML absent"), "%s", md);
	free(md);
	free(html);
	rm_dir(dir);
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
