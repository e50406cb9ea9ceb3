/*
 * strbuf.h: a growable string, as git's strbuf: init, add, release. Running out of memory
 * is remembered (oom) rather than returned by each add, so a text is built in a row of adds
 * and checked once at the end.
 */
#ifndef LKS_HARNESS_STRBUF_H
#define LKS_HARNESS_STRBUF_H

#include <stddef.h>

typedef struct lks_strbuf {
	char *buf;                /* NUL-terminated, never NULL after init ("" then) */
	size_t len, alloc;        /* alloc 0: buf is the static "" */
	int oom;                  /* an add ran out of memory: the text is short */
} lks_strbuf;

#define LKS_STRBUF_INIT { (char *)"", 0, 0, 0 }

void lks_strbuf_init(lks_strbuf *sb);
void lks_strbuf_release(lks_strbuf *sb);
/* Appends; 0, or -1 (and oom set) when out of memory. */
int lks_strbuf_add(lks_strbuf *sb, const char *s, size_t n);
int lks_strbuf_adds(lks_strbuf *sb, const char *s);
int lks_strbuf_addf(lks_strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends v[0..n) with sep between them. */
int lks_strbuf_join(lks_strbuf *sb, const char *const *v, int n, const char *sep);
/* The text, malloc'd, for the caller to free; the buffer is empty again. NULL when an add
   ran out of memory (the buffer is released). */
char *lks_strbuf_detach(lks_strbuf *sb);

#endif
