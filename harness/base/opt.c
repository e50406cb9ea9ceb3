/*
 * opt.c: usage messages and option values (opt.h).
 */
#include "harness/base/opt.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/isa.h"
#include "kernels/err.h"

static int lks_usage_silent;

void lks_usage_quiet(int quiet)
{
	lks_usage_silent = quiet;
}

int lks_usage(const char *fmt, ...)
{
	char raw[2048], msg[2048];
	va_list ap;

	if (lks_usage_silent)
		return LKS_EXIT_USAGE;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	lks_escape(msg, sizeof(msg), raw);  /* as lks_err: no raw control characters */
	fprintf(stderr, "lockstep: %s\n", msg);
	return LKS_EXIT_USAGE;
}

int lks_opt_int(const char *who, const char *opt, const char *val, int lo, int hi, int *out)
{
	char *end;
	long v;

	if (!val)
		return lks_usage("%s: %s needs a value", who, opt);
	v = strtol(val, &end, 10);
	if (end == val || *end || v < lo || v > hi)
		return lks_usage("%s: %s wants an integer in [%d, %d], not '%s'", who, opt, lo, hi, val);
	*out = (int)v;
	return 0;
}

int lks_opt_double(const char *who, const char *opt, const char *val, double lo, double hi,
                   double *out)
{
	char *end;
	double v;

	if (!val)
		return lks_usage("%s: %s needs a value", who, opt);
	v = strtod(val, &end);
	if (end == val || *end || !(v >= lo && v <= hi))
		return lks_usage("%s: %s wants a number in [%g, %g], not '%s'", who, opt, lo, hi, val);
	*out = v;
	return 0;
}

int lks_opt_path(const char *who, const char *opt, const char *val, const char **out)
{
	if (!val)
		return lks_usage("%s: %s needs a value", who, opt);
	if (!*val)
		return lks_usage("%s: %s wants a path, not ''", who, opt);
	*out = val;
	return 0;
}

int lks_opt_isa(const char *who, const char *val)
{
	lks_isa isa;

	if (!val)
		return lks_usage("%s: --isa needs a value", who);
	if (lks_isa_parse(val, &isa) || lks_isa_force(isa))
		return lks_usage("%s: %s", who, lks_errmsg());
	return 0;
}

/* ---- a command's options, declared once ---- */

int lks_opt_isa_call(const lks_opt_cmd *cmd, const lks_option *o, const char *name,
                     const char *arg)
{
	(void)o; (void)name;
	return lks_opt_isa(cmd->who, arg);
}

/* Whether name (as typed) is one of the row's spellings ("-o, --out"). */
static int lks_opt_named(const lks_option *o, const char *name)
{
	size_t len = strlen(name);

	for (const char *p = o->name; p && *p;) {
		size_t n = strcspn(p, ",");

		if (n == len && !strncmp(p, name, n))
			return 1;
		p += n;
		p += strspn(p, ", ");
	}
	return 0;
}

/* The row of opts (its included tables too) that name is, or NULL. */
static const lks_option *lks_opt_find(const lks_option *opts, const char *name)
{
	for (const lks_option *o = opts; o->kind != LKS_OPT_END; o++) {
		const lks_option *r = o->kind == LKS_OPT_INCLUDE ? lks_opt_find(o->value, name)
		                    : o->kind != LKS_OPT_TEXT && lks_opt_named(o, name) ? o : NULL;

		if (r)
			return r;
	}
	return NULL;
}

static int lks_opt_list_add(lks_opt_list *l, const char *s)
{
	const char **v = realloc(l->v, (size_t)(l->n + 1) * sizeof(*v));

	if (!v) {
		fprintf(stderr, "lockstep: out of memory\n");
		return LKS_EXIT_INFRA;
	}
	v[l->n++] = s;
	l->v = v;
	return 0;
}

/* "a, b or c" */
static void lks_opt_choices(char *buf, size_t size, const char *const *c)
{
	size_t len = 0;

	buf[0] = '\0';
	for (int i = 0; c[i] && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "%s%s", i == 0 ? "" : c[i + 1] ? ", "
		                        : " or ", c[i]);
}

