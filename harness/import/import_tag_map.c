/*
 * import_tag_map.c: a user's own labels (lockstep import --tag-map, a case run's
 * import_tag_map; import.h): LABEL=NAME pairs, each label read as a metric of the one table
 * or a name of the user's, before any format's own labels (import_label.c asks here first).
 * A map is small and parsed once per import; a lookup is a binary search by length, then
 * bytes, so a log of many labels the map lacks pays a few compares a label (and only where
 * a label is not remembered: import_label.c).
 */
#include <ctype.h>
#include <jansson.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/file.h"
#include "harness/import/import_impl.h"
#include "harness/import/import_run_impl.h"
#include "kernels/err.h"

/* A map's file is a list of pairs, not a log: a megabyte is thousands of them. */
#define LKS_TAG_MAP_FILE_MAX (1 << 20)

struct lks_tag_pair {
	const char *label;        /* into the map's text */
	size_t len;
	lks_import_metric m;      /* m.name: name */
	char name[LKS_IMPORT_NAME_MAX];
	int kind_given;           /* ":numerics" or ":performance" written */
	long at;                  /* its line of FILE, or its place in the list (from 1) */
};

struct lks_import_tag_map {
	uint64_t id;              /* no other map of this process has had it (import_label.c
	                             forgets what it learnt under another) */
	char *text;               /* the pairs' bytes, cut in place */
	struct lks_tag_pair *pair;  /* (n) by length, then bytes */
	atomic_int *hit;          /* (n) pair i named a tag read (any part's thread) */
	int n;
};

static atomic_uint_least64_t lks_tag_map_ids;

/* Where a bad pair is: "'FILE':LINE" for a map's file, else "tag map 'TEXT', pair N". */
struct lks_tag_where {
	const char *file;         /* NULL: a list given inline */
	const char *text;
};

static const char *lks_tag_at(const struct lks_tag_where *w, long at, char *buf, size_t size)
{
	if (w->file)
		snprintf(buf, size, "'%s':%ld", w->file, at);
	else
		snprintf(buf, size, "tag map '%s', pair %ld", w->text, at);
	return buf;
}

/* Bad input at a pair: "<where>: <why>'<a>'". */
static int lks_tag_bad(const struct lks_tag_where *w, long at, const char *why, const char *a,
                       size_t alen)
{
	char where[4400];

	return lks_err("%s: %s'%.*s'", lks_tag_at(w, at, where, sizeof(where)), why, (int)alen, a),
	       LKS_E_BAD_INPUT;
}

static int lks_tag_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* s..e without the blanks around it. */
static void lks_tag_trim(const char **s, const char **e)
{
	while (*s < *e && lks_tag_blank(**s))
		(*s)++;
	while (*e > *s && lks_tag_blank((*e)[-1]))
		(*e)--;
}

/* "NAME" or "NAME:KIND" (s..e, trimmed) into p: a name as a record stores one (letters,
   digits, '_'), its kind the table's, the one written, or its words' (as for a label the
   table lacks). A table's name given another kind is refused: a check, a golden file and
   the report take its kind from the table. */
static int lks_tag_name(struct lks_tag_pair *p, const char *s, const char *e,
                        const struct lks_tag_where *w)
{
	const char *colon = memchr(s, ':', (size_t)(e - s)), *ne = colon ? colon : e;
	const lks_import_metric *row;
	lks_metric_kind kind = LKS_METRIC_NUMERICS;
	size_t n = (size_t)(ne - s);

	if (colon) {
		const char *k = colon + 1;
		size_t kl = (size_t)(e - k);

		if (kl == 11 && !memcmp(k, "performance", 11))
			kind = LKS_METRIC_PERFORMANCE;
		else if (kl != 8 || memcmp(k, "numerics", 8))
			return lks_tag_bad(w, p->at, "a kind is numerics or performance, not ", k, kl);
		p->kind_given = 1;
	}
	if (n == 0)
		return lks_tag_bad(w, p->at, "no metric name after the label ", p->label, p->len);
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			n = 0;
	if (n == 0 || n >= sizeof(p->name))
		return lks_tag_bad(w, p->at, "a metric name is letters, digits and '_' (at most 63), "
		                   "not ", s, (size_t)(ne - s));
	if (lks_import_name_reserved(s, n))
		return lks_tag_bad(w, p->at, "a metric name is not step or rank (they key every "
		                   "record), not ", s, n);
	memcpy(p->name, s, n);
	p->name[n] = 0;
	row = lks_import_metric_find(p->name);
	if (row && p->kind_given && row->kind != kind)
		return lks_tag_bad(w, p->at, "a metric of lockstep's table keeps the table's kind: ",
		                   s, (size_t)(e - s));
	p->m = row ? *row : (lks_import_metric){ .unit = "", .what = "a name of the tag map" };
	p->m.name = NULL;  /* set once the pairs stay where they are */
	p->m.kind = row ? row->kind
	          : p->kind_given ? kind
	          : lks_import_sounds_performance(p->name, n) ? LKS_METRIC_PERFORMANCE
	                                                      : LKS_METRIC_NUMERICS;
	return 0;
}

