/*
 * import_reader.c: the common reader of every parser (import.h, lks_import_reader): a
 * file's lines a block at a time, in constant memory; a compressed file named as such.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/import/import.h"
#include "kernels/err.h"

/* A block: a read of a big file takes this much (the kernel copies it at memory speed, and
   a syscall per block costs nothing); a line must fit in it whole. */
#define LKS_IMPORT_BLOCK (1 << 20)

const char *lks_import_compressed(const char *s, size_t n)
{
	static const struct {
		const char *magic;
		size_t len;
		const char *cat;
	} kinds[] = { { "\x1f\x8b", 2, "zcat" }, { "\x28\xb5\x2f\xfd", 4, "zstdcat" },
	              { "\xfd" "7zXZ\0", 6, "xzcat" }, { "BZh", 3, "bzcat" } };

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (n >= kinds[i].len && !memcmp(s, kinds[i].magic, kinds[i].len))
			return kinds[i].cat;
	return NULL;
}

static atomic_uint_least64_t lks_bytes_read;

uint64_t lks_import_bytes_read(void)
{
	return atomic_load_explicit(&lks_bytes_read, memory_order_relaxed);
}

int lks_import_reader_open(lks_import_reader *r, const char *path, FILE *f, size_t chunk)
{
	/* a line must fit whole: LKS_IMPORT_LINE_MAX at least */
	*r = (lks_import_reader){ .path = path, .f = f, .fd = fileno(f),
	                          .cap = chunk ? LKS_IMPORT_LINE_MAX : LKS_IMPORT_BLOCK,
	                          .chunk = chunk ? chunk : LKS_IMPORT_BLOCK, .nul = SIZE_MAX,
	                          .limit = UINT64_MAX };
	/* + 1: a last line's NUL; the slack set once, so that what is read there is defined */
	if (!(r->buf = calloc(r->cap + 1 + LKS_IMPORT_SLACK, 1)))
		return lks_err("out of memory");
	return 0;
}

void lks_import_reader_close(lks_import_reader *r)
{
	free(r->buf);
	r->buf = NULL;
}

/* r->nul after [beg, end) has changed: the first NUL byte from from on (a file has none:
   one memchr per block, not one per line). */
static void lks_reader_nul(lks_import_reader *r, size_t from)
{
	const char *z;

	if (r->nul != SIZE_MAX && r->nul >= r->beg && r->nul < r->end)
		return;
	if (from < r->beg)
		from = r->beg;
	z = from < r->end ? memchr(r->buf + from, 0, r->end - from) : NULL;
	r->nul = z ? (size_t)(z - r->buf) : SIZE_MAX;
}

/* Appends what the next read gives to [beg, end), up to chunk bytes and the buffer's end
   (room is left: see lks_import_reader_next): 1, 0 at the end of the file, -1 a read error. */
static int lks_reader_fill(lks_import_reader *r)
{
	size_t room = r->cap - r->end < r->chunk ? r->cap - r->end : r->chunk, n = 0;
	int ch;

	if (r->fd >= 0) {
		ssize_t got;

		if (room > r->limit)
			room = (size_t)r->limit;
		do
			got = room ? read(r->fd, r->buf + r->end, room) : 0;
		while (got < 0 && errno == EINTR);
		if (got < 0)
			return lks_err("cannot read '%s' after line %ld", r->path, r->line);
		n = (size_t)got;
		r->limit -= r->limit == UINT64_MAX ? 0 : n;
		atomic_fetch_add_explicit(&lks_bytes_read, n, memory_order_relaxed);
	} else {
		/* a stream whose reads may wait (--follow): no further than the line's end */
		while (n < room && (ch = getc(r->f)) != EOF)
			if ((r->buf[r->end + n++] = (char)ch) == '\n')
				break;
		if (ferror(r->f))
			return lks_err("cannot read '%s' after line %ld", r->path, r->line);
	}
	r->end += n;
	r->eof = n == 0;
	lks_reader_nul(r, r->end - n);
	return n > 0;
}

/* A line with a NUL byte at line: bad input; named as compressed where its bytes b (up to
   r->end) begin as a compressed file does. */
static int lks_reader_bad_nul(const lks_import_reader *r, const char *b, long line)
{
	const char *cat = lks_import_compressed(b, (size_t)(r->buf + r->end - b));

	if (cat)
		return lks_err("'%s':%ld: compressed, not a log: give it decompressed ('%s %s | "
		               "lockstep import ... -')", r->path, line, cat, r->path), LKS_E_BAD_INPUT;
	return lks_err("'%s':%ld: a NUL byte in the line", r->path, line), LKS_E_BAD_INPUT;
}

