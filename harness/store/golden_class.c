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
 * A class is found from what the run stored, so a check finds it later without a GPU.
 */
#include "harness/store/golden.h"

#include <errno.h>
#include <ini.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

struct lks_tol_parse {
	const char *recipe;
	int found, has_rtol, bad;
	double rtol, atol;
	char err[256];
	FILE *f;
	char *buf;              /* getline's */
	size_t cap;
	int line, too_long;     /* lines read; the line that did not fit inih's buffer */
	int num;                /* the size of that buffer, as inih gives it */
};

/* inih's fgets, whole lines from getline: a comment, on a line of its own or after a value
   (';' after a blank, as inih reads it), is dropped here, so that it may be as long as it
   likes ('lockstep golden measure' writes long ones); what is left must fit inih's buffer,
   else the line is refused, never cut into two. */
static char *lks_tol_reader(char *str, int num, void *stream)
{
	struct lks_tol_parse *t = stream;
	ssize_t got = getline(&t->buf, &t->cap, t->f);
	char *p, *c;
	size_t len;

	if (got < 0)
		return NULL;
	t->line++;
	for (p = t->buf; *p == ' ' || *p == '\t'; p++)
		;
	if (*p == ';' || *p == '#')
		*p = 0;
	for (c = p; *c && *c != '\n'; c++)
		if (*c == ';' && c > p && (c[-1] == ' ' || c[-1] == '\t'))
			break;
	*c = 0;
	len = strlen(p);
	if (len + 2 > (size_t)num) {
		t->too_long = t->line;
		t->num = num;
		return NULL;
	}
	memcpy(str, p, len);
	str[len] = '\n';
	str[len + 1] = 0;
	return str;
}

/* inih calls this per key; 0 stops the parse, which then returns the line */
static int lks_tol_key(void *arg, const char *section, const char *name, const char *value)
{
	struct lks_tol_parse *t = arg;
	char *end;
	double v;

	if (strcmp(name, "rtol") && strcmp(name, "atol")) {
		snprintf(t->err, sizeof(t->err), "unknown key '%s' in [%s] (rtol, atol)", name,
		         section);
		return 0;
	}
	errno = 0;
	v = strtod(value, &end);
	if (end == value || *end || errno == ERANGE || !isfinite(v) || v < 0) {
		snprintf(t->err, sizeof(t->err), "bad value '%s' for '%s' in [%s]: want a number "
		         ">= 0", value, name, section);
		return 0;
	}
	if (strcmp(section, t->recipe))
		return 1;
	t->found = 1;
	if (!strcmp(name, "rtol")) {
		t->rtol = v;
		t->has_rtol = 1;
	} else {
		t->atol = v;
	}
	return 1;
}

/* The parse of an open tolerances.ini (path for the messages): lks_golden_tolerance's codes. */
static int lks_tol_read(FILE *f, const char *path, const char *recipe, double *rtol,
                        double *atol)
{
	struct lks_tol_parse t = { .recipe = recipe };
	int line;

	t.f = f;
	line = ini_parse_stream(lks_tol_reader, &t, lks_tol_key, &t);
	free(t.buf);
	if (t.too_long && line == 0) {
		line = t.too_long;
		snprintf(t.err, sizeof(t.err), "line longer than %d characters, comments left out",
		         t.num - 2);
	}
	if (line != 0) {
		lks_err("%s:%d: %s", path, line, line > 0 && *t.err ? t.err : "cannot parse the line");
		return LKS_GOLDEN_BAD;
	}
	if (!t.found) {
		lks_err("no tolerance for recipe '%s' in '%s'", recipe, path);
		return LKS_GOLDEN_MISSING;
	}
	if (!t.has_rtol) {
		lks_err("%s: [%s] has no rtol", path, recipe);
		return LKS_GOLDEN_BAD;
	}
	*rtol = t.rtol;
	*atol = t.atol;
	return 0;
}

int lks_golden_tolerance(const char *dir, const char *cls, const char *recipe, double *rtol,
                         double *atol, char *path, size_t npath)
{
	FILE *f;
	int rc;

	if ((size_t)snprintf(path, npath, "%s/%s/tolerances.ini", dir, cls) >= npath)
		return lks_err("tolerance path too long for class '%s'", cls);
	if (!(f = fopen(path, "r"))) {
		if (errno != ENOENT)
			return lks_err("cannot open '%s': %s", path, strerror(errno));
		lks_err("no tolerances for golden class '%s': '%s' is missing", cls, path);
		return LKS_GOLDEN_MISSING;
	}
	rc = lks_tol_read(f, path, recipe, rtol, atol);
	fclose(f);
	return rc;
}

int lks_golden_tolerance_file(const char *path, const char *recipe, double *rtol, double *atol)
{
	FILE *f = fopen(path, "r");
	int rc;

	if (!f) {
		int e = errno;

		lks_err("cannot open '%s': %s", path, strerror(e));
		return e == ENOENT ? LKS_GOLDEN_MISSING : -1;
	}
	rc = lks_tol_read(f, path, recipe, rtol, atol);
	fclose(f);
	return rc;
}
