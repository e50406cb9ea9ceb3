/*
 * import_folder.c: TensorBoard runs given as folders (import.h, lockstep import --format
 * tensorboard), and the rank a folder's name gives the event files in it.
 *
 * A run's folder is read as its events.out.tfevents.* files in name order (the writer's
 * start time, so a restart's file comes after), each a file of its own: a restart's steps
 * again are the run restarted, as for any files given.
 *
 * An event file holds no rank, so torchtitan, told to write TensorBoard for every rank
 * (metrics.save_for_all_ranks), writes each rank's into a folder of its own:
 * torchtitan/components/metrics.py, _build_metric_logger, at pytorch/torchtitan commit
 * c594d8ac89f0b850a8fc1443796916dfa6ab06b1:
 *
 *     base_log_dir = os.path.join(dump_dir, metrics_config.save_tb_folder,
 *                                 datetime.now().strftime("%Y%m%d-%H%M"))
 *     if metrics_config.save_for_all_ranks:
 *         base_log_dir = os.path.join(base_log_dir, f"rank_{torch.distributed.get_rank()}")
 *
 * So the events of a file whose folder is named rank_N (or rankN, as other launchers
 * write it) are rank N's: each rank's folder is a stream of its own, its files read in
 * name order, and a later folder of the same rank (a restarted job's, under a later
 * timestamp) takes that rank back as any later file does. The timestamp folder itself,
 * which holds the rank folders and no event file, is read as its rank folders in rank
 * order. A folder of another name keeps its files' records as they are: rank 0.
 *
 * A folder with neither (the folder above a run's) is read as its subfolders that hold
 * event files somewhere below them, by these same rules, in the order their writers
 * started: the time the name of the earliest event file below each says
 * ("events.out.tfevents.SECONDS.host..."; torch's SummaryWriter and tensorboardX name them
 * so), then by name. Hugging Face's Trainer writes OUTPUT_DIR/runs/<Mon DD_HH-MM-SS_host>/
 * (a month's name: not in time order by name), one folder per launch, so a resumed
 * training's folder is read after the first as a restart; torchtitan's save_tb_folder holds
 * its timestamp folders. Two such folders whose earliest files one process wrote, the
 * second by a later writer of it (torch's names say so: lks_sub_same_launch), are no
 * launch and its restart (a training's train/ and val/ writers, or two trainings of one
 * script): refused. So are two whose events overlap in time, the second's first before the
 * first's last (lks_sub_overlap: tensorboardX's names hold no pid), for a restart begins
 * after the job before it died. Given OUTPUT_DIR itself, its checkpoint folders hold no
 * events and are passed over.
 *
 * A folder of event files that also holds folders with event files in them: those are
 * SummaryWriter.add_scalars' series. add_scalars(tag, {key: v, ...}) writes each key's
 * values into a folder within the run's (torch: <tag, '/' made '_'>_<key>; tensorboardX:
 * <tag>/<key>), by a writer of its own, so a file per launch there too, each restarting the
 * steps, under the chart's tag. Each such file is read with the run's file of its writer's
 * launch, the one its process (tensorboardX: its host) wrote last before it, as the files'
 * names say (lks_events_same_launch), as the tag "<tag>/<key>" (import_tensorboard.c,
 * lks_import_tensorboard_series): so a restart takes the series back with the run. A
 * series file of no launch in the run's folder (a name of no host and pid, or of none
 * there) is counted and the first named (lks_import_result.unread), so that the import
 * says what it did not read; its folder can be imported as a run of its own. add_hparams
 * writes into such a folder too (log_dir/<str(time.time())>/: lks_tb_hparams, cited in
 * import_tb_peek.c): its hyperparameters and metric_dict's scalars at one step, no series
 * of the run, whose step 0 would be a record of names with the folder's time in them, and
 * in a resumed run would take the run back to step 0; counted apart (.hparams), not read.
 *
 * The event files of one folder are launches one after another; two whose events overlap
 * in time (every rank of a torchrun given one log_dir) are refused (lks_files_overlap).
 * Each file's first and last wall times are read (import_tb_peek.c); one not known
 * refuses the folder rather than pass it unchecked.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "harness/import/import_impl.h"
#include "harness/import/import_run_impl.h"
#include "kernels/err.h"

/* The rank the name s..e (a path's component) gives: "rank_N" or "rankN", N digits up to
   LKS_IMPORT_MAX_RANK; -1 for any other name. */
