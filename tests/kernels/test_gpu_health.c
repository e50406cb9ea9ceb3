/*
 * test_gpu_health.c: the GPU health of a run (harness/store/gpu_health.h) with the fake
 * libnvidia-ml (nvml_fixture.h), on the CPU: only the GPUs its ranks used are read, found
 * by UUID where NVML's (PCI) order differs from CUDA's ordinals, so that what rises on
 * another job's GPU is never the run's finding; each is stored named as operators name it
 * (ordinal, UUID, name, PCI bus id, serial) with its readings; and the readings of a job's
 * processes (threads of a threads communicator here, each with its own lks_nvml) reach
 * process 0. Part of test_nvml.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/store/gpu_health.h"
#include "kernels/comm.h"
#include "kernels/err.h"
#include "nvml_fixture.h"

struct health_db {
	char dir[64], path[128];
	lks_store *s;
	int64_t run;
};

/* A new database holding one run begun, in a new folder. */
static void health_db_open(struct health_db *db)
{
	lks_run_info info = { .case_name = "tiny", .case_path = "tiny.ini",
	                      .case_text = "[case]\n", .run_name = "a", .recipe = "bf16",
	                      .options = "", .backend = "cuda", .world_size = 3, .steps = 1,
	                      .fingerprint = "{}" };

	snprintf(db->dir, sizeof(db->dir), "/tmp/lks_test_health_XXXXXX");
	cr_assert_not_null(mkdtemp(db->dir));
	snprintf(db->path, sizeof(db->path), "%s/h.db", db->dir);
	cr_assert_eq(lks_store_open(db->path, &db->s), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_store_begin_run(db->s, &info, &db->run), 0, "%s", lks_errmsg());
}

