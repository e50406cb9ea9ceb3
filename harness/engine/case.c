/*
 * case.c: case files (DESIGN.md, A case file): INI read with inih, every mistake reported
 * with its file and line, then --set overrides applied and the whole case validated once
 * more (case_validate.c). The keys of each section are a table (case_keys.c); a suite's
 * paths and LOCKSTEP_INJECT are case_suite.c's.
 *
 * Debian's inih gives the handler no line number (INI_HANDLER_LINENO is 0) and does not
 * call it for a section without keys, so lines reach inih one at a time through our own
 * reader: it counts them and sees the section headers itself. The reader also strips
 * leading blanks, which turns off inih's multi-line values: an indented key would
 * otherwise be taken as the continuation of the previous value.
 */
#include "harness/engine/case_parse.h"

#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "harness/base/file.h"
#include "harness/base/name.h"
#include "kernels/err.h"

const lks_run_cfg *lks_case_run(const lks_case *c, const char *name)
{
	for (int i = 0; i < c->nruns; i++)
		if (strcmp(c->runs[i].name, name) == 0)
			return &c->runs[i];
	return NULL;
}

/* Tokens a rank of run r takes per step: its share of the global batch, in tokens. */
long long lks_case_run_tokens(const lks_case *c, const lks_run_cfg *r)
{
	/* the replicas split the global batch: a tp group's ranks share theirs */
	int reps = r->tp > 1 && r->world_size % r->tp == 0 ? r->world_size / r->tp : r->world_size;

	return (long long)c->model.batch * c->world_size / reps * c->model.seq;
}

/* ---- the state of one load ---- */

int lks_err_prefix(const char *prefix)
{
	char msg[1024];

	snprintf(msg, sizeof(msg), "%s", lks_errmsg());
	return lks_err("%s: %s", prefix, msg);
}

int lks_case_at(struct lks_parse *st, int line)
{
	char where[600];

	if (line > 0)
		snprintf(where, sizeof(where), "%s:%d", st->c->path, line);
	else
		snprintf(where, sizeof(where), "%s", st->c->path);
	st->rc = lks_err_prefix(where);
	return st->rc;
}

static void *lks_sec_base(struct lks_parse *st, enum lks_sec sec, int idx)
{
	switch (sec) {
	case LKS_SEC_CASE: return st->c;
	case LKS_SEC_MODEL: return &st->c->model;
	case LKS_SEC_OPTIM: return &st->c->optim;
	case LKS_SEC_RUN: return &st->c->runs[idx];
	case LKS_SEC_CHECK: return &st->c->checks[idx];
	default: return NULL;
	}
}

unsigned *lks_sec_seen(struct lks_parse *st, enum lks_sec sec, int idx)
{
	if (sec == LKS_SEC_RUN)
		return &st->run_seen[idx];
	if (sec == LKS_SEC_CHECK)
		return &st->check_seen[idx];
	return &st->seen[sec];
}

int lks_sec_line(struct lks_parse *st, enum lks_sec sec, int idx)
{
	if (sec == LKS_SEC_RUN)
		return st->c->runs[idx].line;
	if (sec == LKS_SEC_CHECK)
		return st->c->checks[idx].line;
	return st->sec_line[sec];
}

const char *lks_sec_label(struct lks_parse *st, enum lks_sec sec, int idx, char *buf,
			  size_t size)
{
	if (sec == LKS_SEC_RUN)
		snprintf(buf, size, "[run %s]", st->c->runs[idx].name);
	else if (sec == LKS_SEC_CHECK)
		snprintf(buf, size, "[check %s]", st->c->checks[idx].name);
	else
		snprintf(buf, size, "[%s]", lks_secs[sec].name);
	return buf;
}

