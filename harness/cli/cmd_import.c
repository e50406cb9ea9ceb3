/*
 * cmd_import.c: 'lockstep import': a run of another training framework, read from its
 * logs, stored as one run of a case (harness/import/import.h). One transaction: a bad line
 * stores nothing.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness/base/name.h"
#include "harness/cli/cmd.h"
#include "harness/import/import.h"
#include "kernels/clock.h"
#include "kernels/err.h"

static const char lks_import_help[] =
	"usage: lockstep import --format FORMAT FILE... --case NAME --run NAME [--ranks LIST]\n"
	"                       [--tag-map MAP] [--db FILE]\n"
	"\n"
	"Reads the training logs FILE... of one run, in order ('-': standard input), and stores\n"
	"it in the database (default lockstep.db) as run NAME of case NAME: per step and rank,\n"
	"named metrics. A run restarted from a checkpoint goes on in the next file: where a\n"
	"later file logs a rank's step again, what the earlier files logged from that step on\n"
	"is dropped (the job that logged it died), and the later file's values stand. Lines\n"
	"that hold no metrics are counted and ignored. A line that holds metrics but is cut\n"
	"short or has a bad number, a step that goes backwards or comes again with other\n"
	"values within a file, a rank without steps, or a metric name past the 65536 a\n"
	"run holds is bad input (exit 2, naming file:line), and nothing is stored.\n"
	"\n"
	"A line's rank is what its prefix says: torchrun's \"[rankN]:\" (of any role:\n"
	"\"[defaultN]:\"; in torchtitan also after a log collector's prefix, such as kubectl\n"
	"logs --prefix's), else srun --label's \"N: \", else 0. Where lines name no rank and\n"
	"several ranks print a step, its lines are one record (the first; their tps and tflops\n"
	"may differ, their numerics metrics such as loss may not). A line is what a terminal\n"
	"shows of it: a progress bar drawn before a carriage return is dropped (past 64 KiB\n"
	"of redraws too: what follows the last is read), and where torchrun joined a bar's\n"
	"pieces to the line after them, each with its prefix, the line is the last prefix's\n"
	"piece. A NUL byte in a line is bad input. A console that prints no step\n"
	"(hf-trainer's) is a run's only file: of a resumed run give trainer_state.json.\n"
	"\n"
	"TensorBoard event files hold no rank: a file whose folder is named rank_N (or rankN;\n"
	"torchtitan's metrics.save_for_all_ranks writes a folder per rank) holds rank N's\n"
	"events, any other rank 0. A FILE may be a folder: its events.out.tfevents.* files in\n"
	"name order, or, where it holds none, its rank_N folders (torchtitan's timestamp\n"
	"folder), or, where it holds neither, its folders with event files below them, in the\n"
	"order they started (Hugging Face's output folder: runs/<launch>/, a folder per\n"
	"launch; two such folders that one process wrote, such as train/ and val/, or whose\n"
	"events overlap in time, are refused: import each as a run). Event files of one\n"
	"folder whose events overlap in time (every rank writing to one log_dir) are refused\n"
	"alike; a file whose times cannot be read refuses its folder. Folders beside a\n"
	"folder's own event files are add_scalars' series (a folder TAG_KEY, or TAG/KEY from\n"
	"tensorboardX, per key): each file there is read with the file its writer's launch\n"
	"wrote last before it (host, and pid where named, in the names), its tag as TAG/KEY;\n"
	"one of no such file is not read, and the import says so, as it does of add_hparams'\n"
	"folder (log_dir/<time>/: its hyperparameters, not read). Each rank's files are a\n"
	"stream of their own: a later file that logs a rank's step again restarts that rank.\n"
	"A tag written twice at a step with the same value is one value.\n"
	"\n"
	"Tensor traces (te-debug, tensor-jsonl, ...) hold per step and rank the statistics of\n"
	"each tensor in the order the run met them (and its hash, where the format has one):\n"
	"checks align two runs' tensors by name and order before they compare them, so a\n"
	"divergence is named by step, rank and tensor also where one run logs ops the other\n"
	"does not. A FILE may be a folder: its files of the format (te-debug: one\n"
	"nvdlfw_inspect_globalrank-N.log per rank). A rank's tensors of a step come together,\n"
	"its steps in order; else bad input.\n"
	"\n"
	"An import that takes more than a second shows its progress on standard error: the\n"
	"megabytes read of the files' and the time left, on a terminal in one line redrawn,\n"
	"elsewhere (a CI log) in a line every 10 seconds.\n"
	"\n";

static const char lks_import_help_tail[] =
	"\n"
	"exit codes: 0 stored, 2 bad usage or a bad log, 3 the database failed\n"
	"\n"
	"usage: lockstep import --follow --format FORMAT FILE|- --case NAME --run NAME\n"
	"                       (--reference RUN_ID | --reference-file FORMAT:PATH |\n"
	"                        --golden FILE)\n"
	"                       [--rtol R] [--atol A] [--end-step N] [--idle S] [--ranks LIST]\n"
	"                       [--db FILE]\n"
	"\n"
	"Follows one log as it is written (FILE like tail -F, or - for standard input; a line\n"
	"format or jsonl): each step is stored in its own transaction when it is complete (a\n"
	"later step's line, every rank of the first complete step, or the end of input) and\n"
	"compared at once with the reference, a stored run, a file read in its format (an\n"
	"export of a run, a golden values file) or a golden file of class import (--golden:\n"
	"golden/import/CASE/RUN.tsv as 'lockstep golden update' writes it for an imported\n"
	"run). Every numerics metric the reference holds at a step and rank the log wrote\n"
	"must be there and equal bit for bit, or within\n"
	"|log - ref| <= atol + rtol * |ref| with --rtol/--atol; performance metrics are not\n"
	"compared. Exit 1 at the first difference (naming step, rank, metric and both values),\n"
	"0 after step N (--end-step) or at the end of input: standard input closed, or FILE not\n"
	"grown for S seconds (--idle, default 60). The end of input before step N given with\n"
	"--end-step is the job dead or stalled: exit 3, the run incomplete. A log none of whose\n"
	"steps and ranks the reference holds compared nothing: exit 1. Steps stored before a\n"
	"difference or a bad line stay stored (the run is then incomplete).\n"
	"\n"
	"FILE truncated (shorter than what was read, or its bytes there rewritten), or\n"
	"replaced at its path (rotated: moved away and made again), is followed, not an\n"
	"error: said on standard error, and read from its start as the next FILE of an\n"
	"import. A rotated log goes on with later steps. A step logged again is the job\n"
	"restarted there: the steps stored from it on are dropped, then stored and compared\n"
	"with the reference again as they come (never taken for steps compared before). A\n"
	"file rewritten with the very bytes read (the last 4 KiB of them) reads on as one.\n";

/* After the options (--format's last): the formats and the metrics of their tables. */
static void lks_import_tables(FILE *f)
{
	const lks_import_format *fmt;
	const lks_import_metric *m;

	for (int i = 0; (fmt = lks_import_format_at(i)); i++)
		fprintf(f, "    %-16s %s\n", fmt->name, fmt->what);
	fputs("\nmetrics (their kind: numerics enter verdicts, performance never a bitwise one;\n"
	      "a performance value 'N/A', or null in jsonl, is not measured: nothing is stored\n"
	      "for it at that step). A name not listed is stored with each byte that is not an\n"
	      "ASCII letter or digit made '_' ('mtp_1 loss' as mtp_1_loss; 63 bytes at most):\n"
	      "performance where one of its words, in any case, is one of\n ", f);
	for (int i = 0, col = 1; lks_import_perf_words[i]; i++) {
		int n = (int)strlen(lks_import_perf_words[i]) + 2;

		if (col + n > 80) {
			fputs("\n ", f);
			col = 1;
		}
		fprintf(f, " %s%s", lks_import_perf_words[i], lks_import_perf_words[i + 1] ? "," : "");
		col += n;
	}
	fputs("\nor it holds a rate '/s' (step_time_ms, tokens/s), numerics otherwise:\n", f);
	for (int i = 0; (m = lks_import_metric_at(i)); i++)
		fprintf(f, "  %-19s %-11s %s%s%s%s\n", m->name, lks_metric_kind_name(m->kind), m->what,
		        *m->unit ? " (" : "", m->unit, *m->unit ? ")" : "");
}

