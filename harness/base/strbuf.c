/*
 * strbuf.c: a growable string (strbuf.h).
 */
#include "harness/base/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void lks_strbuf_init(lks_strbuf *sb)
{
	*sb = (lks_strbuf)LKS_STRBUF_INIT;
}

void lks_strbuf_release(lks_strbuf *sb)
{
	if (sb->alloc)
		free(sb->buf);
	lks_strbuf_init(sb);
}

/* Room for n more bytes and the NUL. */
static int lks_strbuf_grow(lks_strbuf *sb, size_t n)
{
	size_t want = sb->len + n + 1, alloc = sb->alloc ? sb->alloc : 64;
	char *p;

	if (sb->oom || want < n)
		return sb->oom = 1, -1;
	if (want <= sb->alloc)
		return 0;
	while (alloc < want)
		alloc *= 2;
	if (!(p = realloc(sb->alloc ? sb->buf : NULL, alloc)))
		return sb->oom = 1, -1;
	if (!sb->alloc)
		p[0] = '\0';
	sb->buf = p;
	sb->alloc = alloc;
	return 0;
}

int lks_strbuf_add(lks_strbuf *sb, const char *s, size_t n)
{
	if (lks_strbuf_grow(sb, n))
		return -1;
	memcpy(sb->buf + sb->len, s, n);
	sb->len += n;
	sb->buf[sb->len] = '\0';
	return 0;
}

int lks_strbuf_adds(lks_strbuf *sb, const char *s)
{
	return lks_strbuf_add(sb, s, strlen(s));
}

int lks_strbuf_addf(lks_strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || lks_strbuf_grow(sb, (size_t)n))
		return sb->oom = 1, -1;
	va_start(ap, fmt);
	vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	sb->len += (size_t)n;
	return 0;
}

int lks_strbuf_join(lks_strbuf *sb, const char *const *v, int n, const char *sep)
{
	for (int i = 0; i < n; i++)
		if ((i && lks_strbuf_adds(sb, sep)) || lks_strbuf_adds(sb, v[i]))
			return -1;
	return 0;
}

char *lks_strbuf_detach(lks_strbuf *sb)
{
	char *s = sb->oom ? NULL : sb->alloc ? sb->buf : strdup("");

	if (sb->oom || !sb->alloc)
		lks_strbuf_release(sb);
	else
		lks_strbuf_init(sb);
	return s;
}
