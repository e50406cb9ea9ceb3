/*
 * cmd_matrix.c: 'lockstep matrix --combos F CASE...': every case under every combo, one
 * probe each (harness/probe/probe.h), and a table of the outcomes: rows combos in file order,
 * columns cases.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/case.h"
#include "harness/cli/cmd.h"
#include "harness/probe/probe.h"
#include "kernels/err.h"

static const char lks_matrix_usage[] =
	"usage: lockstep matrix --combos FILE [options] CASE|DIR...\n"
	"\n"
	"Probes every case under every combo of FILE, one probe per combo and case, and prints\n"
	"a table of outcomes: a row per combo (in file order), a column per case.\n"
	LKS_PROBE_HELP_PROBE
	"\n"
	"options:\n";

static const char lks_matrix_tail[] =
	"\n"
	"example:\n"
	"  lockstep matrix --combos ci/versions.ini cases/ --db matrix.db --timeout 900\n"
	"\n"
	"exit codes: 0 every probe good, 1 a probe bad (with --on-crash bad: or crashed or\n"
	"            timed out), 2 bad usage or input (combos file, a case under a combo,\n"
	"            database; nothing is probed), 3 none bad but some could not test,\n"
	"            crashed or timed out, or an infrastructure failure\n";

struct lks_matrix {
	lks_probe_session ps;
	char **paths;             /* the columns: one case file each */
	int npaths;
	lks_outcome *cell;        /* (combos, paths) */
	int count[LKS_OUTCOME_COUNT];
	int marks[3];             /* lks_mark of every probe, counted */
};

/* "dir/name.ini" -> "name" into buf. */
static void lks_case_title(const char *path, char *buf, size_t n)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	size_t len = strlen(base);

	if (len > 4 && !strcmp(base + len - 4, ".ini"))
		len -= 4;
	snprintf(buf, n, "%.*s", (int)len, base);
}

static int lks_matrix_probe_all(struct lks_matrix *m)
{
	lks_probe_session *ps = &m->ps;
	lks_probe_result res;

	for (int i = 0; i < ps->combos.n; i++)
		for (int j = 0; j < m->npaths; j++) {
			const char *one[1] = { m->paths[j] };

			if (lks_probe_session_run(ps, &ps->combos.combos[i], one, 1, &res, NULL))
				return -1;
			m->cell[i * m->npaths + j] = res.outcome;
			m->count[res.outcome]++;
			m->marks[lks_probe_mark(ps->cfg, res.outcome)]++;
		}
	return 0;
}

/* One row: the first cell w0 wide, the others as wide as their column's title (at least
   'timeout'); no blanks at the end. */
static void lks_matrix_row(int ncols, int w0, char (*titles)[LKS_NAME_MAX], const char *first,
                           const char *const *cells)
{
	printf("%-*s", ncols ? w0 : 0, first);
	for (int j = 0; j < ncols; j++) {
		int w = (int)strlen(titles[j]) > 7 ? (int)strlen(titles[j]) : 7;

		printf("  %-*s", j + 1 < ncols ? w : 0, cells[j]);
	}
	putchar('\n');
}

static int lks_matrix_print(const struct lks_matrix *m)
{
	const lks_combos *cs = &m->ps.combos;
	char (*titles)[LKS_NAME_MAX] = calloc((size_t)m->npaths + 1, sizeof(*titles));
	const char **cells = calloc((size_t)m->npaths + 1, sizeof(*cells));
	int w0 = 5;  /* "combo" */

	if (!titles || !cells) {
		free(titles);
		free(cells);
		return lks_err("out of memory");
	}
	for (int i = 0; i < cs->n; i++)
		if ((int)strlen(cs->combos[i].name) > w0)
			w0 = (int)strlen(cs->combos[i].name);
	for (int j = 0; j < m->npaths; j++) {
		lks_case_title(m->paths[j], titles[j], sizeof(titles[j]));
		cells[j] = titles[j];
	}
	putchar('\n');
	lks_matrix_row(m->npaths, w0, titles, "combo", cells);
	for (int i = 0; i < cs->n; i++) {
		for (int j = 0; j < m->npaths; j++)
			cells[j] = lks_outcome_name(m->cell[i * m->npaths + j]);
		lks_matrix_row(m->npaths, w0, titles, cs->combos[i].name, cells);
	}
	free(titles);
	free(cells);
	return 0;
}

