/*
 * test_import_tb_read.c: the TensorBoard reader takes a file's bytes a chunk (1 MiB) at a
 * time (import_tensorboard.c): records that straddle a chunk's end, and a record larger
 * than a chunk, read as any other; a file cut inside a record is still refused at that
 * record's byte offset.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "store_fixture.h"
#include "tb_events.h"
#include "harness/import/import.h"
#include "kernels/err.h"

#define NSCALARS 60000  /* about 2.3 MB of records: two chunk ends at offsets of no choice */

/* An Event of no summary whose file_version (field 3) is n bytes: a record bigger than
   the reader's chunk, which the import counts as ignored. */
static void write_big_event(const char *path, size_t n)
{
	FILE *f = fopen(path, "wb");
	uint8_t *ev = malloc(n + 16), head[12], tail[4];
	size_t en = 0;

	cr_assert(f && ev);
	ev[en++] = 0x1a;
	en += tb_varint(ev + en, n);
	memset(ev + en, 'v', n);
	en += n;
	tb_le(head, en, 8);
	tb_le(head + 8, lks_tfrecord_crc(head, 8), 4);
	tb_le(tail, lks_tfrecord_crc(ev, en), 4);
	cr_assert(fwrite(head, 1, 12, f) == 12 && fwrite(ev, 1, en, f) == en
	          && fwrite(tail, 1, 4, f) == 4);
	cr_assert_eq(fclose(f), 0);
	free(ev);
}

struct last {
	long n;
	int step;
	double loss;
};

static int keep_last(void *arg, const lks_metric_row *m)
{
	struct last *l = arg;

	if (!strcmp(m->name, "loss")) {
		l->n++;
		l->step = m->step;
		l->loss = m->value;
	}
	return 0;
}

Test(import_tb_read, records_across_chunk_ends_and_one_bigger_than_a_chunk)
{
	struct tb_scalar *s = calloc(NSCALARS, sizeof(*s));
	char a[512], big[512], b[512], all[512], db[512], cmd[2200];
	const char *files[] = { all };
	lks_import_opts o = { .fmt = lks_import_format_find("tensorboard"), .case_name = "c",
	                      .run_name = "r" };
	lks_import_result res;
	struct last l = { 0 };
	lks_store *st;
	struct stat sb;
	char at[64];

	cr_assert_not_null(s);
	mkdir_tmp();
	for (int i = 0; i < NSCALARS; i++)  /* steps 0.., two tags a step */
		s[i] = (struct tb_scalar){ i / 2, i % 2 ? "grad-norm" : "lm loss",
		                           1.0f / (float)(i + 3) };
	path_in_tmp(a, sizeof(a), "a.tfevents");
	path_in_tmp(big, sizeof(big), "big.tfevents");
	path_in_tmp(b, sizeof(b), "b.tfevents");
	path_in_tmp(all, sizeof(all), "events.out.tfevents.all");
	tb_write(a, s, NSCALARS / 2);
	write_big_event(big, 3u << 20);
	tb_write(b, s + NSCALARS / 2, NSCALARS / 2);
	snprintf(cmd, sizeof(cmd), "cat '%s' '%s' '%s' > '%s'", a, big, b, all);
	cr_assert_eq(system(cmd), 0);
	path_in_tmp(db, sizeof(db), "tb.db");
	cr_assert_eq(lks_store_open(db, &st), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_import_files(st, &o, files, 1, &res), 0, "%s", lks_errmsg());
	cr_assert_eq(res.counts.lines, NSCALARS + 1);
	cr_assert_eq(res.counts.ignored, 1, "the big record holds no summary");
	cr_assert_eq(lks_store_get_metrics(st, res.run_id, "loss", keep_last, &l), 0);
	cr_assert_eq(l.n, NSCALARS / 2);
	cr_assert_eq(l.step, NSCALARS / 2 - 1);
	cr_assert_eq(l.loss, (double)(1.0f / (float)(NSCALARS - 2 + 3)), "bit for bit");
	lks_store_close(st);

	/* the last record's CRC cut short: refused at its offset, nothing stored. That record
	   (step 29999 in 3 varint bytes, tag "grad-norm") is 12 + 24 + 4 bytes */
	cr_assert_eq(stat(all, &sb), 0);
	snprintf(at, sizeof(at), "byte %lld: a record cut short", (long long)sb.st_size - 40);
	snprintf(cmd, sizeof(cmd), "truncate -s -5 '%s'", all);
	cr_assert_eq(system(cmd), 0);
	path_in_tmp(db, sizeof(db), "cut.db");
	cr_assert_eq(lks_store_open(db, &st), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_import_files(st, &o, files, 1, &res), LKS_E_BAD_INPUT);
	cr_assert_not_null(strstr(lks_errmsg(), at), "%s: %s", at, lks_errmsg());
	lks_store_close(st);
	free(s);
	rm_tmp();
}
