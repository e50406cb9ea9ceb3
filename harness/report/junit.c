/* junit.c: JUnit XML from the checks and nightly tables of a suite (see junit.h). */
#include "harness/report/junit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/atomic_file.h"
#include "harness/store/report_query.h"
#include "kernels/err.h"

struct lks_junit {
	lks_store *s;
	FILE *f;
	int64_t suite;
	int tests, failures, skipped, errors;
	int same_fp_fails;        /* a change with an equal fingerprint is a failure */
	int stopped;              /* the command stopped before the suite's end: its exit code */
};

/* The character of the UTF-8 text at s that XML 1.0 allows: its code point into *cp and
   its length. A byte that starts no well-formed sequence (invalid, overlong, a surrogate,
   cut short) is U+FFFD alone, a character XML does not allow (U+FFFE, U+FFFF) U+FFFD
   too, so that the file parses whatever a log held. */
static int lks_xml_char(const unsigned char *s, unsigned *cp)
{
	static const unsigned least[] = { 0, 0, 0x80, 0x800, 0x10000 };
	int n = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3
	        : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
	unsigned c = n == 1 ? s[0] : n ? s[0] & (0x7fu >> n) : 0;

	*cp = 0xfffd;
	for (int i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)  /* a NUL ends the text here too */
			return 1;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (!n || c < least[n] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 1;
	if (c != 0xfffe && c != 0xffff)
		*cp = c;
	return n;
}

void lks_xml_text(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (p && *p) {
		unsigned c;
		int n = lks_xml_char(p, &c);

		switch (c) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		case 0xfffd: fputs("\xef\xbf\xbd", f); break;
		default:
			/* control characters other than tab and newline are not allowed in XML 1.0 */
			if (c < 0x20 && c != '\t' && c != '\n')
				fputc(' ', f);
			else
				fwrite(p, 1, (size_t)n, f);
		}
		p += n;
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

/* A run compared night over night: classname "nightly.CASE", name the run. */
static int lks_junit_night(void *arg, const lks_nightly_rec *r)
{
	struct lks_junit *j = arg;
	int changed = !strcmp(r->verdict, "changed");
	int fail = changed && r->fp_equal && j->same_fp_fails;
	int skip = !strcmp(r->verdict, "gone");

	j->tests++;
	j->failures += fail;
	j->skipped += skip;
	fputs("    <testcase classname=\"nightly.", j->f);
	lks_xml_text(j->f, r->case_name);
	fputs("\" name=\"", j->f);
	lks_xml_text(j->f, r->run_name);
	fputs("\">\n", j->f);
	if (fail) {
		fputs("      <failure type=\"changed with the same fingerprint\" message=\"", j->f);
		lks_xml_text(j->f, r->message);
		fputs("\"/>\n", j->f);
	} else if (skip) {
		fputs("      <skipped message=\"gone: not run tonight with these settings\"/>\n", j->f);
	} else {
		fputs("      <system-out>", j->f);
		lks_xml_text(j->f, r->verdict);
		if (changed) {
			fputs(r->fp_equal ? " with the same fingerprint: " : " (fingerprint keys: ", j->f);
			if (!r->fp_equal) {
				lks_xml_text(j->f, r->fp_keys);
				fputs("): ", j->f);
			}
			lks_xml_text(j->f, r->message);
		}
		fputs("</system-out>\n", j->f);
	}
	fputs("    </testcase>\n", j->f);
	return 0;
}

/* lks_store_get_events' callback: why the run failed, its first LKS_EVENT_RUN_FAILED's
   message, into arg (256 bytes) */
static int lks_junit_why(void *arg, const lks_event_rec *ev)
{
	if (strcmp(ev->kind, LKS_EVENT_RUN_FAILED) || !ev->message)
		return 0;
	snprintf(arg, 256, "%s", ev->message);
	return 1;
}

/* A run of the suite that did not complete (out of memory, a dead rank): an error,
   classname "run.CASE", so that a dashboard shows what the skipped checks do not, and
   why where the run stored it. */
static int lks_junit_run(void *arg, const lks_run_rec *r)
{
	struct lks_junit *j = arg;
	char why[256] = "";

	if (r->info.suite_id != j->suite || (r->status && !strcmp(r->status, "complete")))
		return 0;
	if (lks_store_get_events(j->s, r->run_id, lks_junit_why, why) < 0)
		return -1;
	j->tests++;
	j->errors++;
	fputs("    <testcase classname=\"run.", j->f);
	lks_xml_text(j->f, r->info.case_name);
	fputs("\" name=\"", j->f);
	lks_xml_text(j->f, r->info.run_name);
	fputs("\">\n      <error type=\"run ", j->f);
	lks_xml_text(j->f, r->status ? r->status : "incomplete");
	fputs("\" message=\"the run did not complete: ", j->f);
	lks_xml_text(j->f, why);
	fputs(why[0] ? "; its checks are skipped\"/>\n" : "its checks are skipped\"/>\n", j->f);
	fputs("    </testcase>\n", j->f);
	return 0;
}

/* A suite whose command stopped before its end (bad input in a case, an import that
   failed): an error, so that the cases it never reached do not read as a pass. */
static int lks_junit_stopped(void *arg, const lks_suite_rec *rec)
{
	struct lks_junit *j = arg;
	int stopped = rec->stopped ? rec->stopped : j->stopped;

	if (!stopped)
		return 0;
	j->tests++;
	j->errors++;
	fprintf(j->f, "    <testcase classname=\"suite\" name=\"stopped\">\n      <error "
	        "type=\"suite stopped\" message=\"the command stopped before the suite's end "
	        "(exit %d, see its output): cases after it were not run\"/>\n    </testcase>\n",
	        stopped);
	return 0;
}

int lks_junit_write(lks_store *s, int64_t suite_id, const char *path, int same_fp_fails,
                    int stopped)
{
	struct lks_junit j = { .s = s, .suite = suite_id, .same_fp_fails = same_fp_fails,
	                       .stopped = stopped };
	FILE *body = tmpfile();
	lks_atomic a;
	int rc = -1, c;

	if (!body) {
		lks_err("cannot write '%s': no temporary file", path);
		goto out;
	}
	/* the counts go in the opening tag, so the test cases are written aside first */
	j.f = body;
	if (lks_store_get_suite(s, suite_id, lks_junit_stopped, &j)
	    || lks_store_get_runs(s, lks_junit_run, &j)
	    || lks_store_get_checks(s, suite_id, lks_junit_case, &j)
	    || lks_store_get_nightly(s, suite_id, lks_junit_night, &j) || lks_atomic_open(&a, path))
		goto out;
	fprintf(a.f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n"
	        "  <testsuite name=\"lockstep suite %lld\" tests=\"%d\" failures=\"%d\" "
	        "errors=\"%d\" skipped=\"%d\">\n", (long long)suite_id, j.tests, j.failures, j.errors,
	        j.skipped);
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
