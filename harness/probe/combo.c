/*
 * combo.c: combos files, the differences between two combos, and a probe's environment
 * (see combo.h).
 *
 * The file is INI, read here line by line rather than through inih (which reads the case
 * files): library paths and planted faults make long values, and Debian's inih cuts lines
 * at 200 characters and gives its handler no line number. The syntax is the case files':
 * '[section]', 'key = value', comments on lines starting with ';' or '#' and after a value
 * behind ' ;'. A value may be put in double quotes to keep ' ;' or blanks at its ends.
 */
#include "harness/probe/combo.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/file.h"
#include "harness/base/name.h"
#include "kernels/err.h"

/* ---- parsing ---- */

struct lks_cparse {
	lks_combos *out;
	int line;
	int cur;                  /* the combo being read; -1 before the first section */
};

static char *lks_trim(char *s)
{
	size_t n;

	while (*s == ' ' || *s == '\t')
		s++;
	n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
		s[--n] = 0;
	return s;
}

/* Blank, or a comment. */
static int lks_rest_empty(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return !*p || *p == ';' || *p == '#';
}

static int lks_var_name_ok(const char *s)
{
	if (!*s || isdigit((unsigned char)*s))
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return 0;
	return 1;
}

/* "SECTION.KEY" with both parts, as 'lockstep run --set' takes it. */
static int lks_set_key_ok(const char *s)
{
	const char *dot = strchr(s, '.');

	return dot && dot != s && dot[1] && !strpbrk(s, " \t=") && s[strlen(s) - 1] != '.';
}

static int lks_combo_section(struct lks_cparse *st, char *p)
{
	char *end = strchr(p, ']'), *name;
	lks_combos *cs = st->out;
	lks_combo *grown;

	if (!end)
		return lks_err("section header without ']'");
	if (!lks_rest_empty(end + 1))
		return lks_err("text after the section header");
	*end = 0;
	p = lks_trim(p + 1);
	if (!strcmp(p, "combo"))
		return lks_err("[combo] needs a name: [combo NAME]");
	if (strncmp(p, "combo", 5) || (p[5] != ' ' && p[5] != '\t'))
		return lks_err("unknown section [%s] (want [combo NAME])", p);
	name = lks_trim(p + 5);
	if (lks_name_check("combo", name, strlen(name)))
		return -1;
	for (int i = 0; i < cs->n; i++)
		if (!strcmp(cs->combos[i].name, name))
			return lks_err("duplicate combo '%s' (first at line %d)", name, cs->combos[i].line);
	if (!(grown = realloc(cs->combos, (size_t)(cs->n + 1) * sizeof(*grown))))
		return lks_err("out of memory");
	cs->combos = grown;
	grown[cs->n] = (lks_combo){ .name = strdup(name), .line = st->line };
	if (!grown[cs->n].name)
		return lks_err("out of memory");
	st->cur = cs->n++;
	return 0;
}

static int lks_combo_add(lks_combo *c, lks_combo_kind kind, const char *target,
                         const char *value, int line)
{
	lks_combo_item *grown = realloc(c->items, (size_t)(c->nitems + 1) * sizeof(*grown));

	if (!grown)
		return lks_err("out of memory");
	c->items = grown;
	grown[c->nitems] = (lks_combo_item){ .kind = kind, .target = strdup(target),
	                                     .value = strdup(value), .line = line };
	if (!grown[c->nitems].target || !grown[c->nitems].value) {
		free(grown[c->nitems].target);
		free(grown[c->nitems].value);
		return lks_err("out of memory");
	}
	c->nitems++;
	return 0;
}

static const lks_combo_item *lks_combo_item_of(const lks_combo *c, const char *target)
{
	for (int i = 0; i < c->nitems; i++)
		if (!strcmp(c->items[i].target, target))
			return &c->items[i];
	return NULL;
}

