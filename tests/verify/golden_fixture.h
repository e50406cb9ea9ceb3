/*
 * golden_fixture.h: what the golden files' tests (test_golden.c, test_golden_update.c)
 * share: a tiny case trained into a store in a mkdtemp folder, its runs written as golden
 * files and loaded whole, two stored runs compared field by field and bit for bit, and the
 * lines of a file to edit as a person would.
 */
#ifndef LKS_TESTS_GOLDEN_FIXTURE_H
#define LKS_TESTS_GOLDEN_FIXTURE_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/case.h"
#include "harness/verify/check.h"
#include "harness/store/golden.h"
#include "harness/engine/runner.h"
#include "harness/store/trace_store.h"
#include "trained_fixture.h"
#include "kernels/err.h"

/* FP8 rowwise (a) and BF16 (bf: no tensor quantized, every scale NaN); 2 ranks, 3 steps. */
static const char case_text[] =
	"[case]\nsteps = 3\nseed = 7\nworld_size = 2\n"
	"[model]\nvocab = 32\nhidden = 16\nffn = 32\nlayers = 1\nseq = 4\nbatch = 2\n"
	"[run a]\nrecipe = fp8_rowwise\n"
	"[run bf]\nrecipe = bf16\n"
	"[check gold]\nkind = golden\na = a\n"
	"[check gold_bf]\nkind = golden\na = bf\n";

static inline void fx_setup(struct fx *f)
{
	fx_train(f, "golden", case_text, "{\"lockstep.version\": \"0.1.0\", "
	         "\"lockstep.commit\": \"abc\", \"compiler\": \"GNU 12\", "
	         "\"isa.active\": \"avx2\"}", 0);
	snprintf(f->golden, sizeof(f->golden), "%s/golden", f->dir);
	f->opts.golden_dir = f->golden;
}

/* The golden file of run into path (its path in f->golden, in the run's class). */
static inline void write_golden(struct fx *f, const char *run, char *path, size_t n)
{
	lks_stored_run g;
	char cls[64];

	cr_assert_eq(lks_stored_run_load(f->s, id_of(f, run), LKS_LOAD_TRACE, &g), 0, "%s",
	             lks_errmsg());
	cr_assert_eq(lks_golden_class_of(&g, cls, sizeof(cls)), 0, "%s", lks_errmsg());
	cr_assert_eq(lks_golden_path(f->golden, cls, g.case_name, g.run_name, path, n), 0);
	cr_assert_eq(lks_golden_write(&g, path), 0, "%s", lks_errmsg());
	lks_stored_run_release(&g);
}

/* Run id of the store, every stat row in memory. */
static inline void load_whole(struct fx *f, int64_t id, lks_stored_run *r)
{
	cr_assert_eq(lks_stored_run_load(f->s, id, LKS_LOAD_WHOLE, r), 0, "%s", lks_errmsg());
}

static inline int same_bits(const void *a, const void *b, size_t n)
{
	return memcmp(a, b, n) == 0;
}