/* The value val of row o, typed as name. */
static int lks_opt_take(const lks_opt_cmd *cmd, const lks_option *o, const char *name,
                        const char *val)
{
	char list[256];

	switch (o->kind) {
	case LKS_OPT_FLAG:
		*(int *)o->value = 1;
		return 0;
	case LKS_OPT_INT:
		return lks_opt_int(cmd->who, name, val, (int)o->lo, (int)o->hi, o->value);
	case LKS_OPT_DOUBLE:
		return lks_opt_double(cmd->who, name, val, o->lo, o->hi, o->value);
	case LKS_OPT_STRING:
		*(const char **)o->value = val;
		return 0;
	case LKS_OPT_PATH:
		return lks_opt_path(cmd->who, name, val, o->value);
	case LKS_OPT_LIST:
		return lks_opt_list_add(o->value, val);
	case LKS_OPT_CHOICE:
		for (int i = 0; o->choices[i]; i++)
			if (!strcmp(o->choices[i], val)) {
				*(int *)o->value = i;
				return 0;
			}
		lks_opt_choices(list, sizeof(list), o->choices);
		return lks_usage("%s: %s is %s, not '%s'", cmd->who, name, list, val);
	case LKS_OPT_CALL:
		return o->fn(cmd, o, name, val);
	default:
		return lks_usage("%s: bad option '%s'", cmd->who, name);
	}
}

int lks_opt_parse(const lks_opt_cmd *cmd, const lks_option *opts, int argc, char **argv,
                  lks_opt_list *args)
{
	int rc, options = 1;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *eq;
		const lks_option *o;
		char name[64];

		if (!options || a[0] != '-' || !a[1]) {
			if (!args)
				return lks_usage("%s: bad argument '%s'; see 'lockstep %s --help'", cmd->who,
				                 a, cmd->who);
			if ((rc = lks_opt_list_add(args, a)) != 0)
				return rc;
			continue;
		}
		eq = a[1] == '-' ? strchr(a, '=') : NULL;
		snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - a) : (int)strlen(a), a);
		if (!strcmp(a, "--")) {
			options = 0;
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			lks_opt_usage(cmd, opts, stdout);
			return LKS_OPT_HELP;
		} else if (!(o = lks_opt_find(opts, name))) {
			return lks_usage("%s: bad option '%s'; see 'lockstep %s --help'", cmd->who, name,
			                 cmd->who);
		} else if (eq && !o->arg) {
			return lks_usage("%s: %s takes no value", cmd->who, name);
		} else if (o->arg && !eq && i + 1 >= argc) {
			return lks_usage("%s: %s needs a value (%s)", cmd->who, name, o->arg);
		} else if ((rc = lks_opt_take(cmd, o, name,
		                              eq ? eq + 1 : o->arg ? argv[++i] : NULL)) != 0) {
			return rc;
		}
	}
	return 0;
}

/* Each line of help (a leading '\n': from the line under the name), at column col. */
static void lks_opt_help_lines(FILE *out, const char *help, int col)
{
	for (int first = 1; help && *help; first = 0) {
		size_t n = strcspn(help, "\n");

		if (!first)
			fprintf(out, "%*s", col, "");
		fprintf(out, "%.*s\n", (int)n, help);
		help += n + (help[n] == '\n');
	}
}

static void lks_opt_rows(const lks_opt_cmd *cmd, const lks_option *opts, FILE *out)
{
	for (const lks_option *o = opts; o->kind != LKS_OPT_END; o++) {
		char left[128];
		int len;

		if (o->kind == LKS_OPT_INCLUDE) {
			lks_opt_rows(cmd, o->value, out);
			continue;
		}
		if (o->kind == LKS_OPT_TEXT) {
			fputs(o->help, out);
			continue;
		}
		if (!o->help)  /* said elsewhere in the usage */
			continue;
		len = snprintf(left, sizeof(left), "%s%s%s", o->name, o->arg ? " " : "",
		               o->arg ? o->arg : "");
		if (o->help && o->help[0] == '\n') {
			fprintf(out, "  %s\n%*s", left, cmd->width + 3, "");
			lks_opt_help_lines(out, o->help + 1, cmd->width + 3);
		} else {
			fprintf(out, "  %-*s%s", cmd->width, left, len <= cmd->width ? " " : "  ");
			lks_opt_help_lines(out, o->help ? o->help : "", cmd->width + 3);
		}
	}
}

void lks_opt_usage(const lks_opt_cmd *cmd, const lks_option *opts, FILE *out)
{
	fputs(cmd->usage, out);
	if (cmd->more)
		cmd->more(out);
	lks_opt_rows(cmd, opts, out);
	if (cmd->after)
		cmd->after(out);
	if (cmd->tail)
		fputs(cmd->tail, out);
}