/* key = value inside [combo NAME]: the key says the kind and the target. */
static int lks_combo_key(struct lks_cparse *st, const char *key, const char *value)
{
	lks_combo *c = &st->out->combos[st->cur];
	char target[512];
	lks_combo_kind kind;
	const lks_combo_item *seen;

	if (!strcmp(key, "description")) {
		if (c->description_line)
			return lks_err("'description' again in combo '%s' (first at line %d)", c->name,
			               c->description_line);
		c->description_line = st->line;
		return 0;
	}
	if (strlen(key) >= sizeof(target))
		return lks_err("key '%.40s...' is too long", key);
	if (strlen(value) > LKS_COMBO_VALUE_MAX)
		return lks_err("the value of '%.40s' is %zu bytes, over the limit of %d", key,
		               strlen(value), LKS_COMBO_VALUE_MAX);
	if (!strcmp(key, "library_path")) {
		kind = LKS_COMBO_LIBRARY_PATH;
		snprintf(target, sizeof(target), "library_path");
	} else if (!strncmp(key, "env.", 4) || !strncmp(key, "unset.", 6)) {
		const char *var = strchr(key, '.') + 1;

		kind = key[0] == 'e' ? LKS_COMBO_ENV : LKS_COMBO_UNSET;
		if (!lks_var_name_ok(var))
			return lks_err("bad environment variable name '%s'", var);
		if (kind == LKS_COMBO_UNSET && *value)
			return lks_err("'%s' takes no value (it removes the variable)", key);
		snprintf(target, sizeof(target), "env.%s", var);
	} else if (!strncmp(key, "set.", 4)) {
		kind = LKS_COMBO_SET;
		if (!lks_set_key_ok(key + 4))
			return lks_err("bad override '%s': want set.SECTION.KEY", key);
		snprintf(target, sizeof(target), "%s", key);
	} else {
		return lks_err("unknown key '%s' (description, library_path, env.VAR, unset.VAR, "
		               "set.SECTION.KEY)", key);
	}
	if ((seen = lks_combo_item_of(c, target)))
		return lks_err("'%s' again in combo '%s' (first at line %d)", target, c->name,
		               seen->line);
	return lks_combo_add(c, kind, target, value, st->line);
}

/* The value after '=': quoted, or up to an inline comment, trimmed. */
static int lks_combo_value(char *v, char **out)
{
	char *q;

	v = lks_trim(v);
	if (*v == '"') {
		if (!(q = strchr(v + 1, '"')))
			return lks_err("value without its closing '\"'");
		if (!lks_rest_empty(q + 1))
			return lks_err("text after the quoted value");
		*q = 0;
		*out = v + 1;
		return 0;
	}
	for (q = v; (q = strchr(q, ';')); q++)
		if (q > v && (q[-1] == ' ' || q[-1] == '\t')) {
			*q = 0;
			break;
		}
	*out = lks_trim(v);
	return 0;
}

static int lks_combo_line(struct lks_cparse *st, char *line)
{
	char *p = lks_trim(line), *eq, *value = NULL;

	if (st->line == 1 && !strncmp(p, "\xEF\xBB\xBF", 3))
		p += 3;  /* a UTF-8 byte order mark */
	if (!*p || *p == ';' || *p == '#')
		return 0;
	if (*p == '[')
		return lks_combo_section(st, p);
	if (!(eq = strchr(p, '=')))
		return lks_err("cannot parse the line: want 'key = value', '[combo NAME]' or a comment");
	*eq = 0;
	p = lks_trim(p);
	if (!*p)
		return lks_err("a value without a key");
	if (st->cur < 0)
		return lks_err("key '%s' before any [combo NAME]", p);
	if (lks_combo_value(eq + 1, &value))
		return -1;
	return lks_combo_key(st, p, value);
}

int lks_combos_load(const char *path, lks_combos *out)
{
	struct lks_cparse st = { .out = out, .cur = -1 };
	char *text = NULL, *line, *next, msg[1024];
	size_t len;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = lks_file_read(path, LKS_COMBOS_FILE_MAX, "a combos file", &text, &len)))
		return -1;
	if (!(out->path = strdup(path)))
		rc = lks_err("out of memory");
	if (!rc && strlen(text) != len) {
		int at = 1;  /* the line of the first NUL */

		for (const char *p = text; *p; p++)
			at += *p == '\n';
		rc = lks_err("%s:%d: a NUL byte: not a combos file", path, at);
	}
	for (line = text; !rc && *line; line = next) {
		next = line + strcspn(line, "\n");
		if (*next)
			*next++ = 0;
		st.line++;
		if (lks_combo_line(&st, line)) {
			snprintf(msg, sizeof(msg), "%s", lks_errmsg());
			rc = lks_err("%s:%d: %s", path, st.line, msg);
		}
	}
	if (!rc && out->n == 0)
		rc = lks_err("%s: no combos (want sections [combo NAME])", path);
	free(text);
	if (rc)
		lks_combos_release(out);
	return rc;
}