/* The line at beg, too long to hand on, cut at its carriage returns up to e (its end where
   final: a newline's '\r' before it no cut; else the byte before e may be one, and is
   left for the next cut): its head kept up to the first '\r' (LKS_IMPORT_LINE_HEAD bytes
   at most, else none), a '\r', then what follows the last '\r' where it fits in a line
   (else none, and r->over: the text a terminal shows is too long), the bytes after moved
   up. A terminal shows a line from after its last '\r' (lks_shown_start): what is dropped
   is a progress bar's earlier draws, and the memory stays one block however long the line.
   Every byte dropped has been looked at for a NUL: a NUL anywhere in a line is bad input.
   0, or LKS_E_BAD_INPUT. */
static int lks_reader_cut(lks_import_reader *r, size_t e, int final)
{
	char *b = r->buf + r->beg;
	size_t w = final ? e : e - 1, head = 0, tail = 0, from;
	const char *f, *l;

	if (final && e < r->end && e > r->beg && r->buf[e - 1] == '\r')
		w--;  /* a newline's carriage return (CRLF), no redraw */
	if (r->nul >= r->beg && r->nul < w)
		return lks_reader_bad_nul(r, b, ++r->line);  /* counted, as a line handed on is */
	f = memchr(b, '\r', w - r->beg);
	for (l = r->buf + w; f && *--l != '\r';)
		;
	if (f && (size_t)(f - b) <= LKS_IMPORT_LINE_HEAD)
		head = (size_t)(f - b);
	from = w;
	if (f && (l > f || !r->over)) {  /* text after a '\r' not yet known too long */
		tail = w - (size_t)(l + 1 - r->buf);
		r->over = head + 1 + tail >= LKS_IMPORT_LINE_MAX - 1;
		if (!r->over)
			from = (size_t)(l + 1 - r->buf);
	} else {
		r->over = 1;
	}
	b[head] = '\r';
	memmove(b + head + 1, r->buf + from, r->end - from);
	r->end = r->beg + head + 1 + (r->end - from);
	r->nul = SIZE_MAX;
	lks_reader_nul(r, r->beg);
	r->cut = 1;
	return 0;
}

int lks_import_reader_next(lks_import_reader *r, char **s, size_t *len)
{
	size_t scan = r->beg, n, cut_at = 0;  /* [beg, scan) holds no newline */
	char *b, *nl;
	int rc;

	r->cut = r->over = 0;
	for (;;) {
		b = r->buf + r->beg;
		nl = memchr(r->buf + scan, '\n', r->end - scan);
		if (nl || (r->eof && r->end > r->beg))
			break;
		if (r->eof)
			return 0;
		/* too long without its end yet: cut (once per read, so that each cut has more) */
		if (r->end - r->beg >= LKS_IMPORT_LINE_MAX - 1 && r->end != cut_at) {
			if ((rc = lks_reader_cut(r, r->end, 0)))
				return rc;
			scan = cut_at = r->end;
			continue;
		}
		if (r->end == r->cap) {  /* the line's start to the front: it is shorter than a block */
			memmove(r->buf, b, r->end - r->beg);
			cut_at = cut_at == r->end ? r->end - r->beg : 0;
			r->end -= r->beg;
			if (r->nul != SIZE_MAX)
				r->nul -= r->beg;
			r->beg = 0;
		}
		scan = r->end;
		if (lks_reader_fill(r) < 0)
			return -1;
	}
	n = nl ? (size_t)(nl - b) : r->end - r->beg;
	if (r->cut || n >= LKS_IMPORT_LINE_MAX - 1) {
		if ((rc = lks_reader_cut(r, r->beg + n, 1)))
			return rc;
		nl = nl ? memchr(b, '\n', r->end - r->beg) : NULL;
		n = nl ? (size_t)(nl - b) : r->end - r->beg;
	}
	r->line++;
	/* a NUL would end the line early for the parsers: bad input */
	if (r->nul - r->beg < n)
		return lks_reader_bad_nul(r, b, r->line);
	if (r->over) {  /* what a terminal shows of it is longer than any metric line */
		*s = NULL;
		*len = 0;
		r->beg = nl ? (size_t)(nl + 1 - r->buf) : r->end;
		lks_reader_nul(r, r->beg);
		return 3;
	}
	*s = b;
	b[n] = 0;
	if (!nl) {
		r->beg = r->end;
		*len = n;
		return 2;
	}
	r->beg += n + 1;
	if (n && b[n - 1] == '\r')
		b[--n] = 0;
	*len = n;
	return 1;
}
