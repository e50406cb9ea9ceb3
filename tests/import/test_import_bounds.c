/*
 * test_import_bounds.c: what an imported log may name, alike in every format that reads
 * it (harness/store/import*.c): a rank 0 to LKS_IMPORT_MAX_RANK, wherever a line names one
 * (jsonl's "rank", torchrun's and srun's prefixes, a prefix after a log collector's); a
 * step 0 to LKS_IMPORT_MAX_STEP; a number a double holds. Past a bound is bad input at
 * file:line, saying the bound (a rank past it was stored as rank 0, a megatron iteration
 * past it ignored, and 1e-999 stored as 0 while 1e999 was refused). torchtitan lines are
 * read both ways (titan_twice.h): the two readings must fail alike.
 */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "titan_twice.h"
#include "harness/import/import.h"
#include "kernels/err.h"

/* What a parse handed on: its records, the last one's step, rank and loss. */
struct first {
	int n, step, rank;
	double loss;
};

static int first_rec(void *arg, const lks_import_rec *rec)
{
	struct first *f = arg;

	f->n++;
	f->step = rec->step;
	f->rank = rec->rank;
	f->loss = NAN;
	for (int i = 0; i < rec->n; i++)
		if (!strcmp(rec->m[i].name, "loss"))
			f->loss = rec->m[i].value;
	return 0;
}

/* text parsed as fmt from a file (as lockstep import reads one); rc, and *f. */
static int parse(const char *fmt, const char *text, struct first *f)
{
	char path[] = "/tmp/lks-test-bounds-XXXXXX";
	const lks_import_format *format = lks_import_format_find(fmt);
	lks_import_counts c = { 0 };
	int fd = mkstemp(path), rc;
	FILE *in;

	cr_assert(format, "%s", lks_errmsg());
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	cr_assert_not_null(in = fopen(path, "r"));
	memset(f, 0, sizeof(*f));
	rc = lks_import_format_parse(format, "t.log", in, first_rec, f, &c);
	fclose(in);
	unlink(path);
	return rc;
}

/* text refused as fmt, its message holding each of want (NULL ended). */
static void refused(const char *fmt, const char *text, const char *const *want)
{
	struct first f;
	int rc = parse(fmt, text, &f);

	cr_assert_eq(rc, LKS_E_BAD_INPUT, "%s '%s': rc %d (%s)", fmt, text, rc,
	             rc ? lks_errmsg() : "");
	for (; *want; want++)
		cr_assert(strstr(lks_errmsg(), *want), "%s '%s': '%s' lacks '%s'", fmt, text,
		          lks_errmsg(), *want);
}

/* torchtitan's text read both ways: the same records, counts and message. */
static void same_both_ways(const char *text)
{
	char why[2048];

	cr_assert_not(lks_titan_twice(text, strlen(text), why, sizeof(why)), "'%s': %s", text, why);
}

#define TITAN "[titan] 2025-01-01 00:00:00,000 - root - INFO - "
#define COLOUR "\x1b[32m"