/* One pair s..e (blanks around it dropped); at: its line or place. */
static int lks_tag_pair(lks_import_tag_map *m, char *s, char *e, long at,
                        const struct lks_tag_where *w)
{
	struct lks_tag_pair *p = &m->pair[m->n];
	const char *ls = s, *le, *eq = NULL, *ns, *ne = e;
	json_t *utf8;

	/* the last '=': a name holds none, so a label may */
	for (char *q = e; q > s && !eq; q--)
		if (q[-1] == '=')
			eq = q - 1;
	if (!eq)
		return lks_tag_bad(w, at, "want LABEL=NAME, not ", s, (size_t)(e - s));
	le = eq;
	lks_tag_trim(&ls, &le);
	if (ls == le)
		return lks_tag_bad(w, at, "no label before '=' in ", s, (size_t)(e - s));
	/* a fingerprint holds it as JSON, which is UTF-8 */
	if (!(utf8 = json_stringn(ls, (size_t)(le - ls))))
		return lks_tag_bad(w, at, "a label is UTF-8 text, not ", ls, (size_t)(le - ls));
	json_decref(utf8);
	memset(p, 0, sizeof(*p));
	p->label = ls;
	p->len = (size_t)(le - ls);
	p->at = at;
	ns = eq + 1;
	lks_tag_trim(&ns, &ne);
	if (lks_tag_name(p, ns, ne, w))
		return LKS_E_BAD_INPUT;
	m->n++;
	return 0;
}

static int lks_tag_cmp(const void *a, const void *b)
{
	const struct lks_tag_pair *x = a, *y = b;

	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return memcmp(x->label, y->label, x->len);
}

/* The map's pairs sorted, and no label twice. */
static int lks_tag_settle(lks_import_tag_map *m, const struct lks_tag_where *w)
{
	qsort(m->pair, (size_t)m->n, sizeof(m->pair[0]), lks_tag_cmp);
	for (int i = 0; i < m->n; i++) {
		m->pair[i].m.name = m->pair[i].name;
		if (i && !lks_tag_cmp(&m->pair[i - 1], &m->pair[i])) {
			const struct lks_tag_pair *a = &m->pair[i - 1], *b = &m->pair[i];

			if (a->at > b->at)
				a = b, b = &m->pair[i - 1];
			if (w->file)
				return lks_err("'%s':%ld: label '%.*s' given twice (line %ld)", w->file, b->at,
				               (int)b->len, b->label, a->at), LKS_E_BAD_INPUT;
			return lks_err("tag map '%s': label '%.*s' given twice (pairs %ld and %ld)",
			               w->text, (int)b->len, b->label, a->at, b->at), LKS_E_BAD_INPUT;
		}
	}
	m->id = atomic_fetch_add_explicit(&lks_tag_map_ids, 1, memory_order_relaxed) + 1;
	return 0;
}

/* The pairs of text, cut at sep ('\n' a file's lines, ',' a list). */
static int lks_tag_pairs(lks_import_tag_map *m, char sep, const struct lks_tag_where *w)
{
	int most = 1, rc;
	long at = 0;

	for (const char *q = m->text; *q; q++)
		most += *q == sep;
	if (!(m->pair = calloc((size_t)most, sizeof(m->pair[0]))))
		return lks_err("out of memory");
	for (char *s = m->text, *e;; s = e + 1) {
		const char *ts, *te;

		e = strchr(s, sep);
		e = e ? e : s + strlen(s);
		at++;
		ts = s, te = e;
		lks_tag_trim(&ts, &te);
		if (sep == '\n' && (ts == te || *ts == '#')) {
			/* a file's blank line or comment */
		} else if (ts == te) {
			return lks_tag_bad(w, at, "an empty pair in ", w->text, strlen(w->text));
		} else if ((rc = lks_tag_pair(m, s, e, at, w))) {
			return rc;
		}
		if (!*e)
			break;
	}
	if (m->n == 0)
		return w->file ? (lks_err("'%s': no LABEL=NAME line", w->file), LKS_E_BAD_INPUT)
		               : lks_tag_bad(w, 1, "want LABEL=NAME, not ", "", 0);
	return lks_tag_settle(m, w);
}

