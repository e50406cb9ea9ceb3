/*
 * golden_class.c: which class of golden data a stored run meets (golden.h), and the
 * tolerances of a class that is not compared bit for bit, kept beside its goldens in
 * <dir>/<class>/tolerances.ini, one section per recipe:
 *
 *   ; cuda-sm90-cublaslt against its goldens
 *   [fp8_rowwise]
 *   rtol = 0.02   ; 'lockstep golden measure' on an H100 gave 0.0123 (loss) ...
 *   atol = 0
 *
 * A recipe has one section, a key is given once in it, and none stands before the first:
 * last-wins would let a pasted measurement hide behind an older one. The file is read
 * whole, a regular file within LKS_TOLERANCES_FILE_MAX (harness/base/file.h).
 *
 * A class is found from what the run stored, so a check finds it later without a GPU.
 */
#include "harness/store/golden.h"

#include <errno.h>
#include <ini.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/file.h"
#include "harness/base/name.h"
#include "harness/store/fingerprint.h"
#include "kernels/err.h"

/* Whether options (as the runner writes them) ask for the library's GEMM: the word
   "gemm=cublaslt" before a planted fault (" inject: ") or the overrides (" set: "), whose
   text is the user's. */
static int lks_gemm_library(const char *options)
{
	const char *o = options ? options : "", *end = o + strlen(o), *cut, *p;

	if ((cut = strstr(o, " inject: ")) && cut < end)
		end = cut;
	if ((cut = strstr(o, " set: ")) && cut < end)
		end = cut;
	for (p = strstr(o, "gemm=cublaslt"); p && p < end; p = strstr(p + 1, "gemm=cublaslt"))
		if ((p == o || p[-1] == ' ') && (p[13] == ' ' || p[13] == 0))
			return 1;
	return 0;
}

int lks_golden_class_of(const lks_stored_run *r, char *buf, size_t size)
{
	const char *be = r->backend && *r->backend ? r->backend : "cpu";
	char cc[32], sm[32];
	size_t n = 0;

	/* a run of another framework (import.h): its numerics as its log wrote them */
	if (!strncmp(be, "import:", 7)) {
		snprintf(buf, size, "import");
		return 0;
	}
	/* the reference arithmetic, on any backend, is the CPU's bit for bit */
	if (!lks_gemm_library(r->options)) {
		snprintf(buf, size, "cpu");
		return 0;
	}
	if (!r->fingerprint
	    || !lks_fingerprint_json_get(r->fingerprint, "backend.compute_capability", cc,
	                                 sizeof(cc)))
		return lks_err("run %lld (%s/%s) ran gemm = cublaslt on backend '%s' but its "
		               "fingerprint has no backend.compute_capability: the GPU "
		               "architecture of its golden class is not known", (long long)r->id,
		               r->case_name, r->run_name, be);
	for (const char *p = cc; *p && n + 1 < sizeof(sm); p++)  /* "9.0" -> "90" */
		if (*p != '.')
			sm[n++] = *p;
	sm[n] = 0;
	if ((size_t)snprintf(buf, size, "%s-sm%s-cublaslt", be, sm) >= size)
		return lks_err("golden class of backend '%s' too long", be);
	return lks_name_check("golden class", buf, strlen(buf));
}

int lks_golden_exact(const char *cls)
{
	return !strcmp(cls, "cpu") || !strcmp(cls, "import");
}

/* ---- tolerances.ini ---- */

struct lks_tol_section {
	char *name;
	int line;
};

struct lks_tol_parse {
	const char *recipe;
	int found, has_rtol;
	double rtol, atol;
	char *next;             /* the text not read yet (lks_file_read's, NUL ended) */
	int line;               /* lines read */
	char err[256];          /* the first mistake, at err_line */
	int err_line;
	int stop;               /* 1: the reader ends the parse at err_line */
	struct lks_tol_section *secs;  /* the sections seen: a second [bf16] is refused */
	int nsecs;
	int key_line[2];        /* where rtol, atol of the current section were given; 0 not */
};

