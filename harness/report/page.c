/*
 * page.c: the page of the report in its two forms at once, index.html and report.md: the
 * one place that escapes text for HTML and for Markdown, and the tables, headings and
 * paragraphs written through it; the HTML template around the body; texts built with stdio.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/file.h"
#include "harness/report/report_impl.h"
#include "kernels/err.h"

/* ---- texts built with stdio ---- */

int lks_text_open(struct lks_text *t)
{
	t->buf = NULL;
	t->f = open_memstream(&t->buf, &t->len);
	return t->f ? 0 : lks_err("out of memory");
}

/* The text; NULL when it could not be kept (out of memory). */
const char *lks_text_done(struct lks_text *t)
{
	int bad = t->f && fclose(t->f) != 0;

	t->f = NULL;
	return bad || !t->buf ? NULL : t->buf;
}

void lks_text_free(struct lks_text *t)
{
	if (t->f)
		fclose(t->f);
	free(t->buf);
	memset(t, 0, sizeof(*t));
}

/* ---- escaping: the only place that writes text into HTML or Markdown ---- */

void lks_html(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default: fputc(*s, f);
		}
	}
}

/* Text as Markdown (CommonMark, GitHub's tables) that a viewer shows as this text and
   nothing else: what would start HTML or an entity as an entity; after a backslash, what
   has a meaning inline (code, emphasis, links, strikethrough, the end of a table cell or
   a heading) and, in text that starts a block (block: a paragraph), what would make it a
   list or a setext line; line breaks and other control characters as spaces. */
void lks_md(FILE *f, const char *s, int block)
{
	int digits = block;       /* only digits so far: "1." would start a list */

	for (const char *p = s; p && *p; p++) {
		char c = *p;

		if (c == '<' || c == '>' || c == '&')
			fputs(c == '<' ? "&lt;" : c == '>' ? "&gt;" : "&amp;", f);
		else if ((unsigned char)c < 0x20 || c == 0x7f)
			fputc(' ', f);
		else if (strchr("\\`*_[]|~#", c) || (block && p == s && strchr("-+=", c))
		         || (digits && p > s && (c == '.' || c == ')')))
			fprintf(f, "\\%c", c);
		else
			fputc(c, f);
		digits = digits && c >= '0' && c <= '9';
	}
}

/* A name safe in a file name, a link, an HTML id and a gnuplot string, and one to one: the
   characters of the name rule (harness/base/name.h) as they are, any other byte (of an
   imported tensor's name) as '~' and two hex digits, so that no two names share one (x+y
   and x_y once both became x_y: one plot, one trend series for two). */
void lks_safe_name(char *out, size_t size, const char *s)
{
	size_t i = 0;

	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		int keep = strchr("-_.+", c) || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z')
		           || (c >= 'A' && c <= 'Z');

		if (i + (keep ? 1 : 3) >= size)
			break;
		if (keep)
			out[i++] = (char)c;
		else
			i += (size_t)snprintf(out + i, size - i, "~%02x", c);
	}
	out[i] = 0;
}

/* One row of a table in both outputs: cells[0..n), cls: a CSS class per cell or NULL. */
void lks_row(struct lks_report *r, const char *tr_class, const char *const *cells,
             const char *const *cls, int n)
{
	fprintf(r->html, tr_class ? "<tr class=\"%s\">" : "<tr>", tr_class);
	fputs("|", r->md);
	for (int i = 0; i < n; i++) {
		if (cls && cls[i])
			fprintf(r->html, "<td class=\"%s\">", cls[i]);
		else
			fputs("<td>", r->html);
		lks_html(r->html, cells[i]);
		fputs("</td>", r->html);
		fputc(' ', r->md);
		lks_md(r->md, cells[i], 0);
		fputs(" |", r->md);
	}
	fputs("</tr>\n", r->html);
	fputs("\n", r->md);
}

void lks_table_head(struct lks_report *r, const char *const *heads, int n)
{
	fputs("<table>\n<tr>", r->html);
	fputs("\n|", r->md);
	for (int i = 0; i < n; i++) {
		fputs("<th>", r->html);
		lks_html(r->html, heads[i]);
		fputs("</th>", r->html);
		fputc(' ', r->md);
		lks_md(r->md, heads[i], 0);
		fputs(" |", r->md);
	}
	fputs("</tr>\n", r->html);
	fputs("\n|", r->md);
	for (int i = 0; i < n; i++)
		fputs("---|", r->md);
	fputs("\n", r->md);
}