/* One "name = value" of a section; override: a --set may replace a key the file gave. */
static int lks_case_key(struct lks_parse *st, enum lks_sec sec, int idx, const char *name,
			const char *val, int override)
{
	unsigned *seen = lks_sec_seen(st, sec, idx);
	char label[LKS_NAME_MAX + 16];
	int k = lks_key_find(sec, name);

	lks_sec_label(st, sec, idx, label, sizeof(label));
	if (k < 0)
		return lks_err("unknown key '%s' in %s", name, label);
	if ((*seen & (1u << k)) && !override)
		return lks_err("duplicate key '%s' in %s", name, label);
	if (lks_key_store(&lks_secs[sec].keys[k], lks_sec_base(st, sec, idx), val, label))
		return -1;
	if (sec == LKS_SEC_CHECK && lks_secs[sec].keys[k].type == LKS_KEY_METRIC)
		st->c->checks[idx].metric_line = override ? 0 : st->line;
	if (sec <= LKS_SEC_OPTIM)
		st->key_line[sec][k] = override ? 0 : st->line;
	*seen |= 1u << k;
	return 0;
}

/* ---- sections ---- */

_Static_assert(LKS_NAME_RULE_MAX < LKS_NAME_MAX, "a good name fits lks_case's buffers");

/* Room for one more run (or check) and its bits in seen. */
static int lks_grow(void **items, size_t size, unsigned **seen, int n, int *cap)
{
	int want = *cap ? *cap * 2 : 8;
	void *p;

	if (n < *cap)
		return 0;
	if (!(p = realloc(*items, (size_t)want * size)))
		return lks_err("out of memory");
	*items = p;
	if (!(p = realloc(*seen, (size_t)want * sizeof(**seen))))
		return lks_err("out of memory");
	*seen = p;
	*cap = want;
	return 0;
}

static int lks_case_add_run(struct lks_parse *st, const char *name)
{
	lks_case *c = st->c;
	lks_run_cfg *r;

	for (int i = 0; i < c->nruns; i++)
		if (strcmp(c->runs[i].name, name) == 0)
			return lks_err("duplicate run '%s' (first at line %d)", name,
				       c->runs[i].line);
		else if (strcasecmp(c->runs[i].name, name) == 0)  /* golden/<class>/<case>/<run> */
			return lks_err("run '%s' differs from run '%s' (line %d) only in case: their "
			               "golden files would be one on a case-insensitive file system",
			               name, c->runs[i].name, c->runs[i].line);
	if (lks_grow((void **)&c->runs, sizeof(*c->runs), &st->run_seen, c->nruns, &st->run_cap))
		return -1;
	r = &c->runs[c->nruns];
	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->recipe = LKS_RECIPE_BF16;
	r->amax_history = 16;
	r->inject.step = r->inject.rank = -1;
	r->line = st->line;
	st->run_seen[c->nruns] = 0;
	st->idx = c->nruns++;
	return 0;
}

static int lks_case_add_check(struct lks_parse *st, const char *name)
{
	lks_case *c = st->c;
	lks_check_cfg *k;

	for (int i = 0; i < c->nchecks; i++)
		if (strcmp(c->checks[i].name, name) == 0)
			return lks_err("duplicate check '%s' (first at line %d)", name,
				       c->checks[i].line);
	if (lks_grow((void **)&c->checks, sizeof(*c->checks), &st->check_seen, c->nchecks,
		     &st->check_cap))
		return -1;
	k = &c->checks[c->nchecks];
	memset(k, 0, sizeof(*k));
	snprintf(k->name, sizeof(k->name), "%s", name);
	k->exp_step = k->exp_rank = -1;
	k->line = st->line;
	st->check_seen[c->nchecks] = 0;
	st->idx = c->nchecks++;
	return 0;
}

