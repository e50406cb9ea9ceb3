/*
 * tolerances.c: what the checks table does not keep of a check, found again in the case
 * text stored with its runs: the rtol and metric of a close check (the band of the relative
 * loss difference plot) and where a check that proves a planted fault expects it. The case
 * text is parsed as it was run, with the --set overrides stored in the run's options.
 * A file of its own because it is a stopgap: once the checks table keeps each check's
 * parameters (issue 12), they are read back instead and this parse goes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/engine/case.h"
#include "harness/report/report_impl.h"

/* The --set overrides a run was made with, from its stored options (the runner appends
   " set: " and the overrides joined by blanks). A value may hold blanks ("inject=bitflip
   step=3 ..."), so the text is cut only at a blank followed by a section's name ("run.",
   "check.", ...); a value with such a word in it cannot be told apart. Cuts *text (owned by
   the caller) into sets[0..*n), at most max (later ones are left out). */
static void lks_stored_sets(char *text, const char **sets, int max, int *n)
{
	static const char *const sections[] = { "case.", "model.", "optim.", "run.", "check." };
	char *p = strstr(text, " set: ");

	*n = 0;
	if (!p)
		return;
	for (p += 6; *p && *n < max;) {
		char *cut = p;

		sets[(*n)++] = p;
		for (cut = strchr(p, ' '); cut; cut = strchr(cut + 1, ' ')) {
			size_t i = 0;

			while (i < sizeof(sections) / sizeof(sections[0])
			       && strncmp(cut + 1, sections[i], strlen(sections[i])))
				i++;
			if (i < sizeof(sections) / sizeof(sections[0]))
				break;
		}
		if (!cut)
			break;
		*cut = 0;
		p = cut + 1;
	}
}

/* The rtol and metric of the case's close checks, and which checks prove a planted fault:
   the checks table keeps verdicts; the tolerances and expectations are in the case text
   stored with every run, with the --set overrides it was run with. A text that no longer
   parses (an older case format) leaves them unknown: the band is then not drawn. */
void lks_check_tolerances(struct lks_report *r, const struct lks_rrun *run)
{
	char safe[128], path[LKS_REPORT_PATH], *options;
	const char *sets[64];
	int nsets = 0;
	lks_case c;
	FILE *f;

	if (!run->case_text)
		return;
	lks_safe_name(safe, sizeof(safe), run->case_name);
	snprintf(path, sizeof(path), "%s/%s.ini", r->tmp, safe);
	if (!(f = fopen(path, "w")))
		return;
	fputs(run->case_text, f);
	fclose(f);
	options = lks_dup(run->options);
	if (options)
		lks_stored_sets(options, sets, 64, &nsets);
	if (lks_case_load(path, sets, nsets, &c) == 0) {
		for (int i = 0; i < r->nchecks; i++) {
			struct lks_rcheck *k = &r->checks[i];

			if (strcmp(k->rec.case_name, run->case_name) != 0)
				continue;
			for (int j = 0; j < c.nchecks; j++) {
				const lks_check_cfg *cc = &c.checks[j];

				if (strcmp(cc->name, k->rec.check_name) != 0)
					continue;
				if (cc->kind == LKS_CHECK_CLOSE) {
					k->rtol = cc->rtol;
					snprintf(k->metric, sizeof(k->metric), "%s", cc->metric);
				}
				if (cc->expect_fail) {
					k->expect_fail = 1;
					lks_place(k->planted, sizeof(k->planted), cc->exp_step, cc->exp_rank,
					          cc->exp_tensor[0] ? cc->exp_tensor : NULL);
				}
			}
		}
		lks_case_release(&c);
	}
	free(options);
	unlink(path);
}