static int lks_count_run(void *arg, const lks_run_rec *run)
{
	(void)run;
	++*(long *)arg;
	return 0;
}

/* A database this import made, closed and removed when the import stored nothing (a bad
   log leaves no empty database behind); one that holds a run, whoever stored it, stays. */
static void lks_import_unmake(lks_store *store, const char *db)
{
	long runs = 0;

	if (lks_store_get_runs(store, lks_count_run, &runs) || runs) {
		lks_store_close(store);
		return;
	}
	lks_store_close(store);
	lks_store_unlink(db);
}

/* ---- progress on a long import ---- */

/* Shown once an import has taken after_s, every every_s: on a terminal 1 s and 0.25 s,
   one line redrawn; elsewhere 1 s and 10 s, a line each. LKS_PROGRESS_MS (tests) sets
   both. The bytes are the import readers' (lks_import_bytes_read), from where they were. */
struct lks_progress {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int done, tty, shown;
	uint64_t base, total;     /* total: the files' bytes, 0 unknown (standard input) */
	double after_s, every_s, t0;
};

static void lks_progress_show(struct lks_progress *p)
{
	uint64_t got = lks_import_bytes_read() - p->base;
	double t = lks_now() - p->t0;
	char left[48] = "";

	if (p->total && got > p->total)
		got = p->total;  /* a part read again counts again */
	if (p->total && got)
		snprintf(left, sizeof(left), ", about %.*f s left", t < 10 ? 1 : 0,
		         t * (double)(p->total - got) / (double)got);
	if (p->total)
		fprintf(stderr, "%slockstep: import: %.1f of %.1f MB read (%d%%), %.1f s%s%s",
		        p->tty ? "\r\033[K" : "", (double)got / 1e6, (double)p->total / 1e6,
		        (int)(100 * got / p->total), t, got == p->total ? ", storing" : left,
		        p->tty ? "" : "\n");
	else
		fprintf(stderr, "%slockstep: import: %.1f MB read, %.1f s%s", p->tty ? "\r\033[K" : "",
		        (double)got / 1e6, t, p->tty ? "" : "\n");
	fflush(stderr);
	p->shown = 1;
}