/* The rows of one SQL query, each "a b c\n", into a malloc'd string. */
static char *health_sql(struct health_db *db, const char *sql)
{
	sqlite3 *h;
	sqlite3_stmt *st;
	size_t len = 0;
	char *out = NULL;
	FILE *f = open_memstream(&out, &len);

	cr_assert_eq(sqlite3_open_v2(db->path, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	cr_assert_eq(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(h));
	while (sqlite3_step(st) == SQLITE_ROW)
		for (int c = 0; c < sqlite3_column_count(st); c++)
			fprintf(f, "%s%s", c ? " " : "", sqlite3_column_text(st, c)
			        ? (const char *)sqlite3_column_text(st, c) : "NULL"),
			fputs(c + 1 == sqlite3_column_count(st) ? "\n" : "", f);
	sqlite3_finalize(st);
	sqlite3_close(h);
	fclose(f);
	return out;
}

/* The health rows "phase device key value" and the findings "message" of the run. */
static void health_db_read(struct health_db *db, char **rows, char **events)
{
	lks_store_close(db->s);
	db->s = NULL;
	*rows = health_sql(db, "SELECT phase, device, key, value FROM health ORDER BY rowid");
	*events = health_sql(db, "SELECT message FROM events WHERE kind = 'gpu_health' "
	                         "ORDER BY event_id");
}

static void health_db_close(struct health_db *db, char *rows, char *events)
{
	char cmd[128];

	free(rows);
	free(events);
	lks_store_close(db->s);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", db->dir);
	cr_expect_eq(system(cmd), 0);
}

/* g stored as a process alone stores it, with a new run of a new database (db); the
   findings' words into text */
static void health_store_alone(const lks_gpu_health *g, struct health_db *db, char *text,
                               size_t size)
{
	lks_gpu_health *all;
	int n;

	cr_assert_eq(lks_gpu_health_gather(NULL, g, &all, &n), 0, "%s", lks_errmsg());
	cr_assert_eq(n, 1);
	health_db_open(db);
	cr_assert_eq(lks_gpu_health_store(db->s, db->run, all, n, text, size), 0, "%s",
	             lks_errmsg());
	free(all);
}

static int count_lines(const char *text, const char *part)
{
	int n = 0;

	for (const char *p = text; (p = strstr(p, part)); p += strlen(part))
		n++;
	return n;
}

/* text holds part (or does not); text is shown where it fails */
#define expect_in(text, part) cr_expect(strstr((text), (part)), "%s", (text))
#define expect_not_in(text, part) cr_expect_null(strstr((text), (part)), "%s", (text))

/* One process's GPU health as a test drives it: NVML (h), the GPUs its ranks used (g), and
   once stored as a process alone stores it, the database (db), the findings' words (text),
   the rows and events read back. */
struct health_case {
	lks_nvml *h;
	lks_gpu_health g;
	struct health_db db;
	char text[1024], *rows, *events;
};

/* NVML opened from path, no GPU used yet */
static void health_case_open(struct health_case *x, const char *path)
{
	memset(x, 0, sizeof(*x));
	x->h = nvml_open(path);
	lks_gpu_health_reset(&x->g);
}

/* The reading after the run, stored, and read back */
static void health_case_after(struct health_case *x)
{
	lks_gpu_health_after(x->h, &x->g);
	health_store_alone(&x->g, &x->db, x->text, sizeof(x->text));
	health_db_read(&x->db, &x->rows, &x->events);
}

static void health_case_close(struct health_case *x)
{
	lks_nvml_close(x->h);
	health_db_close(&x->db, x->rows, x->events);
}

/* The run's ranks 0 and 2 share CUDA's device 0, which is NVML's device 2; rank 1 has
   CUDA's device 1, NVML's 0. What rises on NVML's devices 1 and 3 (another job's) is no
   finding of the run, and no reading of them is stored; what rises on the run's GPUs is,
   named by ordinal and UUID. Each is stored named as operators name it: NVML's name, PCI
   bus id and serial of the device of its UUID. */
Test(gpu_health, the_run_s_gpus_are_matched_by_uuid_and_no_other_is_blamed)
{
	fake_nvml_state *s = fake_four();
	struct health_case x;
	static const char found[] = "gpu 0 GPU-fake-2 (ranks 0,2 on node-a): corrected ECC "
	                            "errors rose from 0 to 4\ngpu 1 GPU-fake-0 (rank 1 on "
	                            "node-a): XID 48\n";

	health_case_open(&x, FAKE_NVML);
	cr_assert_eq(lks_gpu_health_use(&x.g, "GPU-fake-2", 0, 0, "node-a"), 0);
	cr_assert_eq(lks_gpu_health_use(&x.g, "GPU-fake-0", 1, 1, "node-a"), 0);
	cr_assert_eq(lks_gpu_health_use(&x.g, "GPU-fake-2", 0, 2, "node-a"), 0);
	cr_assert_eq(x.g.ndev, 2);
	queue_xid(s, 3, 31);           /* waiting before the run: not of the run */
	lks_gpu_health_before(x.h, &x.g);
	s->dev[1].ecc_uncorrected = 5; /* another job's GPUs */
	s->dev[3].remap_unc = 1;
	queue_xid(s, 1, 79);
	queue_xid(s, 3, 94);
	s->dev[2].ecc_corrected = 4;   /* the run's */
	queue_xid(s, 0, 48);
	health_case_after(&x);
	cr_expect_str_eq(x.text, found);
	cr_expect_str_eq(x.events, found);
	expect_in(x.rows, "before 0 cuda_ordinal 0\nbefore 0 uuid GPU-fake-2\n"
	                  "before 0 ranks 0,2\nbefore 0 host node-a\nbefore 0 name Fake GPU 2\n"
	                  "before 0 pci 00000000:12:00.0\nbefore 0 serial fake-serial-2\n");
	/* NVML's device 0 has no serial (not supported): no row, no error */
	expect_in(x.rows, "after 1 name Fake GPU 0\nafter 1 pci 00000000:10:00.0\n"
	                  "after 1 ecc_corrected 0\n");
	expect_in(x.rows, "after 0 clock_sm_mhz 1905\nafter 0 clock_mem_mhz 2619\n");
	expect_in(x.rows, "after 0 temperature_c 42\n");
	expect_in(x.rows, "after 1 cuda_ordinal 1\nafter 1 uuid GPU-fake-0\n");
	expect_in(x.rows, "after 1 temperature_c 40\n");
	expect_not_in(x.rows, "GPU-fake-1");
	expect_not_in(x.rows, "GPU-fake-3");
	cr_expect_eq(count_lines(x.rows, " name "), 4, "%s", x.rows);  /* 2 GPUs x 2 phases */
	expect_not_in(x.rows, " 2 ");  /* no third GPU */
	health_case_close(&x);
}

/* A run whose backend named no GPU (cpu) reads none, however NVML's GPUs fare. */
Test(gpu_health, a_run_that_used_no_gpu_stores_no_gpu_and_no_reading)
{
	fake_nvml_state *s = fake_four();
	struct health_case x;

	health_case_open(&x, FAKE_NVML);
	lks_gpu_health_before(x.h, &x.g);   /* as when on_devices was never called */
	s->dev[0].ecc_uncorrected = 9;
	queue_xid(s, 0, 79);
	health_case_after(&x);
	cr_expect_str_eq(x.text, "");
	cr_expect_str_eq(x.rows, "before NULL no_gpu the run used no GPU\n"
	                         "after NULL no_gpu the run used no GPU\n");
	cr_expect_str_eq(x.events, "");
	health_case_close(&x);
}

/* A process that used a GPU and has no NVML says which GPU and why it was not read. */
Test(gpu_health, a_process_without_nvml_stores_its_gpus_and_why)
{
	struct health_case x;

	health_case_open(&x, "/nonexistent/libnvidia-ml.so.1");
	lks_gpu_health_use(&x.g, "GPU-abc", 3, 0, "node-c");
	lks_gpu_health_before(x.h, &x.g);
	health_case_after(&x);
	cr_expect_str_eq(x.rows,
	                 "before 0 cuda_ordinal 3\nbefore 0 uuid GPU-abc\nbefore 0 ranks 0\n"
	                 "before 0 host node-c\nbefore NULL absent no NVML library: "
	                 "/nonexistent/libnvidia-ml.so.1: cannot open shared object file: No such "
	                 "file or directory (host node-c)\n"
	                 "after 0 cuda_ordinal 3\nafter 0 uuid GPU-abc\nafter 0 ranks 0\n"
	                 "after 0 host node-c\nafter NULL absent no NVML library: "
	                 "/nonexistent/libnvidia-ml.so.1: cannot open shared object file: No such "
	                 "file or directory (host node-c)\n");
	cr_expect_str_eq(x.events, "");
	health_case_close(&x);
}

Test(gpu_health, ranks_on_one_gpu_are_listed_and_a_long_list_is_cut_visibly)
{
	lks_gpu_health g;

	lks_gpu_health_reset(&g);
	for (int r = 0; r < 40; r++)
		cr_assert_eq(lks_gpu_health_use(&g, "GPU-x", 0, 100 + r, "h"), 0);
	cr_expect_eq(g.ndev, 1);
	cr_expect_str_eq(g.used[0].ranks, "100,101,102,103,104,105,106,107,108,...");
	cr_expect_eq(lks_gpu_health_use(&g, "", 0, 1, "h"), 0);   /* a rank without a GPU */
	cr_expect_eq(g.ndev, 1);
	for (int d = 1; d < LKS_NVML_MAX_DEVICES; d++) {
		char uuid[16];

		snprintf(uuid, sizeof(uuid), "GPU-%d", d);
		cr_assert_eq(lks_gpu_health_use(&g, uuid, d, d, "h"), 0);
	}
	cr_expect_neq(lks_gpu_health_use(&g, "GPU-one-too-many", 0, 99, "h"), 0);
	cr_expect(strstr(lks_errmsg(), "'GPU-one-too-many' (rank 99) is not read"), "%s",
	          lks_errmsg());
}

/* ---- a job's processes: each reads its own GPUs, process 0 gets them all ---- */

#define PROCS 3

struct proc {
	lks_comm *end;
	lks_gpu_health g;
	fake_nvml_state *s;
	lks_gpu_health *all;           /* process 0's, after the gather */
	int n, rc;
};

/* Process 0 has CUDA's device 0 = NVML's 3 on node-a; process 1 CUDA's 0 and 1 = NVML's
   1 and 0 on node-b; process 2 no rank of the run. Between the two readings process 0
   raises ECC on NVML's 1 and queues XIDs on NVML's 3 and on 2, which no process used. */
static void *proc_main(void *arg)
{
	struct proc *p = arg;
	int me = p->end->rank;
	lks_nvml *h = NULL;

	lks_nvml_open(FAKE_NVML, &h);
	lks_gpu_health_reset(&p->g);
	if (me == 0)
		lks_gpu_health_use(&p->g, "GPU-fake-3", 0, 0, "node-a");
	if (me == 1) {
		lks_gpu_health_use(&p->g, "GPU-fake-1", 0, 1, "node-b");
		lks_gpu_health_use(&p->g, "GPU-fake-0", 1, 2, "node-b");
	}
	lks_gpu_health_before(h, &p->g);
	p->rc = lks_comm_barrier(p->end);
	if (me == 0) {
		p->s->dev[1].ecc_uncorrected = 1;
		p->s->dev[2].ecc_uncorrected = 7;
		queue_xid(p->s, 3, 79);
		queue_xid(p->s, 2, 13);
	}
	p->rc |= lks_comm_barrier(p->end);
	lks_gpu_health_after(h, &p->g);
	p->rc |= lks_gpu_health_gather(p->end, &p->g, &p->all, &p->n);
	lks_nvml_close(h);
	lks_comm_close(p->end);
	return NULL;
}

Test(gpu_health, the_readings_of_every_process_reach_process_0)
{
	fake_nvml_state *s = fake_four();
	lks_comm *ends[PROCS];
	struct proc p[PROCS];
	pthread_t t[PROCS];
	struct health_db db;
	char text[1024], *rows, *events;

	cr_assert_eq(lks_comm_threads(PROCS, ends), 0);
	for (int i = 0; i < PROCS; i++) {
		p[i] = (struct proc){ .end = ends[i], .s = s };
		cr_assert_eq(pthread_create(&t[i], NULL, proc_main, &p[i]), 0);
	}
	for (int i = 0; i < PROCS; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < PROCS; i++)
		cr_assert_eq(p[i].rc, 0, "process %d", i);
	cr_assert_eq(p[0].n, PROCS);
	cr_expect_null(p[1].all);
	cr_expect_eq(p[2].n, 0);
	cr_expect_eq(p[0].all[1].ndev, 2);
	cr_expect_eq(p[0].all[2].ndev, 0);
	health_db_open(&db);
	cr_assert_eq(lks_gpu_health_store(db.s, db.run, p[0].all, p[0].n, text, sizeof(text)), 0,
	             "%s", lks_errmsg());
	free(p[0].all);
	health_db_read(&db, &rows, &events);
	cr_expect_str_eq(events, "gpu 0 GPU-fake-3 (rank 0 on node-a): XID 79\n"
	                         "gpu 0 GPU-fake-1 (rank 1 on node-b): uncorrected ECC errors "
	                         "rose from 0 to 1\n");
	/* the run's GPUs numbered over the processes: 0 on node-a, 1 and 2 on node-b */
	expect_in(rows, "before 0 uuid GPU-fake-3\nbefore 0 ranks 0\nbefore 0 host node-a\n");
	expect_in(rows, "before 1 uuid GPU-fake-1\nbefore 1 ranks 1\nbefore 1 host node-b\n");
	expect_in(rows, "after 2 cuda_ordinal 1\nafter 2 uuid GPU-fake-0\n");
	expect_in(rows, "after 1 ecc_uncorrected 1\n");
	expect_not_in(rows, "GPU-fake-2");
	expect_not_in(rows, "absent");
	health_db_close(&db, rows, events);
}