Test(import_bounds, a_rank_over_the_bound_is_refused_wherever_a_line_names_it)
{
	/* each place a torchtitan line names its rank, %s the rank's digits */
	static const char *const forms[] = {
		"[rank%s]:" TITAN "step:  2  loss:  2.5000  grad_norm:  1.0000\n",
		"[default%s]:" TITAN "step:  2  loss:  2.5000\n",
		"[rank%s]:" TITAN COLOUR "step:  2  " COLOUR "loss: " COLOUR " 2.5000\n",
		"%s: " TITAN "step: 2  loss: 2.5\n",                       /* srun --label */
		"  %s: [rank%s]:" TITAN "step: 2  loss: 2.5\n",            /* both: torchrun's names it */
		"[pod/w-0/trainer] [rank%s]:" TITAN "step: 2  loss: 2.5\n", /* after a collector's */
		"2025-01-01T00:00:00Z stdout F [rank%s]:" TITAN COLOUR "step: 2  loss: 2.5\n",
	};
	static const char *const ranks[] = { "65535", "65536", "70000", "99999999999999999999" };

	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
		for (size_t k = 0; k < sizeof(ranks) / sizeof(ranks[0]); k++) {
			char text[1024], line[512];
			struct first f;
			int rc;

			/* a good line first: the bad one is line 2 */
			snprintf(line, sizeof(line), forms[i], ranks[k], i == 4 ? "7" : ranks[k]);
			snprintf(text, sizeof(text), "[rank0]:" TITAN "step: 1  loss: 2.5\n%s", line);
			same_both_ways(text);
			rc = parse("torchtitan", text, &f);
			if (k == 0 || i == 4) {  /* the bound itself; a task whose rank torchrun names */
				cr_assert_eq(rc, 0, "'%s': %s", line, lks_errmsg());
				cr_assert_eq(f.n, 2);
				continue;
			}
			refused("torchtitan", text, (const char *const[]){ "'t.log':2: bad rank",
			                                                   "0 to 65535", NULL });
		}
	/* jsonl: its "rank", and a prefix where it has none */
	refused("jsonl", "{\"step\": 1, \"rank\": 65536, \"loss\": 2.5}\n",
	        (const char *const[]){ "'t.log':1:", "0 to 65535", NULL });
	refused("jsonl", "[rank65536]:{\"step\": 1, \"loss\": 2.5}\n",
	        (const char *const[]){ "'t.log':1: bad rank", "0 to 65535", NULL });
	/* megatron: the job's line, whoever printed it; a rank that is not the line's own */
	{
		struct first f;

		cr_assert_eq(parse("megatron-log", "[rank70000]: [2025-01-01 00:00:00] iteration 1/ "
		                   "10 | lm loss: 2.500000E+00 |\n", &f), 0, "%s", lks_errmsg());
		cr_assert_eq(f.rank, 0);
		cr_assert_eq(f.loss, 2.5);
	}
}

Test(import_bounds, a_step_over_the_bound_is_refused_saying_the_bound)
{
	static const char *const bound[] = { "0 to 2147483646", NULL };
	struct first f;

	/* the bound itself is a step */
	cr_assert_eq(parse("torchtitan", "step: 2147483646  loss: 2.5\n", &f), 0, "%s",
	             lks_errmsg());
	cr_assert_eq(f.step, 2147483646);
	cr_assert_eq(parse("megatron-log", "iteration 2147483646/ 2147483646 | lm loss: 2.5 |\n",
	                   &f), 0, "%s", lks_errmsg());
	cr_assert_eq(f.step, 2147483646);
	cr_assert_eq(parse("jsonl", "{\"step\": 2147483646, \"loss\": 2.5}\n", &f), 0, "%s",
	             lks_errmsg());
	cr_assert_eq(f.step, 2147483646);

	static const char *const titan[] = {
		"step: 1  loss: 2.5\nstep: 2147483647  loss: 2.5\n",
		"step: 1  loss: 2.5\n[rank0]:" TITAN COLOUR "step: 99999999999  loss: 2.5\n",
	};
	for (size_t i = 0; i < sizeof(titan) / sizeof(titan[0]); i++) {
		same_both_ways(titan[i]);
		refused("torchtitan", titan[i], (const char *const[]){ "'t.log':2: bad step '",
		                                                       "0 to 2147483646", NULL });
	}
	/* a megatron line past the bound was ignored, as if it were no metric line */
	refused("megatron-log", "iteration 1/ 10 | lm loss: 2.5 |\n iteration 2147483647/ "
	        "2147483647 | lm loss: 2.5 |\n", (const char *const[]){
	        "'t.log':2: bad iteration '2147483647'", "0 to 2147483646", NULL });
	refused("jsonl", "{\"step\": 1, \"loss\": 2.5}\n{\"step\": 2147483647, \"loss\": 2.5}\n",
	        (const char *const[]){ "'t.log':2: want \"step\"", "0 to 2147483646", NULL });
	refused("megatron-golden", "{\"lm loss\": {\"start_step\": 1, \"end_step\": 2147483647, "
	        "\"step_interval\": 1, \"values\": [2.5]}}", (const char *const[]){
	        "\"lm loss\": want start_step", "2147483646", NULL });
	refused("megatron-golden", "{\"lm loss\": {\"values\": {\"2147483647\": 2.5}}}", bound);
	/* Megatron-Bridge's steps are 0-based: "2147483645" is iteration 2147483646 */
	cr_assert_eq(parse("megatron-golden", "{\"2147483645\": {\"lm loss\": 2.5}}", &f), 0, "%s",
	             lks_errmsg());
	cr_assert_eq(f.step, 2147483646);
	refused("megatron-golden", "{\"0\": {\"lm loss\": 2.5}, \"2147483646\": {\"lm loss\": 2.5}}",
	        (const char *const[]){ "\"0\" to \"2147483645\"", NULL });
}