/* a and b equal field by field, doubles and floats bit for bit (NaN: both NaN). */
static inline void expect_equal(const lks_stored_run *a, const lks_stored_run *b)
{
	cr_assert_str_eq(a->case_name, b->case_name);
	cr_assert_str_eq(a->run_name, b->run_name);
	cr_assert_str_eq(a->recipe, b->recipe);
	cr_assert_str_eq(a->backend, b->backend);
	cr_assert_str_eq(a->options, b->options);
	cr_assert_eq(a->W, b->W);
	cr_assert_eq(a->steps, b->steps);
	cr_assert_eq(a->seed, b->seed);
	cr_assert_str_eq(a->version, b->version);
	cr_assert_str_eq(a->compiler, b->compiler);
	cr_assert_str_eq(a->isa, b->isa);
	cr_assert_eq(a->nt, b->nt);
	for (int i = 0; i < a->nt; i++) {
		cr_assert_str_eq(a->names[i], b->names[i]);
		cr_assert_eq(a->phases[i], b->phases[i]);
	}
	cr_assert_eq(a->nsteprows, b->nsteprows);
	for (int i = 0; i < a->nsteprows; i++) {
		const lks_step_row *x = &a->steprows[i], *y = &b->steprows[i];

		cr_assert(x->step == y->step && x->rank == y->rank);
		cr_assert(same_bits(&x->loss, &y->loss, 8) || (isnan(x->loss) && isnan(y->loss)));
		cr_assert(same_bits(&x->grad_norm, &y->grad_norm, 8)
		          || (isnan(x->grad_norm) && isnan(y->grad_norm)));
		cr_assert(same_bits(&x->lr, &y->lr, 8) || (isnan(x->lr) && isnan(y->lr)));
	}
	cr_assert_eq(a->nstats, b->nstats);
	for (size_t i = 0; i < a->nstats; i++) {
		const lks_stat_row *x = &a->stats[i], *y = &b->stats[i];

		cr_assert(x->step == y->step && x->rank == y->rank && x->seq == y->seq);
		cr_assert(same_bits(&x->l2, &y->l2, 8) || (isnan(x->l2) && isnan(y->l2)), "row %zu l2 %a %a",
		          i, x->l2, y->l2);
		cr_assert(same_bits(&x->amax, &y->amax, 4) || (isnan(x->amax) && isnan(y->amax)),
		          "row %zu amax %a %a", i, (double)x->amax, (double)y->amax);
		cr_assert(same_bits(&x->scale, &y->scale, 4) || (isnan(x->scale) && isnan(y->scale)),
		          "row %zu scale %a %a", i, (double)x->scale, (double)y->scale);
		cr_assert(x->nonfinite == y->nonfinite && x->underflow == y->underflow
		          && x->saturated == y->saturated);
		cr_assert_eq(x->hash, y->hash, "row %zu hash %016llx %016llx", i,
		             (unsigned long long)x->hash, (unsigned long long)y->hash);
	}
}

/* Lines of a file, to edit as a person would. */
struct text {
	char *line[4096];
	int n;
};

static inline void text_read(struct text *t, const char *path)
{
	FILE *f = fopen(path, "r");
	char buf[4096];

	cr_assert_not_null(f);
	t->n = 0;
	while (fgets(buf, sizeof(buf), f)) {
		cr_assert_lt(t->n, 4096);
		t->line[t->n++] = strdup(buf);
	}
	fclose(f);
}

static inline void text_write(struct text *t, const char *path, int nlines, int cut_last_at)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	for (int i = 0; i < nlines; i++)
		if (i == nlines - 1 && cut_last_at >= 0)
			fwrite(t->line[i], 1, (size_t)cut_last_at, f);
		else
			fputs(t->line[i], f);
	fclose(f);
}

static inline void text_free(struct text *t)
{
	for (int i = 0; i < t->n; i++)
		free(t->line[i]);
	t->n = 0;
}

/* The index of the line that starts with prefix. */
static inline int text_find(const struct text *t, const char *prefix)
{
	for (int i = 0; i < t->n; i++)
		if (!strncmp(t->line[i], prefix, strlen(prefix)))
			return i;
	cr_assert_fail("no line '%s'", prefix);
	return -1;
}

/* Replaces tab-separated column col (from 0) of line i with v. */
static inline void text_set(struct text *t, int i, int col, const char *v)
{
	char out[4096] = "", *save, *tok, *copy = strdup(t->line[i]);
	int c = 0;

	copy[strcspn(copy, "\n")] = 0;
	for (tok = strtok_r(copy, "\t", &save); tok; tok = strtok_r(NULL, "\t", &save), c++) {
		if (c)
			strcat(out, "\t");
		strcat(out, c == col ? v : tok);
	}
	strcat(out, "\n");
	free(copy);
	free(t->line[i]);
	t->line[i] = strdup(out);
}

static inline char *text_col(const struct text *t, int i, int col, char *buf, size_t n)
{
	const char *p = t->line[i];

	for (int c = 0; c < col; c++)
		p = strchr(p, '\t') + 1;
	snprintf(buf, n, "%.*s", (int)strcspn(p, "\t\n"), p);
	return buf;
}

#endif
