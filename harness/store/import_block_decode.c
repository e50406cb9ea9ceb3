/*
 * import_block_decode.c: a blob of an imported run's records read back (import_block.h
 * has the layout; import_block.c writes it): its columns decoded, then the records handed
 * on in their order, each value with its precision as printed where its column is
 * printed; and the steps row a record stands for.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness/store/import_block.h"
#include "harness/store/import_block_impl.h"
#include "kernels/err.h"

/* ---- reading a blob ---- */

struct lks_in {
	const unsigned char *p, *end;
	int bad;
};

static uint64_t lks_get_varint(struct lks_in *in)
{
	uint64_t x = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		if (in->p == in->end)
			break;
		x |= (uint64_t)(*in->p & 0x7f) << shift;
		if (!(*in->p++ & 0x80))
			return x;
	}
	in->bad = 1;
	return 0;
}

static double lks_get_raw(struct lks_in *in)
{
	uint64_t u = 0;
	double v;

	if (in->end - in->p < 8) {
		in->bad = 1;
		return 0;
	}
	for (int i = 0; i < 8; i++)
		u |= (uint64_t)in->p[i] << (8 * i);
	in->p += 8;
	memcpy(&v, &u, sizeof(v));
	return v;
}

struct lks_dcol {
	const char *name;
	lks_metric_kind kind;
	int printed;                      /* its d are the decimals its values were written with */
	const unsigned char *has;         /* NULL: every record */
	double *v;
	unsigned char *dp;                /* per record: lks_metric_row.printed */
};

static int lks_present(const struct lks_dcol *c, int i)
{
	return !c->has || (c->has[i / 8] >> (i % 8) & 1);
}

static int lks_decode_col(struct lks_in *in, struct lks_dcol *c, int n, const int *rank,
                          int64_t *prev, int nprev)
{
	int mode = in->p < in->end ? *in->p++ : 2;

	if (mode > 1 || (mode == 1 && in->end - in->p < (n + 7) / 8))
		return -1;
	c->has = NULL;
	if (mode == 1) {
		c->has = in->p;
		in->p += (n + 7) / 8;
	}
	memset(prev, 0, (size_t)nprev * sizeof(*prev));
	for (int i = 0; i < n && !in->bad; i++) {
		uint64_t t;
		int d;

		if (!lks_present(c, i))
			continue;
		t = lks_get_varint(in);
		c->dp[i] = 0;
		if ((d = (int)(t & 15)) == LKS_DEC_RAW) {
			if (t != LKS_DEC_RAW)
				return -1;
			c->v[i] = lks_get_raw(in);
			continue;
		}
		if (c->printed && d > 0)  /* a whole number is a count, or whole: no rounding said */
			c->dp[i] = (unsigned char)(1 + d);
		/* unsigned: a damaged blob's difference may overflow, which is checked after */
		prev[rank[i]] = (int64_t)((uint64_t)prev[rank[i]] + (uint64_t)lks_unzz(t >> 4));
		if (!(fabs((double)prev[rank[i]]) < LKS_M_LIMIT))
			return -1;
		c->v[i] = d ? (double)prev[rank[i]] / lks_import_pow10[d] : (double)prev[rank[i]];
	}
	return in->bad ? -1 : 0;
}

/* The keys of a keyed block's n records into key[] (import_block.h, version 3): 0, or -1
   (damaged). */
static int lks_decode_keys(struct lks_in *in, lks_block_key *key, int n)
{
	int64_t t = 0, m = 0;
	int mode;
	const unsigned char *has = NULL;

	for (int i = 0; i < n; i++) {
		t += lks_unzz(lks_get_varint(in));
		if (t < 0 || t > INT32_MAX)
			return -1;
		key[i].tensor = (int)t;
	}
	for (int i = 0; i < n; i++) {
		m += lks_unzz(lks_get_varint(in));
		if (m < -1 || m > INT32_MAX)
			return -1;
		key[i].micro = (int)m;
	}
	mode = in->p < in->end ? *in->p++ : 3;
	if (in->bad || mode > 2 || (mode == 1 && in->end - in->p < (n + 7) / 8))
		return -1;
	if (mode == 1) {
		has = in->p;
		in->p += (n + 7) / 8;
	}
	for (int i = 0; i < n; i++) {
		key[i].has_hash = mode == 0 || (mode == 1 && (has[i / 8] >> (i % 8) & 1));
		key[i].hash = 0;
		if (!key[i].has_hash)
			continue;
		if (in->end - in->p < 8)
			return -1;
		for (int k = 0; k < 8; k++)
			key[i].hash |= (uint64_t)in->p[k] << (8 * k);
		in->p += 8;
	}
	return 0;
}

struct lks_unkeyed {
	lks_block_fn fn;
	void *arg;
};

static int lks_block_unkeyed(void *arg, int step, int rank, const lks_block_key *key,
                             const lks_metric_row *rows, int n)
{
	const struct lks_unkeyed *u = arg;

	if (key)
		return lks_err("a block of tensor records read as steps' records");
	return u->fn(u->arg, step, rank, rows, n);
}

int lks_block_decode(const unsigned char *data, size_t len, lks_block_fn fn, void *arg)
{
	struct lks_unkeyed u = { fn, arg };

	return lks_block_decode_keyed(data, len, lks_block_unkeyed, &u);
}

