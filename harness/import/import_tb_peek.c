/*
 * import_tb_peek.c: what a TensorBoard event file says of itself without being read whole
 * (import_impl.h), for import_folder.c to tell which files of a folder are a run's:
 *
 * - its wall times, first and last (lks_tb_wall_span): a launch's restart begins after
 *   the launch before it ended, so two files or folders whose events overlap in time were
 *   written at once and are refused, not read as a restart that would drop one's steps.
 *   A time that cannot be known is no "no overlap": the file is refused, naming it.
 * - whether it is a record of add_hparams (lks_tb_hparams), which torch and tensorboardX
 *   write into a folder of their own beside a run's files, as an add_scalars series is.
 *
 * The records are TFRecords (import_tensorboard.c), decoded by protobuf-c.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tensorboard.pb-c.h"
#include "harness/import/import_impl.h"
#include "kernels/err.h"

/* The bytes read at each end of a file: a scalar's record is under 100 bytes, so its first
   and last records are found there, but for a record larger (an image, a graph). */
#define LKS_TB_PEEK ((size_t)64 << 10)

/* The wall time of the Event data[0..len) into *wall: its seconds, or -1 where it has none
   (0, not written). 0, or -1 where the data is no Event. */
static int lks_tb_wall_of(const uint8_t *data, size_t len, double *wall)
{
	LksTb__Event *e = lks_tb__event__unpack(NULL, len, data);

	if (!e)
		return -1;
	*wall = e->wall_time > 0 ? e->wall_time : -1;
	lks_tb__event__free_unpacked(e, NULL);
	return 0;
}

/* The wall time of the record at byte at of fd (size bytes) into *wall (lks_tb_wall_of),
   both its CRCs checked: 0, or LKS_E_BAD_INPUT naming path and the byte. */
static int lks_tb_wall_at(int fd, const char *path, off_t at, off_t size, double *wall)
{
	uint8_t h[12], *w = NULL;
	int64_t len = -1;
	int rc = LKS_E_BAD_INPUT;

	if (size - at >= 16 && pread(fd, h, 12, at) == 12 && (len = lks_tb_head_len(h)) >= 0
	    && len <= size - at - 16 && (w = malloc((size_t)len + 16))
	    && pread(fd, w, (size_t)len + 16, at) == len + 16
	    && lks_tb_record_len(w, (size_t)len + 16, 0) == len)
		rc = lks_tb_wall_of(w + 12, (size_t)len, wall) ? LKS_E_BAD_INPUT : 0;
	free(w);
	if (rc)
		lks_err("'%s': byte %lld: no whole event there (a bad CRC, a record cut short, or no "
		        "Event), so when the file was written is not known", path, (long long)at);
	return rc;
}

/* The byte where the last whole record of fd (size bytes, > 0) begins, found by walking
   the records' headers from byte 0 by their lengths, each length's CRC checked (a record
   of any size, unlike a look within the file's last bytes). A file may end within its last
   record (a writer killed while writing it, which the reader reads to the record before:
   lks_tb_cut_at_end): the record before it is the last. 0 and *last, or LKS_E_BAD_INPUT
   naming path and the byte of a header whose CRC fails, or of none whole. */
static int lks_tb_last_record(int fd, const char *path, off_t size, off_t *last)
{
	uint8_t *w = malloc(LKS_TB_PEEK);
	off_t p = 0, base = 0;
	size_t have = 0;
	int cut = 0;

	*last = -1;
	while (w && p < size) {
		int64_t len;

		if (p + 12 > base + (off_t)have) {  /* the header is not in the window: read on */
			ssize_t got = pread(fd, w, LKS_TB_PEEK, p);

			base = p;
			have = got > 0 ? (size_t)got : 0;
		}
		cut = p + 12 > size;  /* the file ends within a header */
		if (cut || p + 12 > base + (off_t)have || (len = lks_tb_head_len(w + (p - base))) < 0)
			break;
		if ((cut = len > size - p - 16))  /* or within the record's data */
			break;
		*last = p;
		p += 16 + len;
	}
	free(w);
	if (!w)
		return lks_err("out of memory");
	if (p == size || (cut && *last >= 0))
		return 0;
	return lks_err("'%s': byte %lld: no record's whole header there (a bad CRC, or a record "
	               "cut short), so when the file was written is not known", path,
	               (long long)p), LKS_E_BAD_INPUT;
}