void lks_combo_release(lks_combo *c)
{
	for (int i = 0; i < c->nitems; i++) {
		free(c->items[i].target);
		free(c->items[i].value);
	}
	free(c->items);
	free(c->name);
	memset(c, 0, sizeof(*c));
}

void lks_combos_release(lks_combos *cs)
{
	for (int i = 0; i < cs->n; i++)
		lks_combo_release(&cs->combos[i]);
	free(cs->combos);
	free(cs->path);
	memset(cs, 0, sizeof(*cs));
}

const lks_combo *lks_combos_find(const lks_combos *cs, const char *name)
{
	for (int i = 0; i < cs->n; i++)
		if (!strcmp(cs->combos[i].name, name))
			return &cs->combos[i];
	return NULL;
}

void lks_combo_item_str(const lks_combo_item *it, char *buf, size_t n)
{
	if (it->kind == LKS_COMBO_UNSET)
		snprintf(buf, n, "unset.%s", it->target + 4);
	else
		snprintf(buf, n, "%s = %s", it->target, it->value);
}

/* ---- differences ---- */

static int lks_item_same(const lks_combo_item *a, const lks_combo_item *b)
{
	return a && b && a->kind == b->kind && !strcmp(a->value, b->value);
}

/* Index of target's item in c, or -1. */
static int lks_combo_index_of(const lks_combo *c, const char *target)
{
	for (int i = 0; i < c->nitems; i++)
		if (!strcmp(c->items[i].target, target))
			return i;
	return -1;
}

/* kept[j] = 1 for b's set. items that keep their place: of the set. targets both have, the
   most that come in the same order in both, a longest increasing run of their indices in
   a taken in b's order (patience sorting, O(k log k): a combos file may hold thousands). */
static int lks_set_order_kept(const lks_combo *a, const lks_combo *b, char *kept)
{
	int *at = malloc((size_t)(4 * b->nitems + 1) * sizeof(*at)), k = 0, len = 0;
	int *of, *tails, *prev;

	if (!at)
		return lks_err("out of memory");
	of = at + b->nitems;          /* (k) b's index of each */
	tails = of + b->nitems;       /* (len) the last of the run of each length ending lowest */
	prev = tails + b->nitems;     /* (k) the one before each in its run; -1: none */
	for (int j = 0; j < b->nitems; j++) {
		int i = b->items[j].kind == LKS_COMBO_SET ? lks_combo_index_of(a, b->items[j].target) : -1;

		if (i >= 0) {
			at[k] = i;
			of[k++] = j;
		}
	}
	for (int t = 0; t < k; t++) {
		int lo = 0, hi = len;

		while (lo < hi) {
			int mid = (lo + hi) / 2;

			if (at[tails[mid]] < at[t])
				lo = mid + 1;
			else
				hi = mid;
		}
		prev[t] = lo ? tails[lo - 1] : -1;
		tails[lo] = t;
		len += lo == len;
	}
	for (int t = len ? tails[len - 1] : -1; t >= 0; t = prev[t])
		kept[of[t]] = 1;
	free(at);
	return 0;
}

int lks_combo_diff(const lks_combo *a, const lks_combo *b, lks_combo_change **out, int *n)
{
	lks_combo_change *ch = calloc((size_t)(a->nitems + b->nitems) + 1, sizeof(*ch));
	char *kept = calloc((size_t)b->nitems + 1, 1);
	int m = 0;

	*out = NULL;
	*n = 0;
	if (!ch || !kept || lks_set_order_kept(a, b, kept)) {
		free(ch);
		free(kept);
		return ch && kept ? -1 : lks_err("out of memory");
	}
	for (int i = 0; i < a->nitems; i++) {
		const lks_combo_item *ia = &a->items[i];
		int j = lks_combo_index_of(b, ia->target);
		const lks_combo_item *ib = j >= 0 ? &b->items[j] : NULL;
		int moved = ib && ib->kind == LKS_COMBO_SET && !kept[j];

		if (!lks_item_same(ia, ib) || moved)
			ch[m++] = (lks_combo_change){ ia->target, ia, ib, moved };
	}
	for (int i = 0; i < b->nitems; i++)
		if (!lks_combo_item_of(a, b->items[i].target))
			ch[m++] = (lks_combo_change){ b->items[i].target, NULL, &b->items[i], 0 };
	free(kept);
	*out = ch;
	*n = m;
	return 0;
}