/* Records the first mistake, at the line being read; 0 (stops inih's handler). */
static int lks_tol_fail(struct lks_tol_parse *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int lks_tol_fail(struct lks_tol_parse *t, const char *fmt, ...)
{
	va_list ap;

	if (t->err_line)
		return 0;
	va_start(ap, fmt);
	vsnprintf(t->err, sizeof(t->err), fmt, ap);
	va_end(ap);
	t->err_line = t->line;
	return 0;
}

/* A '[name]' line: a section not seen before, whose keys are counted from here. 0, or the
   mistake recorded (lks_tol_fail). A line without its ']' is left to inih to refuse. */
static int lks_tol_section(struct lks_tol_parse *t, const char *line)
{
	const char *end = strchr(line, ']');
	struct lks_tol_section *grown;
	size_t n;

	if (!end)
		return 0;
	n = (size_t)(end - line - 1);
	for (int i = 0; i < t->nsecs; i++)
		if (strlen(t->secs[i].name) == n && !memcmp(t->secs[i].name, line + 1, n))
			return lks_tol_fail(t, "duplicate section [%.*s] (first at line %d)", (int)n,
			                    line + 1, t->secs[i].line), -1;
	if (!(grown = realloc(t->secs, (size_t)(t->nsecs + 1) * sizeof(*grown))))
		return lks_tol_fail(t, "out of memory"), -1;
	t->secs = grown;
	if (!(grown[t->nsecs].name = strndup(line + 1, n)))
		return lks_tol_fail(t, "out of memory"), -1;
	grown[t->nsecs++].line = t->line;
	t->key_line[0] = t->key_line[1] = 0;
	return 0;
}

/* inih's fgets, a line of the text at a time: a comment, on a line of its own or after a
   value (';' after a blank, as inih reads it), is dropped here, so that it may be as long as
   it likes ('lockstep golden measure' writes long ones); what is left must fit inih's
   buffer, else the line is refused, never cut into two. Leading blanks go too, which turns
   off inih's multi-line values. Section headers are seen here, as inih tells its handler
   of none. */
static char *lks_tol_reader(char *str, int num, void *stream)
{
	struct lks_tol_parse *t = stream;
	char *p = t->next, *eol, *c;
	size_t len;

	if (t->stop || !*p)
		return NULL;
	eol = strchr(p, '\n');
	t->next = eol ? eol + 1 : p + strlen(p);
	if (eol)
		*eol = 0;
	t->line++;
	for (; *p == ' ' || *p == '\t'; p++)
		;
	if (*p == ';' || *p == '#')
		*p = 0;
	for (c = p; *c; c++)
		if (*c == ';' && c > p && (c[-1] == ' ' || c[-1] == '\t'))
			break;
	*c = 0;
	len = strlen(p);
	if (len + 2 > (size_t)num) {
		lks_tol_fail(t, "line longer than %d characters, comments left out", num - 2);
		t->stop = 1;
	} else if (*p == '[' && lks_tol_section(t, p)) {
		t->stop = 1;
	}
	if (t->stop)
		return NULL;
	memcpy(str, p, len);
	str[len] = '\n';
	str[len + 1] = 0;
	return str;
}

/* inih calls this per key, t->line being its line; 0 stops the parse (inih reads on, and
   returns the first line it was given 0 on) */
static int lks_tol_key(void *arg, const char *section, const char *name, const char *value)
{
	struct lks_tol_parse *t = arg;
	int k = !strcmp(name, "atol");
	char *end;
	double v;

	if (!*section)
		return lks_tol_fail(t, "key '%s' before any section (want [RECIPE] first)", name);
	if (strcmp(name, "rtol") && strcmp(name, "atol"))
		return lks_tol_fail(t, "unknown key '%s' in [%s] (rtol, atol)", name, section);
	if (t->key_line[k])
		return lks_tol_fail(t, "duplicate key '%s' in [%s] (first at line %d)", name,
		                    section, t->key_line[k]);
	t->key_line[k] = t->line;
	errno = 0;
	v = strtod(value, &end);
	if (end == value || *end || errno == ERANGE || !isfinite(v) || v < 0)
		return lks_tol_fail(t, "bad value '%s' for '%s' in [%s]: want a number >= 0", value,
		                    name, section);
	if (strcmp(section, t->recipe))
		return 1;
	t->found = 1;
	if (k)
		t->atol = v;
	else
		t->rtol = v, t->has_rtol = 1;
	return 1;
}

/* The parse of the text of a tolerances.ini (path for the messages): lks_golden_tolerance's
   codes. */
static int lks_tol_parse_text(char *text, const char *path, const char *recipe, double *rtol,
                              double *atol)
{
	struct lks_tol_parse t = { .recipe = recipe, .next = text };
	int line, rc = LKS_E_BAD_INPUT;

	line = ini_parse_stream(lks_tol_reader, &t, lks_tol_key, &t);
	if (line == 0 && t.stop)
		line = t.err_line;
	if (line < 0) {
		rc = lks_err("out of memory reading '%s'", path);
	} else if (line > 0) {
		lks_err("%s:%d: %s", path, line, line == t.err_line ? t.err
		        : "cannot parse the line: want 'key = value', '[RECIPE]' or a comment");
	} else if (!t.found) {
		lks_err("no tolerance for recipe '%s' in '%s'", recipe, path);
		rc = LKS_E_MISSING;
	} else if (!t.has_rtol) {
		lks_err("%s: [%s] has no rtol", path, recipe);
	} else {
		*rtol = t.rtol;
		*atol = t.atol;
		rc = 0;
	}
	for (int i = 0; i < t.nsecs; i++)
		free(t.secs[i].name);
	free(t.secs);
	return rc;
}

/* tolerances.ini at path, read whole within its limit (harness/base/file.h: a regular file,
   so a FIFO or /dev/zero is refused before a byte is read) and parsed. cls, where given,
   names the class in the message for a missing file. */
static int lks_tol_read(const char *path, const char *cls, const char *recipe, double *rtol,
                        double *atol)
{
	char *text = NULL;
	size_t len;
	int rc = lks_file_read(path, LKS_TOLERANCES_FILE_MAX, "a tolerances file", &text, &len);

	if (rc == LKS_E_MISSING) {
		if (cls)
			lks_err("no tolerances for golden class '%s': '%s' is missing", cls, path);
		return LKS_E_MISSING;
	}
	if (rc)
		return LKS_E_BAD_INPUT;
	if (strlen(text) != len) {
		lks_err("'%s' contains a NUL byte: not a tolerances file", path);
		rc = LKS_E_BAD_INPUT;
	} else {
		rc = lks_tol_parse_text(text, path, recipe, rtol, atol);
	}
	free(text);
	return rc;
}

int lks_golden_tolerance(const char *dir, const char *cls, const char *recipe, double *rtol,
                         double *atol, char *path, size_t npath)
{
	if ((size_t)snprintf(path, npath, "%s/%s/tolerances.ini", dir, cls) >= npath)
		return lks_err("tolerance path too long for class '%s'", cls);
	return lks_tol_read(path, cls, recipe, rtol, atol);
}

int lks_golden_tolerance_file(const char *path, const char *recipe, double *rtol, double *atol)
{
	return lks_tol_read(path, NULL, recipe, rtol, atol);
}