/* The wall time of the last record of fd (size bytes) into *wall: the record within the
   file's last LKS_TB_PEEK bytes whose CRCs check and whose end is the file's (a false one
   passes two CRC32Cs, 1 in 2^64), else (a last record larger) the one the headers' walk
   from byte 0 finds. 0, LKS_E_BAD_INPUT, -1. */
static int lks_tb_last_wall(int fd, const char *path, off_t size, double *wall)
{
	size_t n = size < (off_t)LKS_TB_PEEK ? (size_t)size : LKS_TB_PEEK;
	uint8_t *w = malloc(n);
	off_t at = -1;
	int64_t len;
	int rc;

	if (!w)
		return lks_err("out of memory");
	if (pread(fd, w, n, size - (off_t)n) == (ssize_t)n)
		for (size_t p = 0; p + 16 <= n && at < 0; p++)
			if ((len = lks_tb_record_len(w, n, p)) >= 0 && (size_t)len == n - p - 16
			    && !lks_tb_wall_of(w + p + 12, (size_t)len, wall))
				at = size - (off_t)n + (off_t)p;
	free(w);
	if (at >= 0)
		return 0;
	if ((rc = lks_tb_last_record(fd, path, size, &at)))
		return rc;
	return lks_tb_wall_at(fd, path, at, size, wall);
}

/* import_impl.h */
int lks_tb_wall_span(const char *path, double *first, double *last)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	int rc;

	*first = *last = -1;
	if (fd < 0 || fstat(fd, &st)) {
		rc = (lks_err("cannot read '%s'", path), LKS_E_BAD_INPUT);
		goto out;
	}
	if (st.st_size == 0) {  /* no event: nothing of its own to overlap */
		rc = 1;
		goto out;
	}
	if ((rc = lks_tb_wall_at(fd, path, 0, st.st_size, first))
	    || (rc = lks_tb_last_wall(fd, path, st.st_size, last)))
		goto out;
	if (*first < 0 && *last < 0)
		rc = 1;  /* a writer of no wall times (a test's, by hand): none to compare */
	else if (*first < 0 || *last < 0)
		rc = (lks_err("'%s': its %s record holds no wall time, so when the file was written "
		              "is not known", path, *first < 0 ? "first" : "last"), LKS_E_BAD_INPUT);
out:
	if (fd >= 0)
		close(fd);
	return rc;
}

/* The records a look for add_hparams' tags reads: torch (2.15.0,
   torch/utils/tensorboard/writer.py, SummaryWriter.add_hparams) and tensorboardX (2.6.5,
   tensorboardX/writer.py) both open a SummaryWriter on log_dir/<run_name, default
   str(time.time())>, whose first record is the file's version, and write the summaries
   "_hparams_/experiment", "_hparams_/session_start_info", "_hparams_/session_end_info"
   (tensorboard/plugins/hparams/metadata.py) next, then metric_dict's scalars. */
#define LKS_TB_HPARAMS_RECORDS 4

/* import_impl.h */
int lks_tb_hparams(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), found = 0;
	uint8_t *w = fd >= 0 ? malloc(LKS_TB_PEEK) : NULL;
	ssize_t got = w ? pread(fd, w, LKS_TB_PEEK, 0) : -1;
	size_t n = got > 0 ? (size_t)got : 0, p = 0;
	int64_t len;

	for (int k = 0; k < LKS_TB_HPARAMS_RECORDS && !found
	     && (len = lks_tb_record_len(w, n, p)) >= 0; k++) {
		LksTb__Event *e = lks_tb__event__unpack(NULL, (size_t)len, w + p + 12);
		const LksTb__Summary *s = e && e->what_case == LKS_TB__EVENT__WHAT_SUMMARY
		                          ? e->summary : NULL;

		for (size_t i = 0; s && i < s->n_value && !found; i++)
			found = s->value[i]->tag && !strncmp(s->value[i]->tag, "_hparams_/", 10);
		if (e)
			lks_tb__event__free_unpacked(e, NULL);
		p += 16 + (size_t)len;
	}
	free(w);
	if (fd >= 0)
		close(fd);
	return found;
}