static int lks_rank_name(const char *s, const char *e)
{
	long r = 0;

	if (e - s < 5 || memcmp(s, "rank", 4))
		return -1;
	s += 4 + (s[4] == '_');
	if (s == e || (*s == '0' && e - s > 1))  /* "rank_01" is not the rank torchtitan wrote */
		return -1;
	for (; s < e; s++) {
		if (*s < '0' || *s > '9' || (r = r * 10 + (*s - '0')) > LKS_IMPORT_MAX_RANK)
			return -1;
	}
	return (int)r;
}

/* The rank the folder of the file path gives (its component before the file's name, as
   written: "rank_1/events.out.tfevents.x"), or -1. */
static int lks_rank_of_file(const char *path)
{
	const char *e = strrchr(path, '/'), *s;

	if (!e)
		return -1;  /* a file of the working folder: the path names no folder */
	while (e > path && e[-1] == '/')
		e--;
	for (s = e; s > path && s[-1] != '/'; s--)
		;
	return lks_rank_name(s, e);
}

/* import_run_impl.h */
int lks_import_file_rank(const lks_import_format *fmt, const char *path)
{
	return fmt->id == LKS_IMPORT_TENSORBOARD ? lks_rank_of_file(path) : -1;
}

static int lks_events_file(const struct dirent *d)
{
	return !strncmp(d->d_name, "events.out.tfevents.", 20);
}

static int lks_rank_folder(const struct dirent *d)
{
	return lks_rank_name(d->d_name, d->d_name + strlen(d->d_name)) >= 0;
}

/* Rank folders by rank: rank_10 after rank_9. */
static int lks_rank_order(const struct dirent **a, const struct dirent **b)
{
	int x = lks_rank_name((*a)->d_name, (*a)->d_name + strlen((*a)->d_name));
	int y = lks_rank_name((*b)->d_name, (*b)->d_name + strlen((*b)->d_name));

	return x != y ? (x < y ? -1 : 1) : strcmp((*a)->d_name, (*b)->d_name);
}

/* The add_scalars series of a file of a run's folder (lks_series_find) */
struct lks_series_of {
	lks_import_series *v;
	int n;
};

/* Each entry of list (n, freed here) as path/NAME through lks_import_file (a file, with
   its series of[i] where of is given) or lks_import_folder (a rank's folder). */
static int lks_import_entries(struct lks_import_run *r, const lks_import_format *fmt,
                              const char *path, struct dirent **list, int n, int folders,
                              const struct lks_series_of *of, lks_import_counts *c)
{
	int rc = 0;

	for (int i = 0; i < n; i++) {
		char *full = lks_import_path_in(path, list[i]->d_name);

		if (!rc && !full)
			rc = lks_err("out of memory");
		if (!rc) {
			rc = folders ? lks_import_folder(r, fmt, full, c)
			   : lks_import_file_series(r, fmt, full, of ? of[i].v : NULL, of ? of[i].n : 0, c);
		}
		free(full);
		free(list[i]);
	}
	free(list);
	return rc;
}

/* The folders below a run's folder searched for event files: HF's OUTPUT_DIR/runs/<run>/
   is two below OUTPUT_DIR, torchtitan's tb/<time>/rank_N/ two below tb/ */
#define LKS_EVENTS_DEPTH 4

/* The seconds in the name of an event file ("events.out.tfevents.1795927233.host..."), or
   -1 where there are none. */
static long long lks_events_time(const char *name)
{
	long long t = 0;
	const char *s = name + 20;

	if (*s < '0' || *s > '9')
		return -1;
	for (; *s >= '0' && *s <= '9' && t < (1ll << 50); s++)
		t = t * 10 + (*s - '0');
	return t;
}