/* "12 probes: 10 good, 1 bad, ..." into buf, the outcomes that occurred. */
static void lks_matrix_summary(const struct lks_matrix *m, char *buf, size_t n)
{
	size_t len = (size_t)snprintf(buf, n, "%d probes:", m->ps.nprobes);
	const char *sep = " ";

	for (int o = 0; o < LKS_OUTCOME_COUNT && len < n; o++)
		if (m->count[o]) {
			len += (size_t)snprintf(buf + len, n - len, "%s%d %s", sep, m->count[o],
			                        lks_outcome_name((lks_outcome)o));
			sep = ", ";
		}
}

/* With --check NAME or --run NAME, the cases that have each name given: a case without
   one is left out, as 'lockstep run --check' leaves it (probed alone, it could not test: a
   column of skip, and exit 3). The session's validation said some case has each name. */
static int lks_matrix_keep_named(struct lks_matrix *m)
{
	const lks_probe_cfg *cfg = m->ps.cfg;
	const char **runs = calloc((size_t)cfg->npass + 1, sizeof(*runs));
	int keep = 0, nruns = 0;

	if (!runs)
		return lks_err("out of memory");
	for (int i = 0; i + 1 < cfg->npass; i += 2)
		if (!strcmp(cfg->pass[i], "--run"))
			runs[nruns++] = cfg->pass[i + 1];
	for (int j = 0; j < m->npaths; j++) {
		lks_case c;
		int has;

		if (lks_case_load(m->paths[j], NULL, 0, &c)) {
			free(runs);
			return LKS_E_BAD_INPUT;
		}
		has = !lks_cases_unknown(&c, 1, cfg->checks, cfg->nchecks, 1)
		      && !lks_cases_unknown(&c, 1, runs, nruns, 0);
		lks_case_release(&c);
		if (has)
			m->paths[keep++] = m->paths[j];
		else
			free(m->paths[j]);
	}
	free(runs);
	m->npaths = keep;
	if (!keep)
		return lks_err("no case has every --check and --run name given"), LKS_E_BAD_INPUT;
	return 0;
}

static int lks_matrix_setup(struct lks_matrix *m)
{
	const lks_probe_cfg *cfg = m->ps.cfg;
	int rc;

	for (int i = 0; i < m->ps.combos.n; i++)
		if ((rc = lks_probe_session_validate(&m->ps, &m->ps.combos.combos[i])))
			return rc;
	if (lks_case_paths(cfg->cases, cfg->ncases, &m->paths, &m->npaths))
		return LKS_E_BAD_INPUT;
	if ((rc = lks_matrix_keep_named(m)) != 0)
		return rc;
	if (!(m->cell = calloc((size_t)(m->ps.combos.n * m->npaths), sizeof(*m->cell))))
		return lks_err("out of memory");
	return 0;
}

int cmd_matrix(int argc, char **argv)
{
	struct lks_matrix m = { 0 };
	lks_probe_cfg cfg;
	char summary[256] = "";
	int rc;

	if (lks_probe_start("matrix", argc, argv, lks_matrix_usage, lks_matrix_tail, NULL, &cfg, &m.ps,
	                    &rc))
		goto out;
	if ((rc = lks_matrix_setup(&m)) || (rc = lks_matrix_probe_all(&m))) {
		rc = lks_probe_fail(rc);
		goto out;
	}
	if (lks_matrix_print(&m)) {
		rc = lks_probe_fail(-1);
		goto out;
	}
	lks_matrix_summary(&m, summary, sizeof(summary));
	printf("%s\n", summary);
	rc = m.marks[LKS_MARK_BAD] ? LKS_EXIT_FAIL
	   : m.marks[LKS_MARK_SKIP] ? LKS_EXIT_INFRA : LKS_EXIT_OK;
out:
	lks_probe_session_close(&m.ps, summary[0] ? summary : NULL);
	lks_case_paths_free(m.paths, m.npaths);
	free(m.cell);
	lks_probe_cfg_release(&cfg);
	return rc;
}