int lks_block_decode_keyed(const unsigned char *data, size_t len, lks_block_key_fn fn,
                           void *arg)
{
	struct lks_in in = { data, data + len, 0 };
	struct lks_dcol *cols = NULL;
	int *step = NULL, *rank = NULL, n, ncols, max_rank = 0, rc = -1;
	int64_t *prev = NULL;
	double *vals = NULL;
	unsigned char *dps = NULL;
	lks_block_key *keys = NULL;
	uint64_t version = lks_get_varint(&in);
	int kinds = version == 1 ? LKS_KIND_PERFORMANCE : LKS_KIND_PERFORMANCE | LKS_KIND_PRINTED;

	if (version != 1 && version != LKS_BLOCK_VERSION && version != LKS_BLOCK_VERSION_KEYED)
		return lks_err("an import block of an unknown layout");
	n = (int)lks_get_varint(&in);
	ncols = (int)lks_get_varint(&in);
	if (in.bad || n < 0 || n > LKS_BLOCK_RECORDS || ncols < 0 || ncols > LKS_BLOCK_NAMES)
		return lks_err("a damaged import block (%d records, %d names)", n, ncols);
	if (!(cols = calloc((size_t)ncols + 1, sizeof(*cols)))
	    || !(step = malloc(((size_t)n + 1) * sizeof(int)))
	    || !(rank = malloc(((size_t)n + 1) * sizeof(int)))
	    || !(vals = malloc(((size_t)n * (size_t)ncols + 1) * sizeof(double)))
	    || !(dps = malloc((size_t)n * (size_t)ncols + 1))
	    || (version == LKS_BLOCK_VERSION_KEYED
	        && !(keys = malloc(((size_t)n + 1) * sizeof(*keys))))) {
		lks_err("out of memory");
		goto out;
	}
	for (int j = 0; j < ncols; j++) {
		const unsigned char *nul;

		if (in.end - in.p < 3 || (*in.p & ~kinds)
		    || !(nul = memchr(in.p + 1, 0, (size_t)(in.end - in.p - 1)))
		    || nul == in.p + 1 || nul - (in.p + 1) >= LKS_METRIC_NAME_MAX)
			goto bad;
		cols[j] = (struct lks_dcol){ (const char *)in.p + 1,
		                             *in.p & LKS_KIND_PERFORMANCE ? LKS_METRIC_PERFORMANCE
		                             : LKS_METRIC_NUMERICS, !!(*in.p & LKS_KIND_PRINTED),
		                             NULL, vals + (size_t)j * (size_t)n,
		                             dps + (size_t)j * (size_t)n };
		in.p = nul + 1;
	}
	for (int i = 0; i < n; i++) {
		uint64_t r = lks_get_varint(&in);

		if (r > LKS_BLOCK_MAX_RANK)
			goto bad;
		rank[i] = (int)r;
		max_rank = rank[i] > max_rank ? rank[i] : max_rank;
	}
	for (int i = 0, prev_step = 0; i < n; i++) {
		int64_t s = prev_step + lks_unzz(lks_get_varint(&in));

		if (s < 0 || s > INT32_MAX)
			goto bad;
		step[i] = prev_step = (int)s;
	}
	if (keys && lks_decode_keys(&in, keys, n))
		goto bad;
	if (in.bad || !(prev = malloc(((size_t)max_rank + 1) * sizeof(*prev)))) {
		if (!in.bad)
			lks_err("out of memory");
		goto bad_or_oom;
	}
	for (int j = 0; j < ncols; j++)
		if (lks_decode_col(&in, &cols[j], n, rank, prev, max_rank + 1))
			goto bad;
	if (in.p != in.end)
		goto bad;
	rc = 0;
	for (int i = 0; !rc && i < n; i++) {
		lks_metric_row rows[LKS_METRICS_MAX];
		int k = 0;

		for (int j = 0; j < ncols; j++) {
			if (!lks_present(&cols[j], i))
				continue;
			if (k == LKS_METRICS_MAX)
				goto bad;
			rows[k++] = (lks_metric_row){ step[i], rank[i], cols[j].name, cols[j].kind,
			                              cols[j].v[i], cols[j].dp[i] };
		}
		rc = fn(arg, step[i], rank[i], keys ? &keys[i] : NULL, rows, k);
	}
	goto out;
bad:
	lks_err("a damaged import block");
bad_or_oom:
	rc = -1;
out:
	free(keys);
	free(prev);
	free(vals);
	free(dps);
	free(rank);
	free(step);
	free(cols);
	return rc;
}

void lks_block_step_row(int step, int rank, const lks_metric_row *rows, int n,
                        lks_step_row *out)
{
	*out = (lks_step_row){ .step = step, .rank = rank, .loss = NAN, .grad_norm = NAN,
	                       .lr = NAN, .step_time = NAN };
	for (int i = 0; i < n; i++) {
		const char *name = rows[i].name;
		double v = rows[i].value;

		out->nonfinite += rows[i].kind == LKS_METRIC_NUMERICS && !isfinite(v);
		/* the canonical metrics the steps row holds too, NaN without them (by the first
		   letter first: a long log has millions of rows, most of them none of these) */
		if (name[0] == 'l' && !strcmp(name, "loss"))
			out->loss = v;
		else if (name[0] == 'g' && !strcmp(name, "grad_norm"))
			out->grad_norm = v;
		else if (name[0] == 'l' && !strcmp(name, "lr"))
			out->lr = v;
		else if (name[0] == 'i' && !strcmp(name, "iteration_time"))
			out->step_time = v / 1000.0;  /* ms */
		else if (name[0] == 'i' && !strcmp(name, "iteration_time_s"))
			out->step_time = v;
	}
}
