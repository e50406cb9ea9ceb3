/* junit.c: JUnit XML from the checks table of a suite (see junit.h). */
#include "harness/report/junit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/atomic_file.h"
#include "kernels/err.h"

struct lks_junit {
	FILE *f;
	int tests, failures, skipped;
};

static void lks_xml_text(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default:
			/* control characters other than tab and newline are not allowed in XML 1.0 */
			fputc((unsigned char)*s < 0x20 && *s != '\t' && *s != '\n' ? ' ' : *s, f);
		}
	}
}

static int lks_junit_case(void *arg, const lks_check_rec *r)
{
	struct lks_junit *j = arg;
	int fail = !strcmp(r->verdict, "fail") || !strcmp(r->verdict, "unexpected_pass");
	int skip = !strcmp(r->verdict, "skipped") || !strcmp(r->verdict, "unsupported");

	j->tests++;
	j->failures += fail;
	j->skipped += skip;
	fputs("    <testcase classname=\"", j->f);
	lks_xml_text(j->f, r->case_name);
	fputs("\" name=\"", j->f);
	lks_xml_text(j->f, r->check_name);
	fputs("\">\n", j->f);
	if (fail || skip) {
		fputs(fail ? "      <failure type=\"" : "      <skipped message=\"", j->f);
		if (fail) {
			lks_xml_text(j->f, r->kind);
			fputs("\" message=\"", j->f);
		}
		lks_xml_text(j->f, r->message ? r->message : r->verdict);
		fputs(fail ? "\"/>\n" : "\"/>\n", j->f);
	} else if (!strcmp(r->verdict, "expected_fail")) {
		fputs("      <system-out>expected failure: ", j->f);
		lks_xml_text(j->f, r->message);
		fputs("</system-out>\n", j->f);
	}
	fputs("    </testcase>\n", j->f);
	return 0;
}

int lks_junit_write(lks_store *s, int64_t suite_id, const char *path)
{
	struct lks_junit j = { 0 };
	FILE *body = tmpfile();
	lks_atomic a;
	int rc = -1, c;

	if (!body) {
		lks_err("cannot write '%s': no temporary file", path);
		goto out;
	}
	/* the counts go in the opening tag, so the test cases are written aside first */
	j.f = body;
	if (lks_store_get_checks(s, suite_id, lks_junit_case, &j) || lks_atomic_open(&a, path))
		goto out;
	fprintf(a.f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n"
	        "  <testsuite name=\"lockstep suite %lld\" tests=\"%d\" failures=\"%d\" "
	        "errors=\"0\" skipped=\"%d\">\n", (long long)suite_id, j.tests, j.failures, j.skipped);
	rewind(body);
	while ((c = fgetc(body)) != EOF)
		fputc(c, a.f);
	fputs("  </testsuite>\n</testsuites>\n", a.f);
	rc = lks_atomic_commit(&a);
out:
	if (body)
		fclose(body);
	return rc;
}
