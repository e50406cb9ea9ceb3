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

/* Reads past the rest of a line too long to hold metrics, up to its newline. 3, or -1. */
static int lks_reader_skip(lks_import_reader *r)
{
	r->beg = r->end = 0;
	r->nul = SIZE_MAX;
	for (;;) {
		const char *nl;
		int rc = lks_reader_fill(r);

		if (rc <= 0)
			return rc < 0 ? -1 : 3;
		if ((nl = memchr(r->buf, '\n', r->end))) {
			r->beg = (size_t)(nl + 1 - r->buf);
			lks_reader_nul(r, r->beg);
			return 3;
		}
		r->end = 0;
		r->nul = SIZE_MAX;
	}
}

int lks_import_reader_next(lks_import_reader *r, char **s, size_t *len)
{
	size_t scan = r->beg, n;  /* [beg, scan) holds no newline */
	char *b, *nl;

	for (;;) {
		b = r->buf + r->beg;
		nl = memchr(r->buf + scan, '\n', r->end - scan);
		if (nl || r->end - r->beg >= LKS_IMPORT_LINE_MAX - 1 || (r->eof && r->end > r->beg))
			break;
		if (r->eof)
			return 0;
		if (r->end == r->cap) {  /* the line's start to the front: it is shorter than a block */
			memmove(r->buf, b, r->end - r->beg);
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
	r->line++;
	/* a NUL would end the line early for the parsers: bad input, as far as a line is read */
	if (r->nul - r->beg < (n < LKS_IMPORT_LINE_MAX - 1 ? n : LKS_IMPORT_LINE_MAX - 1)) {
		const char *cat = lks_import_compressed(b, r->end - r->beg);

		if (cat)
			return lks_err("'%s':%ld: compressed, not a log: give it decompressed ('%s %s | "
			               "lockstep import ... -')", r->path, r->line, cat, r->path),
			       LKS_E_BAD_INPUT;
		return lks_err("'%s':%ld: a NUL byte in the line", r->path, r->line),
		       LKS_E_BAD_INPUT;
	}
	if (n >= LKS_IMPORT_LINE_MAX - 1) {
		/* longer than any metric line (a progress bar redrawn with '\r'): read past */
		*s = NULL;
		*len = 0;
		if (nl) {
			r->beg = (size_t)(nl + 1 - r->buf);
			lks_reader_nul(r, r->beg);  /* the line's NUL, past its first bytes, is read past */
			return 3;
		}
		return lks_reader_skip(r);
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