/* The file of "@FILE" (relative to dir where not absolute) into m->text. */
static int lks_tag_file(lks_import_tag_map *m, const char *file, const char *dir, char *path,
                        size_t size)
{
	size_t len;
	int n = file[0] == '/' || !dir ? snprintf(path, size, "%s", file)
	                                        : snprintf(path, size, "%s/%s", dir, file);

	if (n < 0 || (size_t)n >= size)
		return lks_err("tag map file '%s': path too long", file), LKS_E_BAD_INPUT;
	if (lks_file_read(path, LKS_TAG_MAP_FILE_MAX, "a tag map", &m->text, &len))
		return LKS_E_BAD_INPUT;  /* the message names the file */
	if (memchr(m->text, 0, len))
		return lks_err("'%s': a NUL byte in a tag map", path), LKS_E_BAD_INPUT;
	return 0;
}

int lks_import_tag_map_parse(const char *text, const char *dir, lks_import_tag_map **out)
{
	lks_import_tag_map *m = calloc(1, sizeof(*m));
	char path[4096];
	struct lks_tag_where w = { NULL, text };
	int rc;

	*out = NULL;
	if (!m)
		return lks_err("out of memory");
	if (text[0] == '@') {
		w.file = path;
		rc = lks_tag_file(m, text + 1, dir, path, sizeof(path));
		rc = rc ? rc : lks_tag_pairs(m, '\n', &w);
	} else {
		rc = (m->text = strdup(text)) ? lks_tag_pairs(m, ',', &w) : lks_err("out of memory");
	}
	if (!rc && !(m->hit = calloc((size_t)m->n + 1, sizeof(*m->hit))))
		rc = lks_err("out of memory");
	if (rc) {
		lks_import_tag_map_free(m);
		return rc;
	}
	*out = m;
	return 0;
}

void lks_import_tag_map_free(lks_import_tag_map *m)
{
	if (!m)
		return;
	free(m->pair);
	free(m->hit);
	free(m->text);
	free(m);
}

uint64_t lks_import_tag_map_id(const lks_import_tag_map *m)
{
	return m ? m->id : 0;
}

const lks_import_metric *lks_import_tag_map_find(const lks_import_tag_map *m, const char *label,
                                                 size_t len)
{
	struct lks_tag_pair key = { .label = label, .len = len };
	const struct lks_tag_pair *p = bsearch(&key, m->pair, (size_t)m->n, sizeof(m->pair[0]),
	                                       lks_tag_cmp);

	if (p && m->hit)
		atomic_store_explicit(&m->hit[p - m->pair], 1, memory_order_relaxed);
	return p ? &p->m : NULL;
}

int lks_import_tag_map_unused(const lks_import_tag_map *m, char *buf, size_t size)
{
	size_t len = 0;
	int n = 0;

	if (size)
		buf[0] = 0;
	for (int i = 0; m && m->hit && i < m->n; i++) {
		if (atomic_load_explicit(&m->hit[i], memory_order_relaxed))
			continue;
		if (n++ < 4 && len < size)
			len += (size_t)snprintf(buf + len, size - len, "%s'%.*s'", n > 1 ? ", " : "",
			                        (int)m->pair[i].len, m->pair[i].label);
	}
	if (n > 4 && len < size)
		snprintf(buf + len, size - len, " and %d more", n - 4);
	return n;
}

json_t *lks_import_tag_map_json(const lks_import_tag_map *m)
{
	json_t *o = json_object();

	for (int i = 0; o && i < m->n; i++) {
		const struct lks_tag_pair *p = &m->pair[i];
		char name[LKS_IMPORT_NAME_MAX + 16];

		snprintf(name, sizeof(name), "%s:%s", p->name, lks_metric_kind_name(p->m.kind));
		if (json_object_setn_new(o, p->label, p->len, json_string(name))) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}