static void *lks_progress_main(void *arg)
{
	struct lks_progress *p = arg;
	double next = p->after_s;

	pthread_mutex_lock(&p->mu);
	while (!p->done) {
		double wait = next - (lks_now() - p->t0);
		struct timespec until;

		if (wait > 0) {
			clock_gettime(CLOCK_MONOTONIC, &until);
			until.tv_sec += (time_t)wait;
			until.tv_nsec += (long)((wait - (double)(time_t)wait) * 1e9);
			if (until.tv_nsec >= 1000000000L) {
				until.tv_sec++;
				until.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&p->cv, &p->mu, &until);
			continue;  /* woken early, or the time is up: looked at again */
		}
		lks_progress_show(p);
		next += p->every_s;
	}
	if (p->shown && p->tty)
		fputs("\r\033[K", stderr);  /* the summary takes the line's place */
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* Starts showing the progress of reading files[0..n); 0, or -1 where no thread could be
   started (the import goes on without). */
static int lks_progress_start(struct lks_progress *p, const char *const *files, int n)
{
	pthread_condattr_t ca;
	const char *ms = getenv("LKS_PROGRESS_MS");
	struct stat st;

	memset(p, 0, sizeof(*p));
	p->tty = isatty(2);
	p->after_s = 1;
	p->every_s = p->tty ? 0.25 : 10;
	if (ms && *ms)  /* at least a millisecond: 0 would print without end */
		p->after_s = p->every_s = atof(ms) > 1 ? atof(ms) / 1e3 : 1e-3;
	for (int i = 0; i < n; i++) {
		if (!strcmp(files[i], "-") || stat(files[i], &st) || !S_ISREG(st.st_mode)) {
			p->total = 0;  /* a pipe: how much is to come is not known */
			break;
		}
		p->total += (uint64_t)st.st_size;
	}
	p->base = lks_import_bytes_read();
	p->t0 = lks_now();
	if (pthread_condattr_init(&ca))
		return -1;
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (pthread_cond_init(&p->cv, &ca)) {
		pthread_condattr_destroy(&ca);
		return -1;
	}
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&p->mu, NULL);
	if (pthread_create(&p->thread, NULL, lks_progress_main, p)) {
		pthread_cond_destroy(&p->cv);
		pthread_mutex_destroy(&p->mu);
		return -1;
	}
	return 0;
}

static void lks_progress_stop(struct lks_progress *p)
{
	pthread_mutex_lock(&p->mu);
	p->done = 1;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->thread, NULL);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
}