/* Whether change i is in mask (LKS_COMBO_ALL: every change). */
static int lks_change_on(uint64_t mask, int i)
{
	return i < 64 ? (int)(mask >> i & 1) : mask == LKS_COMBO_ALL;
}

static const char *lks_side(const lks_combo_item *it)
{
	return !it ? "(absent)" : it->kind == LKS_COMBO_UNSET ? "(unset)" : it->value;
}

void lks_combo_print_changes(FILE *out, const lks_combo_change *ch, int n, uint64_t mask,
                             const char *la, const char *lb)
{
	for (int i = 0; i < n; i++)
		if (lks_change_on(mask, i))
			fprintf(out, "  %-22s %s: %s\n  %-22s %s: %s%s\n", ch[i].target, la,
			        lks_side(ch[i].a), "", lb, lks_side(ch[i].b),
			        ch[i].moved ? "  (moved: set. keys apply in order, the later wins)" : "");
}

/* The change of target in ch[0..n) whose bit is set in mask, or NULL. */
static const lks_combo_change *lks_change_in(const lks_combo_change *ch, int n, uint64_t mask,
                                             const char *target)
{
	for (int i = 0; i < n; i++)
		if (lks_change_on(mask, i) && !strcmp(ch[i].target, target))
			return &ch[i];
	return NULL;
}

/* A set. item that keeps its place (lks_combo_diff): the other combo has its target, and
   it is not moved. */
static int lks_set_anchor(const lks_combo_item *it, const lks_combo *other,
                          const lks_combo_change *ch, int n)
{
	const lks_combo_change *c = lks_change_in(ch, n, LKS_COMBO_ALL, it->target);

	return it->kind == LKS_COMBO_SET && lks_combo_item_of(other, it->target) && !(c && c->moved);
}

static int lks_combo_add_item(lks_combo *c, const lks_combo_item *it)
{
	return lks_combo_add(c, it->kind, it->target, it->value, 0);
}

/* The set. items of the result, in order: a's and b's walked side by side, each up to the
   next target both keep in place, that one once. */
static int lks_apply_sets(const lks_combo *a, const lks_combo *b, const lks_combo_change *ch,
                          int n, uint64_t mask, lks_combo *out)
{
	int i = 0, j = 0, rc = 0;

	while (!rc && (i < a->nitems || j < b->nitems)) {
		const lks_combo_change *c;

		/* a's own and moved targets stay where the change is not applied */
		for (; !rc && i < a->nitems && !lks_set_anchor(&a->items[i], b, ch, n); i++)
			if (a->items[i].kind == LKS_COMBO_SET
			    && !lks_change_in(ch, n, mask, a->items[i].target))
				rc = lks_combo_add_item(out, &a->items[i]);
		/* b's own and moved targets come where the change is applied */
		for (; !rc && j < b->nitems && !lks_set_anchor(&b->items[j], a, ch, n); j++)
			if (b->items[j].kind == LKS_COMBO_SET
			    && lks_change_in(ch, n, mask, b->items[j].target))
				rc = lks_combo_add_item(out, &b->items[j]);
		if (rc || i == a->nitems || j == b->nitems)
			break;  /* the anchors are the same in both: both ends are reached together */
		c = lks_change_in(ch, n, mask, a->items[i].target);
		rc = lks_combo_add_item(out, c ? c->b : &a->items[i]);
		i++;
		j++;
	}
	return rc;
}