static const char *lks_skip_blank(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

static const char *lks_skip_word(const char *p, const char *end)
{
	while (p < end && *p != ' ' && *p != '\t')
		p++;
	return p;
}

/* A "[...]" line (leading blanks gone). inih parses it too, but cuts its section string
   at 49 characters and never calls the handler for a section without keys. */
static int lks_case_section(struct lks_parse *st, const char *line)
{
	const char *end = strchr(line, ']'), *w, *we, *n, *ne, *p;
	char name[LKS_NAME_MAX];
	size_t wlen;

	if (!end)
		return lks_err("section header without ']'");
	p = lks_skip_blank(end + 1, end + strlen(end));
	if (*p && *p != ';' && *p != '#')
		return lks_err("text after the section header");
	w = lks_skip_blank(line + 1, end);
	we = lks_skip_word(w, end);
	n = lks_skip_blank(we, end);
	ne = lks_skip_word(n, end);
	wlen = (size_t)(we - w);
	if (w == end)
		return lks_err("empty section header []");
	if (lks_skip_blank(ne, end) != end)
		return lks_err("section [%.*s] has more than one name", (int)(end - w), w);
	for (int s = LKS_SEC_CASE; s <= LKS_SEC_OPTIM; s++) {
		if (wlen != strlen(lks_secs[s].name) || memcmp(w, lks_secs[s].name, wlen) != 0)
			continue;
		if (n != end)
			return lks_err("[%s] takes no name, not '%.*s'", lks_secs[s].name,
				       (int)(ne - n), n);
		if (st->sec_line[s])
			return lks_err("duplicate section [%s] (first at line %d)",
				       lks_secs[s].name, st->sec_line[s]);
		st->sec_line[s] = st->line;
		st->sec = (enum lks_sec)s;
		return 0;
	}
	if (!(wlen == 3 && memcmp(w, "run", 3) == 0) && !(wlen == 5 && memcmp(w, "check", 5) == 0))
		return lks_err("unknown section [%.*s] (case, model, optim, run NAME, check NAME)",
			       (int)(end - w), w);
	if (n == end)
		return lks_err("[%.*s] needs a name: [%.*s NAME]", (int)wlen, w, (int)wlen, w);
	if (lks_name_check(wlen == 3 ? "run" : "check", n, (size_t)(ne - n)))
		return -1;
	snprintf(name, sizeof(name), "%.*s", (int)(ne - n), n);
	st->sec = wlen == 3 ? LKS_SEC_RUN : LKS_SEC_CHECK;
	return st->sec == LKS_SEC_RUN ? lks_case_add_run(st, name) : lks_case_add_check(st, name);
}

/* inih's fgets: one line per call, counted; section headers are seen here. A line ends
   at LF, CRLF or a lone CR (a classic Mac editor's, a paste of mixed endings): no text
   after a CR is taken into the line before it, and the limit counts a line without its
   end, whichever it is. */
static char *lks_case_reader(char *str, int num, void *stream)
{
	struct lks_parse *st = stream;
	const char *p = st->next;
	size_t len;

	if (st->rc || !*p)
		return NULL;
	len = strcspn(p, "\r\n");
	st->next = p + len + (p[len] == '\r' && p[len + 1] == '\n' ? 2 : p[len] ? 1 : 0);
	if (++st->line == 1 && len >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
		p += 3, len -= 3;  /* a UTF-8 byte order mark, which inih would skip too */
	/* num - 3 characters, its end not counted: the limit an LF line always had */
	if (len + 3 > (size_t)num) {
		lks_err("line longer than %d characters", num - 3);
		lks_case_at(st, st->line);
		return NULL;
	}
	while (len && (*p == ' ' || *p == '\t'))
		p++, len--;
	memcpy(str, p, len);
	str[len] = 0;
	if (str[0] == '[' && lks_case_section(st, str)) {
		lks_case_at(st, st->line);
		return NULL;
	}
	return str;
}

#if INI_HANDLER_LINENO
static int lks_case_handler(void *user, const char *section, const char *name, const char *val,
			    int lineno)
#else
static int lks_case_handler(void *user, const char *section, const char *name, const char *val)
#endif
{
	struct lks_parse *st = user;

	/* our section, from the reader, is not cut at 49 characters; our line count is
	   inih's lineno where a build passes it */
	(void)section;
	if (st->rc)
		return 0;
	if (st->sec == LKS_SEC_NONE)
		lks_err("key '%s' before any section", name);
	else if (lks_case_key(st, st->sec, st->idx, name, val ? val : "", 0) == 0)
		return 1;
	lks_case_at(st, st->line);
	return 0;
}

/* ---- overrides ---- */

static void lks_trim(char *s)
{
	size_t len = strlen(s), skip = strspn(s, " \t");

	while (len > skip && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	memmove(s, s + skip, len - skip);
	s[len - skip] = 0;
}

/* "section.key=value" or "run.NAME.key=value"; names hold no '.', so the split is clear.
   NAME '*' (no name has one) sets the key of every run, or every check, of the case. */
static int lks_case_set(struct lks_parse *st, const char *set)
{
	char buf[512], *eq, *dot, *key;
	enum lks_sec sec = LKS_SEC_NONE;
	int idx = 0;

	if (strlen(set) >= sizeof(buf))
		return lks_err("longer than %zu characters", sizeof(buf) - 1);
	strcpy(buf, set);
	if (!(eq = strchr(buf, '=')) || !(dot = memchr(buf, '.', (size_t)(eq - buf))))
		return lks_err("want section.key=value (model.hidden=512, run.NAME.recipe=bf16)");
	*eq = 0;
	*dot = 0;
	lks_trim(buf);
	for (int s = LKS_SEC_CASE; s < LKS_SEC_COUNT; s++)
		if (strcmp(buf, lks_secs[s].name) == 0)
			sec = (enum lks_sec)s;
	if (sec == LKS_SEC_NONE)
		return lks_err("unknown section '%s' (case, model, optim, run.NAME, check.NAME)",
			       buf);
	key = dot + 1;
	if (sec == LKS_SEC_RUN || sec == LKS_SEC_CHECK) {
		const char *name = dot + 1;

		if (!(key = strrchr(name, '.')))
			return lks_err("want %s.NAME.key=value", buf);
		*key++ = 0;
		lks_trim(key);
		lks_trim(eq + 1);
		if (strcmp(name, "*") == 0) {
			int n = sec == LKS_SEC_RUN ? st->c->nruns : st->c->nchecks;

			for (int i = 0; i < n; i++)
				if (lks_case_key(st, sec, i, key, eq + 1, 1))
					return -1;
			return 0;
		}
		idx = -1;
		for (int i = 0; sec == LKS_SEC_RUN && i < st->c->nruns; i++)
			if (strcmp(st->c->runs[i].name, name) == 0)
				idx = i;
		for (int i = 0; sec == LKS_SEC_CHECK && i < st->c->nchecks; i++)
			if (strcmp(st->c->checks[i].name, name) == 0)
				idx = i;
		if (idx < 0)
			return lks_err("no %s '%s' in '%s'", buf, name, st->c->path);
	}
	lks_trim(key);
	lks_trim(eq + 1);
	return lks_case_key(st, sec, idx, key, eq + 1, 1);
}

int lks_case_set_reaches(const char *set, const char *run)
{
	const char *eq = strchr(set, '='), *dot = strchr(set, '.'), *name, *key;
	char sec[16];
	size_t len;

	if (!eq || !dot || dot > eq || (size_t)(dot - set) >= sizeof(sec))
		return 0;  /* not an override: lks_case_set refuses it */
	memcpy(sec, set, (size_t)(dot - set));
	sec[dot - set] = 0;
	lks_trim(sec);
	if (strcmp(sec, "run"))
		return strcmp(sec, "check") != 0;  /* case, model, optim */
	name = dot + 1;  /* run.NAME.key: NAME holds no '.' */
	for (key = eq; key > name && key[-1] != '.'; key--)
		;
	len = key > name ? (size_t)(key - 1 - name) : 0;
	return (len == 1 && *name == '*') || (len && len == strlen(run) && !strncmp(name, run, len));
}

int lks_case_override(lks_case *c, const char *set)
{
	struct lks_parse st = { .c = c, .sec = LKS_SEC_NONE };
	int rc;

	/* no key counts as given: an override may replace any */
	st.run_seen = calloc((size_t)c->nruns + 1, sizeof(*st.run_seen));
	st.check_seen = calloc((size_t)c->nchecks + 1, sizeof(*st.check_seen));
	rc = st.run_seen && st.check_seen ? lks_case_set(&st, set) : lks_err("out of memory");
	free(st.run_seen);
	free(st.check_seen);
	return rc;
}

/* ---- load ---- */

static int lks_read_text(const char *path, char **out)
{
	size_t len;
	int rc = lks_file_read(path, LKS_CASE_FILE_MAX, "a case file", out, &len);

	if (rc == 0 && strlen(*out) != len) {
		free(*out);
		*out = NULL;
		rc = lks_err("'%s' contains a NUL byte: not a case file", path);
	}
	return rc ? -1 : 0;
}

static int lks_case_init(lks_case *c, const char *path)
{
	const char *base = strrchr(path, '/');
	size_t len;

	memset(c, 0, sizeof(*c));
	base = base ? base + 1 : path;
	len = strlen(base);
	if (len > 4 && strcmp(base + len - 4, ".ini") == 0)
		len -= 4;
	if (strlen(path) >= sizeof(c->path))
		return lks_err("path '%s' is too long", path);
	/* the name makes golden/<class>/<case>/: "...ini" would put it beside <class> */
	if (lks_name_check("case", base, len))
		return lks_err_prefix(path);
	strcpy(c->path, path);
	memcpy(c->name, base, len);
	c->seed = 1234;
	c->world_size = 1;
	c->optim = (lks_optim_cfg){ .lr = 3e-3f, .min_lr = 3e-4f, .beta1 = 0.9f, .beta2 = 0.95f,
				    .eps = 1e-8f, .weight_decay = 0.1f, .clip = 1.0f };
	return 0;
}

/* The case's text (st->c->text) read and validated. */
static int lks_case_parse(struct lks_parse *st)
{
	int rc;

	st->next = st->c->text;
	rc = ini_parse_stream(lks_case_reader, st, lks_case_handler, st);
	if (st->rc)
		return st->rc;
	if (rc > 0) {
		/* inih's own complaint: not "key = value", a comment nor "[section]" */
		lks_err("cannot parse the line: want 'key = value', '[section]' or a comment");
		return lks_case_at(st, rc);
	}
	if (rc < 0)
		return lks_err("%s: out of memory", st->c->path);
	return lks_case_validate(st);
}

int lks_case_load(const char *path, const char *const *sets, int nsets, lks_case *out)
{
	struct lks_parse st = { .c = out, .sec = LKS_SEC_NONE };
	char msg[1024];
	int rc;

	if ((rc = lks_case_init(out, path)) || (rc = lks_read_text(path, &out->text)))
		goto out;
	rc = lks_case_parse(&st);
	for (int i = 0; !rc && i < nsets; i++)
		if ((rc = lks_case_set(&st, sets[i]))) {
			/* the file too: a folder's cases each take the override */
			snprintf(msg, sizeof(msg), "%s: --set '%s'", path, sets[i]);
			rc = lks_err_prefix(msg);
		}
	if (!rc && nsets && (rc = lks_case_validate(&st))) {
		snprintf(msg, sizeof(msg), "%s", lks_errmsg());
		rc = lks_err("%s (after --set)", msg);
	}
out:
	free(st.run_seen);
	free(st.check_seen);
	if (rc)
		lks_case_release(out);
	return rc ? -1 : 0;
}

int lks_case_load_text(const char *path, const char *text, lks_case *out)
{
	struct lks_parse st = { .c = out, .sec = LKS_SEC_NONE };
	int rc;

	if ((rc = lks_case_init(out, path)) == 0 && !(out->text = strdup(text)))
		rc = lks_err("out of memory");
	if (rc == 0)
		rc = lks_case_parse(&st);
	free(st.run_seen);
	free(st.check_seen);
	if (rc)
		lks_case_release(out);
	return rc ? -1 : 0;
}

void lks_case_release(lks_case *c)
{
	free(c->text);
	free(c->runs);
	free(c->checks);
	memset(c, 0, sizeof(*c));
}