int cmd_import(int argc, char **argv)
{
	const char *db = "lockstep.db", *fmt_name = NULL, *paths[256], *tag_map = NULL;
	lks_import_tag_map *map = NULL;
	/* -1: not given (a --follow option without --follow is refused) */
	lks_follow_args fa = { .idle_s = -1, .end_step = -1, .rtol = -1, .atol = -1 };
	int follow = 0, quiet = 0, progress;
	struct lks_progress pr;
	lks_import_opts o = { 0 };
	lks_import_result res;
	lks_store *store = NULL;
	int nfiles = 0, created, rc;
	char buf[2048];  /* the unread note: two sentences, two paths */
	const char *note;

	int reference = 0;
	lks_opt_list files = { 0 };
	const lks_option opts[] = {
		LKS_OPT_FLAG("--quiet", &quiet, "no progress"),
		LKS_OPT_STRING("--ranks", "LIST", &o.ranks,
		               "the ranks a log of some ranks only holds (torchrun\n"
		               "--local-ranks-filter; local rank 0 of each of 2 nodes of 8 GPUs:\n"
		               "--ranks 0,8; ranges too: 0-3,8): each must have steps, no other\n"
		               "may appear, and they keep their numbers. Default: every rank from\n"
		               "0 to the last has steps. A case's run takes it as import_ranks."),
		LKS_OPT_STRING("--tag-map", "MAP", &tag_map,
		               "the log's own labels as metrics: 'LABEL=NAME[,LABEL=NAME...]'\n"
		               "or @FILE (a LABEL=NAME a line, '#' comments). LABEL as the\n"
		               "log writes it (a TensorBoard tag 'my/train_loss', a line's\n"
		               "label), before the format's own; NAME a metric below (its kind),\n"
		               "or a name of letters, digits and '_', NAME:numerics or\n"
		               "NAME:performance (else by its words, as below); not step or\n"
		               "rank. A tag the reader passes over (' vs samples', Lightning's\n"
		               "hp_metric placeholder) is read when named. A label that names no\n"
		               "tag read is said. A case's run takes it as import_tag_map (FILE\n"
		               "relative to the case file)."),
		LKS_OPT_STRING("--format", "FORMAT", &fmt_name, "one of:"),
		/* said in the usage's text */
		LKS_OPT_STRING("--case", "NAME", &o.case_name, NULL),
		LKS_OPT_STRING("--run", "NAME", &o.run_name, NULL),
		LKS_OPT_PATH("--db", "FILE", &db, NULL),
		LKS_OPT_FLAG("--follow", &follow, NULL),
		LKS_OPT_INT("--reference", "RUN_ID", &reference, 1, 0x7fffffff, NULL),
		LKS_OPT_PATH("--reference-file", "FORMAT:PATH", &fa.reference_file, NULL),
		LKS_OPT_PATH("--golden", "FILE", &fa.golden_file, NULL),
		LKS_OPT_DOUBLE("--rtol", "R", &fa.rtol, 0, 1e300, NULL),
		LKS_OPT_DOUBLE("--atol", "A", &fa.atol, 0, 1e300, NULL),
		LKS_OPT_DOUBLE("--idle", "S", &fa.idle_s, 0, 1e9, NULL),
		LKS_OPT_INT("--end-step", "N", &fa.end_step, 0, 0x7fffffff, NULL),
		LKS_OPT_END(),
	};
	const lks_opt_cmd cmd = { .who = "import", .usage = lks_import_help,
	                          .tail = lks_import_help_tail, .width = 17,
	                          .after = lks_import_tables };

	rc = lks_opt_parse(&cmd, opts, argc, argv, &files);
	fa.reference_run = reference;
	nfiles = files.n;
	if (rc == 0 && nfiles > (int)(sizeof(paths) / sizeof(paths[0])))
		rc = lks_usage("import: more than %d files", (int)(sizeof(paths) / sizeof(paths[0])));
	for (int i = 0; rc == 0 && i < nfiles; i++)
		paths[i] = files.v[i];
	free(files.v);
	if (rc)
		return lks_opt_exit(rc);
	if (!fmt_name || !o.case_name || !o.run_name || !nfiles)
		return lks_usage("import: want --format, --case, --run and a FILE (see --help)");
	if (!(o.fmt = lks_import_format_find(fmt_name)))
		return lks_usage("import: %s", lks_errmsg());
	if (follow && (nfiles != 1 || o.fmt == lks_import_format_at(LKS_IMPORT_MEGATRON_GOLDEN)
	               || o.fmt->tensor_parse
	               || !!fa.reference_run + !!fa.reference_file + !!fa.golden_file != 1))
		return lks_usage("import: --follow wants one FILE of a log format (not megatron-golden, "
		                 "not a tensor trace) "
		                 "and one of --reference, --reference-file, --golden (see --help)");
	if (!follow && (fa.reference_run || fa.reference_file || fa.golden_file || fa.end_step >= 0
	                || fa.rtol >= 0 || fa.atol >= 0 || fa.idle_s >= 0))
		return lks_usage("import: --reference, --reference-file, --golden, --rtol, --atol, "
		                 "--idle and --end-step go with --follow");
	fa.rtol = fa.rtol < 0 ? 0 : fa.rtol;
	fa.atol = fa.atol < 0 ? 0 : fa.atol;
	fa.idle_s = fa.idle_s < 0 ? 60 : fa.idle_s;
	if (lks_name_check("case", o.case_name, strlen(o.case_name))
	    || lks_name_check("run", o.run_name, strlen(o.run_name))
	    || (o.ranks && lks_import_ranks_valid(o.ranks)))
		return lks_usage("import: %s", lks_errmsg());
	if (o.ranks && !*o.ranks)
		return lks_usage("import: --ranks wants the ranks the log holds (0,8 or 0-3,8)");
	if (tag_map && (rc = lks_import_tag_map_parse(tag_map, NULL, &map)))
		return rc == LKS_E_BAD_INPUT ? lks_usage("import: --tag-map: %s", lks_errmsg())
		                             : lks_exit_code(rc);
	o.tag_map = map;
	created = access(db, F_OK) != 0;
	if ((rc = lks_store_open(db, &store)) != 0) {
		fprintf(stderr, "lockstep: import: %s\n", lks_errmsg());
		lks_import_tag_map_free(map);
		return lks_exit_code(rc);
	}
	if (follow) {
		rc = lks_import_follow_cmd(store, &o, paths[0], &fa);
		lks_store_close(store);
		lks_import_tag_map_free(map);
		return rc;
	}
	progress = !quiet && !lks_progress_start(&pr, paths, nfiles);
	rc = lks_import_files(store, &o, paths, nfiles, &res);
	if (!rc && lks_import_tag_map_unused(map, buf, sizeof(buf)))
		fprintf(stderr, "lockstep: import: --tag-map: no tag of the files was %s (misspelt?)\n",
		        buf);
	lks_import_tag_map_free(map);
	if (progress)
		lks_progress_stop(&pr);
	if (rc && created)
		lks_import_unmake(store, db);
	else
		lks_store_close(store);
	if (rc) {
		fprintf(stderr, "lockstep: import: %s; nothing stored\n", lks_errmsg());
		return lks_exit_code(rc);
	}
	if (o.fmt->tensor_parse) {
		printf("imported %s/%s (run %lld, %s): steps up to %d, %d rank%s, %ld tensor records "
		       "(a tensor at a step and rank), %ld other lines ignored\n", o.case_name,
		       o.run_name, (long long)res.run_id, o.fmt->name, res.steps, res.world_size,
		       res.world_size == 1 ? "" : "s", res.counts.records, res.counts.ignored);
		return LKS_EXIT_OK;
	}
	printf("imported %s/%s (run %lld, %s): steps up to %d, %d rank%s, %ld metric lines, "
	       "%ld repeated, %ld other lines ignored, %ld rank restart%s\n", o.case_name,
	       o.run_name, (long long)res.run_id, o.fmt->name, res.steps, res.world_size,
	       res.world_size == 1 ? "" : "s", res.counts.records, res.counts.repeated,
	       res.counts.ignored, res.counts.restarts, res.counts.restarts == 1 ? "" : "s");
	if ((note = lks_import_unread_note(&res, buf, sizeof(buf))))
		fprintf(stderr, "lockstep: import: %s\n", note);
	if (res.counts.cut)
		fprintf(stderr, "lockstep: import: %ld event file%s end%s in a record cut short (a "
		        "writer killed while writing it), such as %s: the records before it are "
		        "read\n", res.counts.cut, res.counts.cut == 1 ? "" : "s",
		        res.counts.cut == 1 ? "s" : "", res.counts.cut_first);
	return LKS_EXIT_OK;
}