int lks_combo_apply(const lks_combo *a, const lks_combo *b, const lks_combo_change *ch, int n,
                    uint64_t mask, const char *name, lks_combo *out)
{
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (!(out->name = strdup(name)))
		return lks_err("out of memory");
	/* the environment: a's items, each replaced or dropped by its change; then b's new
	   targets (their order means nothing: one item a variable) */
	for (int i = 0; !rc && i < a->nitems; i++) {
		const lks_combo_change *c = lks_change_in(ch, n, mask, a->items[i].target);
		const lks_combo_item *it = c ? c->b : &a->items[i];

		if (it && it->kind != LKS_COMBO_SET)
			rc = lks_combo_add_item(out, it);
	}
	for (int i = 0; !rc && i < n; i++)
		if (lks_change_on(mask, i) && !ch[i].a && ch[i].b && ch[i].b->kind != LKS_COMBO_SET)
			rc = lks_combo_add_item(out, ch[i].b);
	if (!rc)
		rc = lks_apply_sets(a, b, ch, n, mask, out);
	if (rc)
		lks_combo_release(out);
	return rc;
}

/* ---- the environment of a probe ---- */

/* Index of VAR in env (n strings), or -1. */
static int lks_env_find(char **env, int n, const char *var)
{
	size_t len = strlen(var);

	for (int i = 0; i < n; i++)
		if (!strncmp(env[i], var, len) && env[i][len] == '=')
			return i;
	return -1;
}

/* Sets (value != NULL) or removes VAR in env, which has room for one more string. */
static int lks_env_put(char **env, int *n, const char *var, const char *value)
{
	int i = lks_env_find(env, *n, var);
	char *s = NULL;

	if (value) {
		size_t len = strlen(var) + strlen(value) + 2;

		if (!(s = malloc(len)))
			return lks_err("out of memory");
		snprintf(s, len, "%s=%s", var, value);
	}
	if (i < 0 && s) {
		env[(*n)++] = s;
	} else if (i >= 0) {
		free(env[i]);
		if (s) {
			env[i] = s;
		} else {
			memmove(env + i, env + i + 1, (size_t)(*n - i) * sizeof(*env));
			(*n)--;
		}
	}
	return 0;
}

/* library_path in front of LD_LIBRARY_PATH, as it is after the env items. */
static int lks_env_library_path(char **env, int *n, const char *dirs)
{
	int i = lks_env_find(env, *n, "LD_LIBRARY_PATH");
	const char *old = i >= 0 ? env[i] + strlen("LD_LIBRARY_PATH=") : "";
	size_t len = strlen(dirs) + strlen(old) + 2;
	char *v = malloc(len);
	int rc;

	if (!v)
		return lks_err("out of memory");
	snprintf(v, len, "%s%s%s", dirs, *old ? ":" : "", old);
	rc = lks_env_put(env, n, "LD_LIBRARY_PATH", v);
	free(v);
	return rc;
}

int lks_combo_environ(const lks_combo *c, char *const *base, char ***out)
{
	int nbase = 0, n = 0, rc = 0;
	const lks_combo_item *lib = NULL;
	char **env;

	while (base && base[nbase])
		nbase++;
	/* base, plus one per item, plus LD_LIBRARY_PATH, plus the NULL */
	if (!(env = calloc((size_t)(nbase + c->nitems + 2), sizeof(*env))))
		return lks_err("out of memory");
	for (; n < nbase; n++)
		if (!(env[n] = strdup(base[n]))) {
			lks_strv_free(env);
			return lks_err("out of memory");
		}
	for (int i = 0; !rc && i < c->nitems; i++) {
		const lks_combo_item *it = &c->items[i];

		if (it->kind == LKS_COMBO_ENV || it->kind == LKS_COMBO_UNSET)
			rc = lks_env_put(env, &n, it->target + 4,
			                 it->kind == LKS_COMBO_ENV ? it->value : NULL);
		else if (it->kind == LKS_COMBO_LIBRARY_PATH)
			lib = it;
	}
	if (!rc && lib && *lib->value)
		rc = lks_env_library_path(env, &n, lib->value);
	if (rc) {
		lks_strv_free(env);
		return -1;
	}
	*out = env;
	return 0;
}

void lks_strv_free(char **v)
{
	for (char **p = v; p && *p; p++)
		free(*p);
	free(v);
}