/* Whether a folder at path (an entry of a listing: DT_UNKNOWN asks stat) */
static int lks_is_folder(const char *path, const struct dirent *d)
{
	struct stat st;

	if (d->d_type != DT_UNKNOWN)
		return d->d_type == DT_DIR;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The digits at *s as a number, *s past them: -1 where there are none, or more than 18. */
static long long lks_digits(const char **s)
{
	long long v = 0;
	int k = 0;

	for (; **s >= '0' && **s <= '9'; (*s)++)
		if (++k > 18)
			return -1;
		else
			v = v * 10 + (**s - '0');
	return k ? v : -1;
}

/* The start in an event file's name (its SECONDS) into *t, and where the rest of the name
   after it and its '.' begins: NULL where the name has no such start. */
static const char *lks_events_rest(const char *name, long long *t)
{
	const char *p = name + 20;

	return (*t = lks_digits(&p)) >= 0 && *p == '.' ? p + 1 : NULL;
}

/* Whether the rests of two event files' names (lks_events_rest) are torch's, of one
   process: HOST.PID. and the suffix the same, each writer's number N (*na, *nb) digits. */
static int lks_events_same_process(const char *p, const char *q, long long *na, long long *nb)
{
	size_t k = 0, pid;

	while (p[k] && p[k] == q[k])
		k++;
	while (k > 0 && p[k - 1] >= '0' && p[k - 1] <= '9')
		k--;
	if (k < 4 || p[k - 1] != '.')
		return 0;
	for (pid = k - 1; pid > 0 && p[pid - 1] >= '0' && p[pid - 1] <= '9'; pid--)
		;
	if (pid == k - 1 || pid < 2 || p[pid - 1] != '.')
		return 0;
	p += k;
	q += k;
	return (*na = lks_digits(&p)) >= 0 && (*nb = lks_digits(&q)) >= 0 && !strcmp(p, q);
}

/* Whether the event file named b (in a series folder) was written by the launch that
   wrote the one named a (in the run's folder), after it; *sa, *na: a's start and writer's
   number, the later the later (lks_series_launch). Two writers name their files:
   - torch's SummaryWriter and its add_scalars' writers (tensorboard's EventFileWriter,
     tensorboard/summary/writer/event_file_writer.py): "events.out.tfevents.SECONDS.HOST.
     PID.N" and the writer's filename_suffix, N the process's count of writers
     (time.time(), socket.gethostname(), os.getpid(), _global_uid.get()). So b's HOST.PID.
     and suffix are a's, its N bigger and its SECONDS not smaller. HOST may hold dots and
     digits: HOST.PID. is the names' common beginning up to the N that differs, and must
     end in digits between dots.
   - tensorboardX (2.6.5, tensorboardX/event_file_writer.py): "events.out.tfevents.SECONDS.
     HOST" and the suffix, no process: b's HOST and suffix are a's, its SECONDS not
     smaller. */
static int lks_events_same_launch(const char *a, const char *b, long long *sa, long long *na)
{
	const char *p = lks_events_rest(a, sa), *q;
	long long sb, nb;

	*na = 0;
	if (!p || !(q = lks_events_rest(b, &sb)) || *sa > sb)
		return 0;
	if (!strcmp(p, q))  /* tensorboardX's: the same host's */
		return 1;
	return lks_events_same_process(p, q, na, &nb) && *na < nb;
}

/* The earliest start (lks_events_time; -1 for none in the names) of the event files in
   path or below it, up to depth folders down; -2 where there is none. first (where given,
   LKS_EVENTS_NAME bytes): the name of that earliest file, the first by name of its start. */
#define LKS_EVENTS_NAME 256
static long long lks_events_below(const char *path, int depth, char *first)
{
	DIR *dir = opendir(path);
	struct dirent *d;
	long long best = -2;
	char name[LKS_EVENTS_NAME] = "";

	if (!dir)
		return -2;
	while ((d = readdir(dir))) {
		long long t = -2;

		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		if (lks_events_file(d)) {
			t = lks_events_time(d->d_name);
			snprintf(name, sizeof(name), "%s", d->d_name);
		} else if (depth > 0) {
			char *full = lks_import_path_in(path, d->d_name);

			if (full) {
				if (lks_is_folder(full, d))
					t = lks_events_below(full, depth - 1, name);
				free(full);
			}
		}
		if (t != -2 && (best == -2 || (t >= 0 && (best < 0 || t < best))
		                || (t == best && first && strcmp(name, first) < 0))) {
			best = t;
			if (first)
				snprintf(first, LKS_EVENTS_NAME, "%s", name);
		}
	}
	closedir(dir);
	return best;
}

struct lks_sub {
	long long start;
	char *name;
	char first[LKS_EVENTS_NAME];  /* its earliest event file's name */
	double wall_lo, wall_hi;      /* its events' first and last wall time (lks_events_span) */
};

/* The earliest first and latest last wall time (lks_tb_wall_span) of the event files in
   path or below it, up to depth folders down, into *lo and *hi (-1 where none says a
   time: an empty file has no event to overlap). 0, or LKS_E_BAD_INPUT where a file's
   time is not known, naming it: a folder of unknown time could hide two runs written at
   once, so it is refused, not taken for a restart. */
static int lks_events_span(const char *path, int depth, double *lo, double *hi)
{
	DIR *dir = opendir(path);
	struct dirent *d;
	int rc = dir ? 0 : (lks_err("cannot read the folder '%s'", path), LKS_E_BAD_INPUT);

	while (!rc && (d = readdir(dir))) {
		char *full;
		double a, b;

		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		if (!(full = lks_import_path_in(path, d->d_name))) {
			rc = lks_err("out of memory");
		} else if (lks_events_file(d)) {
			if (!(rc = lks_tb_wall_span(full, &a, &b))) {
				*lo = *lo < 0 || a < *lo ? a : *lo;
				*hi = b > *hi ? b : *hi;
			}
			rc = rc == 1 ? 0 : rc;  /* a file of no time */
		} else if (depth > 0 && lks_is_folder(full, d)) {
			rc = lks_events_span(full, depth - 1, lo, hi);
		}
		free(full);
	}
	if (dir)
		closedir(dir);
	return rc;
}

/* The moment t (seconds since the epoch) as text, UTC, to the millisecond (writers at
   once may overlap by less than a second), in buf (40 bytes) */
static const char *lks_utc(double t, char *buf, size_t n)
{
	time_t s = (time_t)t;
	struct tm tm;
	char day[32];

	if (!gmtime_r(&s, &tm) || !strftime(day, sizeof(day), "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(buf, n, "%.3f s", t);
	else
		snprintf(buf, n, "%s.%03d UTC", day, (int)((t - (double)s) * 1000));
	return buf;
}

/* Two folders above runs, or two event files of one folder, b begun after a (a: named
   a, its last event at a_hi; b: named b, its first at b_lo): a launch and its restart, b's
   first event after a's last, for a restart is a new job after the old one died. b's first
   event before a's last is two runs written at once: a training's train/ and val/ writers
   (tensorboardX's names, which hold no pid, say no more), every rank of a torchrun writing
   to one log_dir, or two jobs into one folder. Read in turn, b would take the run back as
   a restart and drop a's steps from there: bad input that says so.
   No tolerance: the one that was a second (for the clocks of two nodes) let runs that
   overlapped by half a second through, one of them dropped. A restart's first event comes
   after its process started, imported torch and made its writer, seconds after the job
   before it died, so a restart on another node is refused only where their clocks differ
   by more than that (NTP keeps them within milliseconds); on one node the clock is one.
   A refusal says so, where a tolerance would drop steps unsaid. */
static int lks_sub_overlap(const char *a, double a_hi, const char *b, double b_lo)
{
	char ta[40], tb[40];

	if (a_hi < 0 || b_lo < 0 || b_lo >= a_hi)
		return 0;
	return lks_err("'%s' began (its first event at %s) before '%s' ended (its last at %s): "
	               "two runs written at once, no launch and its restart: import each as a "
	               "run of its own", b, lks_utc(b_lo, tb, sizeof(tb)), a,
	               lks_utc(a_hi, ta, sizeof(ta))), LKS_E_BAD_INPUT;
}

/* Two folders above runs of one process, the later's writer begun after the earlier's
   (their earliest files' names: torch's, lks_events_same_process): not a launch and its
   restart, each a process of its own, but two writers of one process (a training's train/
   and val/ writers at once, or two trainings of one script). Read in turn, the second
   would take the run back as a restart and drop the first's steps from there: bad input
   that says so. */
static int lks_sub_same_launch(const struct lks_sub *a, const struct lks_sub *b)
{
	long long sa, sb, na, nb;
	const char *p = lks_events_rest(a->first, &sa), *q = lks_events_rest(b->first, &sb);

	if (!p || !q || !lks_events_same_process(p, q, &na, &nb) || na == nb)
		return 0;
	return lks_err("'%s' and '%s' were written by one process (their event files' names: "
	               "'%s', '%s'), so they are no launch and its restart: import each as a run "
	               "of its own", a->name, b->name, a->first, b->first), LKS_E_BAD_INPUT;
}

static int lks_sub_order(const void *a, const void *b)
{
	const struct lks_sub *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The folder above runs (path, which holds no event file and no rank folder): each
   subfolder with event files below it, as a run's folder, in the order they started. 0,
   LKS_E_BAD_INPUT (none), -1. */
static int lks_import_subfolders(struct lks_import_run *r, const lks_import_format *fmt,
                                 const char *path, lks_import_counts *c)
{
	struct dirent **list = NULL;
	struct lks_sub *sub;
	int n = scandir(path, &list, NULL, alphasort), m = 0, rc = 0;

	if (n < 0)
		return lks_err("cannot read the folder '%s'", path), LKS_E_BAD_INPUT;
	sub = calloc((size_t)n + 1, sizeof(*sub));
	for (int i = 0; i < n; i++) {
		char *full = lks_import_path_in(path, list[i]->d_name);

		if (!sub || !full) {
			rc = lks_err("out of memory");
		} else if (!rc && strcmp(list[i]->d_name, ".") && strcmp(list[i]->d_name, "..")) {
			long long t = -2;

			if (lks_is_folder(full, list[i]))
				t = lks_events_below(full, LKS_EVENTS_DEPTH - 1, sub[m].first);
			if (t != -2) {
				sub[m].start = t;
				sub[m].wall_lo = sub[m].wall_hi = -1;
				rc = lks_events_span(full, LKS_EVENTS_DEPTH - 1, &sub[m].wall_lo,
				                     &sub[m].wall_hi);
				sub[m++].name = full;
				full = NULL;
			}
		}
		free(full);
		free(list[i]);
	}
	free(list);
	if (!rc && m == 0)
		rc = (lks_err("'%s' holds no events.out.tfevents.* file, nor a rank_N folder, nor a "
		              "folder with event files below it", path), LKS_E_BAD_INPUT);
	if (!rc)
		qsort(sub, (size_t)m, sizeof(*sub), lks_sub_order);
	/* each against the one before it, and against the one before it that ended last (of a
	   folder of no time between them, or names out of the order of their starts) */
	for (int i = 1, last = 0; i < m && !rc; i++) {
		if (!(rc = lks_sub_same_launch(&sub[i - 1], &sub[i])))
			rc = lks_sub_overlap(sub[last].name, sub[last].wall_hi, sub[i].name,
			                     sub[i].wall_lo);
		last = sub[i].wall_hi > sub[last].wall_hi ? i : last;
	}
	for (int i = 0; i < m; i++) {
		if (!rc)
			rc = lks_import_folder(r, fmt, sub[i].name, c);
		free(sub[i].name);
	}
	free(sub);
	return rc;
}

/* The event files of one folder (path, list[0..n) in name order: the order their writers
   began), each a launch of its own: a later one a restart where it logs a step again. Two
   whose events overlap in time (lks_sub_overlap) are two writers at once (every rank of a
   torchrun given one log_dir; files that differ by pid alone), not a launch and its
   restart: refused, naming both. Each is compared with the one before it that ended last.
   Two files of one process one after the other are not refused here, as two folders of
   one are (lks_sub_same_launch): Lightning's fit() and then test() write two files into
   its version_N/ so, the test's metrics at the step fit() ended on. 0, LKS_E_BAD_INPUT. */
static int lks_files_overlap(const char *path, struct dirent **list, int n)
{
	char *last = NULL;   /* the file that ended last so far, at last_hi */
	double last_hi = -1, lo, hi;
	int rc = 0;

	for (int i = 0; i < n && !rc; i++) {
		char *full = lks_import_path_in(path, list[i]->d_name);

		if (!full)
			rc = lks_err("out of memory");
		else if ((rc = lks_tb_wall_span(full, &lo, &hi)) == 0 && last)
			rc = lks_sub_overlap(last, last_hi, full, lo);
		if (rc == 0 && hi > last_hi) {
			free(last);
			last = full;
			last_hi = hi;
			full = NULL;
		}
		rc = rc == 1 ? 0 : rc;  /* a file of no time: nothing to compare */
		free(full);
	}
	free(last);
	return rc;
}

/* The file of the run's folder (list[0..n)) whose writer's launch wrote the series file
   named b: of those its process wrote before it, the latest (a pid again, in a later
   container, started later); -1 for none. */
static int lks_series_launch(struct dirent **list, int n, const char *b)
{
	long long bs = 0, bn = 0;
	int best = -1;

	for (int i = 0; i < n; i++) {
		long long s, k;

		if (lks_events_same_launch(list[i]->d_name, b, &s, &k)
		    && (best < 0 || s > bs || (s == bs && k > bn))) {
			best = i;
			bs = s;
			bn = k;
		}
	}
	return best;
}

/* One series file (path, of the folder named folder) into of[at]; both strings taken. */
static int lks_series_put(struct lks_series_of *of, int at, char *path, char *folder)
{
	lks_import_series *v = realloc(of[at].v, (size_t)(of[at].n + 1) * sizeof(*v));

	if (!v) {
		free(path);
		free(folder);
		return lks_err("out of memory");
	}
	v[of[at].n++] = (lks_import_series){ path, folder };
	of[at].v = v;
	return 0;
}

/* A file not read (path) counted into *count, first (512 bytes) the first by name */
static void lks_unread_put(int *count, char *first, const char *path)
{
	if ((*count)++ == 0 || strcmp(path, first) < 0)
		snprintf(first, 512, "%s", path);
}

/* The folders within the run's folder (root, its event files list[0..n)) that hold event
   files themselves, up to LKS_EVENTS_DEPTH down: add_scalars' series (torch writes
   TAG_KEY/, tensorboardX TAG/KEY/), from rel (the path below root, "" for root itself).
   Each of their files goes into of[i], list[i] the file of its writer's launch
   (lks_series_launch), its folder's path below root naming it; one of no launch there is
   counted into r, the first by name kept (not read). 0, or -1 (out of memory). */
static int lks_series_find(struct lks_import_run *r, const char *root, const char *rel,
                           int depth, struct dirent **list, int n, struct lks_series_of *of)
{
	char *path = *rel ? lks_import_path_in(root, rel) : strdup(root);
	struct dirent **sub = NULL;
	int m = path ? scandir(path, &sub, NULL, alphasort) : 0, rc = path ? 0 : -1;

	if (!path)
		return lks_err("out of memory");
	for (int i = 0; i < m; i++) {
		const char *name = sub[i]->d_name;
		int events = !strncmp(name, "events.out.tfevents.", 20);
		char *full = NULL, *below = NULL;

		if (!rc && strcmp(name, ".") && strcmp(name, "..")
		    && (!(full = lks_import_path_in(path, name))
		        || !(below = *rel ? lks_import_path_in(rel, name) : strdup(name))))
			rc = lks_err("out of memory");
		if (!rc && full && *rel && events && !lks_is_folder(full, sub[i])) {
			int at = lks_tb_hparams(full) ? -2 : lks_series_launch(list, n, name);

			if (at == -2) {  /* add_hparams' folder (lks_tb_hparams): no series */
				lks_unread_put(&r->hparams, r->hparams_first, full);
			} else if (at >= 0) {
				char *folder = strdup(rel);

				rc = folder ? lks_series_put(of, at, full, folder)
				   : lks_err("out of memory");
				full = folder ? NULL : full;
			} else {
				lks_unread_put(&r->unread, r->unread_first, full);
			}
		} else if (!rc && full && depth > 0 && lks_is_folder(full, sub[i])) {
			rc = lks_series_find(r, root, below, depth - 1, list, n, of);
		}
		free(full);
		free(below);
		free(sub[i]);
	}
	free(sub);
	free(path);
	return rc;
}

/* import_run_impl.h */
int lks_import_folder(struct lks_import_run *r, const lks_import_format *fmt,
                      const char *path, lks_import_counts *c)
{
	struct dirent **list = NULL;
	struct lks_series_of *of = NULL;
	int n = scandir(path, &list, lks_events_file, alphasort), folders = 0, rc = 0;

	if (n == 0) {  /* a run's folder of rank folders (torchtitan's timestamp folder) */
		free(list);
		list = NULL;
		n = scandir(path, &list, lks_rank_folder, lks_rank_order);
		folders = 1;
	}
	if (n < 0)
		return lks_err("cannot read the folder '%s'", path), LKS_E_BAD_INPUT;
	if (n == 0) {
		free(list);
		return lks_import_subfolders(r, fmt, path, c);
	}
	if (!folders && n > 1)
		rc = lks_files_overlap(path, list, n);
	if (!rc && !folders && !(of = calloc((size_t)n, sizeof(*of))))
		rc = lks_err("out of memory");
	if (!rc && of)
		rc = lks_series_find(r, path, "", LKS_EVENTS_DEPTH, list, n, of);
	if (rc) {
		for (int i = 0; i < n; i++)
			free(list[i]);
		free(list);
	} else {
		rc = lks_import_entries(r, fmt, path, list, n, folders, of, c);
	}
	for (int i = 0; of && i < n; i++) {
		for (int k = 0; k < of[i].n; k++) {
			free((char *)of[i].v[k].path);
			free((char *)of[i].v[k].folder);
		}
		free(of[i].v);
	}
	free(of);
	return rc;
}

/* import_run_impl.h */
void lks_import_unread_take(lks_import_result *res, const struct lks_import_run *r)
{
	res->unread = r->unread;
	memcpy(res->unread_first, r->unread_first, sizeof(res->unread_first));
	res->hparams = r->hparams;
	memcpy(res->hparams_first, r->hparams_first, sizeof(res->hparams_first));
}

/* import.h */
const char *lks_import_unread_note(const lks_import_result *res, char *buf, size_t n)
{
	size_t k = 0;

	if (!res->unread && !res->hparams)
		return NULL;
	*buf = 0;
	if (res->unread)
		k = (size_t)snprintf(buf, n, "not read: %d event file%s of add_scalars series, such "
		                     "as '%s': no event file of the run's folder is of its writer's "
		                     "launch (as the names say: the same host, and process where "
		                     "they name one, started before it); import each such folder as "
		                     "a run of its own, with --tag-map to name its tag", res->unread,
		                     res->unread == 1 ? "" : "s", res->unread_first);
	if (res->hparams && k < n)
		snprintf(buf + k, n - k, "%snot read: %d event file%s of add_hparams, such as '%s': "
		         "its hyperparameters and metric_dict's values, at a step of their own, are "
		         "no steps of the run", k ? "; " : "", res->hparams,
		         res->hparams == 1 ? "" : "s", res->hparams_first);
	return buf;
}