/* A loss written as %s, on line 2 of each format (megatron-golden's "values" on line 2 of
   its document). */
static const char *const with_loss[][2] = {
	{ "torchtitan", "step: 1  loss: 2.5\nstep: 2  loss: %s  grad_norm: 1.0\n" },
	{ "torchtitan", "step: 1  loss: 2.5\n[rank0]:" TITAN COLOUR "step: 2  loss: " COLOUR
	                "%s  memory: 1.0GiB(1.0%%)\n" },
	{ "megatron-log", "iteration 1/ 10 | lm loss: 2.5 |\niteration 2/ 10 | lm loss: %s |\n" },
	{ "jsonl", "{\"step\": 1, \"loss\": 2.5}\n{\"step\": 2, \"loss\": %s, \"lr\": 0.0}\n" },
	{ "megatron-golden", "{\"lm loss\": {\"start_step\": 1, \"end_step\": 2, \"step_interval\":"
	                     " 1,\n\"values\": [%s]}}" },
	{ "megatron-golden", "{\"1\": {\"lm loss\": 2.5},\n\"10\": {\"lm loss\": %s}}" },
};

Test(import_bounds, a_number_no_double_holds_is_refused_either_way_in_every_format)
{
	static const struct { const char *v, *why; } beyond[] = {
		{ "1e999", "over the largest double" }, { "-1.5E+400", "over the largest double" },
		{ "1e-999", "nearer 0 than the least double" },
		{ "-2.5e-400", "nearer 0 than the least double" },
		{ "2e-324", "nearer 0 than the least double" },  /* under half the least subnormal */
	};

	for (size_t i = 0; i < sizeof(with_loss) / sizeof(with_loss[0]); i++)
		for (size_t k = 0; k < sizeof(beyond) / sizeof(beyond[0]); k++) {
			char text[512], quoted[64];

			snprintf(text, sizeof(text), with_loss[i][1], beyond[k].v);
			snprintf(quoted, sizeof(quoted), "bad value '%s", beyond[k].v);
			if (!strcmp(with_loss[i][0], "torchtitan"))
				same_both_ways(text);
			refused(with_loss[i][0], text, (const char *const[]){ "'t.log':2: ", quoted,
			                                                      beyond[k].why, NULL });
		}
	/* a memory value beyond, too, and a throughput with its thousands separators */
	refused("torchtitan", "step: 1  loss: 2.5  memory: 1e999GiB(2.0%)\n",
	        (const char *const[]){ "'t.log':1: bad value '1e999GiB(2.0%)' of 'memory': over",
	                               NULL });
	refused("torchtitan", "step: 1  loss: 2.5  tps: 1,000e999\n",
	        (const char *const[]){ "'t.log':1: bad value '1,000e999' of 'tps': over", NULL });
}

/* What a double is, as a log writes it, reads as strtod reads it in every format: a
   subnormal (the shortest form of the least, and one of 17 digits), a 0 with any exponent
   (no underflow: it is 0), a number longer than the fast path and the old 127-byte bound. */
Test(import_bounds, subnormals_zeros_and_long_numbers_read_as_strtod_reads_them)
{
	char lng[300];

	snprintf(lng, sizeof(lng), "0.%0200d25", 0);  /* 2.5e-202, 203 bytes */
	const char *const vals[] = { "5e-324", "4.9406564584124654e-324", "-1e-310",
	                             "2.2250738585072014e-308", "0e-999", "-0.0e-400", "1e308",
	                             lng };

	for (size_t i = 0; i < sizeof(with_loss) / sizeof(with_loss[0]); i++)
		for (size_t k = 0; k < sizeof(vals) / sizeof(vals[0]); k++) {
			char text[1024];
			struct first f;
			double want = strtod(vals[k], NULL);
			int rc;

			snprintf(text, sizeof(text), with_loss[i][1], vals[k]);
			if (!strcmp(with_loss[i][0], "torchtitan"))
				same_both_ways(text);
			rc = parse(with_loss[i][0], text, &f);
			cr_assert_eq(rc, 0, "%s '%s': %s", with_loss[i][0], vals[k], lks_errmsg());
			cr_assert(!memcmp(&f.loss, &want, sizeof(want)), "%s '%s': %a, strtod %a",
			          with_loss[i][0], vals[k], f.loss, want);
		}
}