void lks_table_end(struct lks_report *r)
{
	fputs("</table>\n", r->html);
	fputs("\n", r->md);
}

void lks_heading(struct lks_report *r, int level, const char *text)
{
	fprintf(r->html, "<h%d>", level);
	lks_html(r->html, text);
	fprintf(r->html, "</h%d>\n", level);
	fprintf(r->md, "\n%.*s ", level, "####");
	lks_md(r->md, text, 0);
	fputs("\n\n", r->md);
}

/* A paragraph in both outputs; note: in the muted style. */
void lks_para(struct lks_report *r, int note, const char *text)
{
	fputs(note ? "<p class=\"note\">" : "<p>", r->html);
	lks_html(r->html, text);
	fputs("</p>\n", r->html);
	fputs(note ? "_" : "", r->md);
	lks_md(r->md, text, 1);
	fputs(note ? "_\n\n" : "\n\n", r->md);
}

/* ---- words ---- */

/* A place (step, rank, tensor; -1 or NULL: not given) in words, "" when none is given. */
void lks_place(char *buf, size_t size, int step, int rank, const char *tensor)
{
	int n = 0;

	buf[0] = 0;
	if (step >= 0)
		n += snprintf(buf + n, size - (size_t)n, "step %d", step);
	if (rank >= 0 && (size_t)n < size)
		n += snprintf(buf + n, size - (size_t)n, "%srank %d", n ? ", " : "", rank);
	if (tensor && (size_t)n < size)
		snprintf(buf + n, size - (size_t)n, "%s%s", n ? ", " : "", tensor);
}

char *lks_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0
	    && (buf = malloc((size_t)n + 1))) {
		*len = fread(buf, 1, (size_t)n, f);
		buf[*len] = 0;
	}
	fclose(f);
	return buf;
}

const char *lks_fmt(char *buf, size_t size, const char *fmt, double v)
{
	if (isnan(v))
		return "";
	snprintf(buf, size, fmt, v);
	return buf;
}

void lks_steps_text(char *buf, size_t size, int nsteps, int steps_last, int declared)
{
	if (nsteps <= 0)
		snprintf(buf, size, "none");
	else if (steps_last)
		snprintf(buf, size, "up to %d", nsteps - 1);
	else if (nsteps < declared)
		snprintf(buf, size, "%d of %d", nsteps, declared);
	else
		snprintf(buf, size, "%d", nsteps);
}

const char *lks_fmt_stored(char *buf, size_t size, const char *fmt, double v, int stored)
{
	if (!stored)
		return "";
	if (isnan(v))
		return "NaN";
	snprintf(buf, size, fmt, v);
	return buf;
}

/* ---- the page ---- */

/* The HTML template before (tail 0) or after (tail 1) its line @BODY@, with @TITLE@
   replaced by the escaped title. */
int lks_template(struct lks_report *r, const char *title, int tail)
{
	char path[LKS_REPORT_PATH];
	size_t len;
	char *t, *body, *mark;

	snprintf(path, sizeof(path), "%s/report.html", r->o->templates);
	/* a regular file within its limit: --templates may name any folder */
	if (lks_file_read(path, LKS_TEMPLATE_FILE_MAX, "a report template", &t, &len))
		return -1;
	/* the marker alone on its line, so that a comment may name it */
	if (!(body = strstr(t, "\n@BODY@\n"))) {
		free(t);
		return lks_err("'%s' has no line '@BODY@'", path);
	}
	body[1] = 0;
	if (tail) {
		fputs(body + strlen("\n@BODY@\n"), r->html);
	} else {
		char *p = t;

		while ((mark = strstr(p, "@TITLE@"))) {
			fwrite(p, 1, (size_t)(mark - p), r->html);
			lks_html(r->html, title);
			p = mark + strlen("@TITLE@");
		}
		fputs(p, r->html);
	}
	free(t);
	return 0;
}

/* The template up to the body, and the page's title as its first heading. */
int lks_page_title(struct lks_report *r, const char *title)
{
	if (lks_template(r, title, 0))
		return -1;
	fputs("# ", r->md);
	lks_md(r->md, title, 0);
	fputs("\n\n", r->md);
	fputs("<h1>", r->html);
	lks_html(r->html, title);
	fputs("</h1>\n", r->html);
	return 0;
}
