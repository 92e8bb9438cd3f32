/*
 * cmd_score.c -- `pkb score RUN...`: the metrics of one or more sweeps
 * side by side (one column per run), each metric's definition under the
 * table, or the same numbers as JSON (summary.c makes both), or per
 * (run, problem) as CSV for spreadsheets and plotting tools.
 */
#include "cmds.h"
#include "exitcode.h"
#include "summary.h"
#include "opts.h"
#include "problem.h"   /* defines: problem_find */
#include "results.h"   /* defines: results_files, results_read */
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char head[] =
"usage: pkb score RUN... [options]\n"
"\n"
"Score the records of pkb sweep (RUN: a run directory with results.jsonl, or\n"
"the file); several runs are shown side by side.\n"
"\n";
static const char tail[] =
"\n"
"exit status: 0 scored, 1 a RUN that cannot be read or holds no pkb sweep\n"
"record (an empty run, a file of another format), 2 usage\n";

const struct opt score_opts_pk[] = {
	{ 'p', "p", "LIST", "fast_p thresholds besides 0,0.5,1,1.5,2 (e.g. 3,4)" },
	{ 'k', "k", "K", "pass@k for k = 1..K (default 5, at most 8)" },
	OPTS_END,
};
static const struct opt score_own[] = {
	{ 'j', "json", "FILE", "write the scores as JSON (- for stdout)" },
	{ 'c', "csv", "FILE", "write one row per run and problem as CSV (- for\n"
			      "stdout; docs/SWEEP.md names the columns)" },
	OPTS_END,
};
static const struct opt *const tables[] = { score_opts_pk, score_own, NULL };

int score_opt(int c, const char *arg, const char **plist, int *nk)
{
	if (c == 'p') {
		*plist = arg;
		return 1;
	}
	if (c != 'k')
		return 0;
	long long v;
	if (opt_int("k", arg, 1, SUM_MAX_K, &v) < 0)
		return -1;
	*nk = (int)v;
	return 1;
}

/* the default thresholds and any extra, sorted, without repeats */
int score_parse_p(const char *list, double *p, int *np)
{
	static const double def[] = { 0, 0.5, 1, 1.5, 2 };
	*np = 0;
	for (size_t i = 0; i < ARRAY_SIZE(def); i++)
		p[(*np)++] = def[i];
	for (const char *s = list; s && *s;) {
		char *end;
		double v = strtod(s, &end);
		if (end == s || v < 0 || !isfinite(v))
			return error("--p takes numbers >= 0 separated by commas, not '%s'", list);
		int dup = 0;
		for (int i = 0; i < *np; i++)
			dup |= p[i] == v;
		if (!dup) {
			if (*np == SUM_MAX_P)
				return error("at most %d fast_p thresholds", SUM_MAX_P);
			p[(*np)++] = v;
		}
		s = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return error("--p takes numbers separated by commas, not '%s'", list);
	}
	for (int i = 1; i < *np; i++)   /* insertion sort: a handful */
		for (int j = i; j > 0 && p[j] < p[j - 1]; j--) {
			double t = p[j];
			p[j] = p[j - 1];
			p[j - 1] = t;
		}
	return 0;
}

static void cell(double x, int pct)
{
	char b[32];
	printf(" %12s", sum_fmt(x, pct, b, sizeof(b)));
}

/* Every RUN must hold pkb sweep records: a directory with none of its
 * files (never swept), or a file with no record or a line of another
 * format before its end, is refused here rather than scored as zero
 * candidates. -1 after error(). */
static int check_runs(char **paths, int n)
{
	for (int i = 0; i < n; i++) {
		struct stat st;
		if (stat(paths[i], &st) < 0)
			return error("cannot read '%s': %s", paths[i], strerror(errno));
		int nf = 0, exist = 0;
		char **files = results_files(paths[i], &nf);
		for (int f = 0; f < nf; f++)
			exist += access(files[f], F_OK) == 0;
		if (!exist) {
			results_files_free(files);
			error("'%s' holds no results.jsonl (nor " RESULTS_SHARD_DIR "/*.jsonl): nothing "
			      "swept there", paths[i]);
			hint("pkb sweep %s records its evaluations", paths[i]);
			return -1;
		}
		int recs_n = 0, rc = 0;
		for (int f = 0; f < nf && !rc; f++) {
			json_t *recs = json_array();
			int bad = 0;
			if (results_read(files[f], recs, NULL, NULL, &bad) < 0)
				rc = error("cannot read '%s': %s", files[f], strerror(errno));
			else if (bad)
				rc = error("'%s': line %d is not a pkb sweep record", files[f], bad);
			recs_n += (int)json_array_size(recs);
			json_decref(recs);
		}
		results_files_free(files);
		if (rc)
			return -1;
		if (!recs_n)
			return error("'%s' holds no pkb sweep record (a JSON line with a \"key\")",
				     paths[i]);
	}
	return 0;
}

/* The definitions printed under the table and into --json: summary.c's,
 * whose geomean entry is score.h's words (the row "geomean" is
 * KernelBench's unclamped one, "geomean clamped" the other), so the page
 * and the table say the same. */
static char *definitions(void)
{
	return xstrdup(sum_definitions);
}

/* a CSV field (RFC 4180): quoted when it holds a comma, quote or newline */
static void csv_str(FILE *f, const char *v)
{
	if (!strpbrk(v, ",\"\n\r")) {
		fputs(v, f);
		return;
	}
	fputc('"', f);
	for (; *v; v++) {
		if (*v == '"')
			fputc('"', f);
		fputc(*v, f);
	}
	fputc('"', f);
}

static void csv_num(FILE *f, double x)
{
	fputc(',', f);
	if (isfinite(x))
		fprintf(f, "%.10g", x);
}

/* One row per (run, problem): the per-problem numbers whose means over the
 * problems are score's (pass@k over the problems with n >= k, fast_p over
 * all), fractions rather than percents; an empty cell where the table
 * prints "-". */
static int write_csv(const struct sum_set *s, const char *path)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;
	if (!f)
		return error("cannot write '%s': %s", path, strerror(errno));
	fputs("run,problem,name,category,candidates,correct", f);
	for (int k = 1; k <= s->nk; k++)
		fprintf(f, ",pass@%d", k);
	for (int q = 0; q < s->np; q++)
		fprintf(f, ",fast_%g", s->p[q]);
	fputs(",geomean,geomean_clamped,geomean_n,best_speedup,mean_sol,mean_roofline_fraction", f);
	for (int o = 0; o < OC_COUNT; o++)
		fprintf(f, ",%s", sum_outcome_names[o]);
	fputs(",correct_announced,hidden_evaluated,hidden_failed,below_bound\n", f);
	for (int i = 0; i < s->nr; i++) {
		const struct sum_run *r = &s->r[i];
		for (int j = 0; j < r->np; j++) {
			const struct sum_problem *p = &r->p[j];
			char id[16];
			snprintf(id, sizeof id, "%d", p->id);
			const struct pkb_problem *pp = problem_find(id);
			struct score_item *it = xcalloc(p->n + 1, sizeof(*it));
			int oc[OC_COUNT] = { 0 }, sol_n = 0, frac_n = 0, geo_n = 0;
			int hid_n = 0, hid_failed = 0, below = 0;
			double sol = 0, frac = 0;
			for (int c = 0; c < p->n; c++) {
				const struct sum_cand *sc = &p->c[c];
				it[c] = (struct score_item){ sc->outcome == OC_PASS, sc->speedup };
				oc[sc->outcome]++;
				hid_n += sc->hidden >= 0;
				hid_failed += sc->announced == OC_PASS && sc->outcome != OC_PASS;
				below += sc->below_bound;
				if (it[c].correct && isfinite(sc->sol)) {
					sol += sc->sol;
					sol_n++;
				}
				if (it[c].correct && isfinite(sc->fraction)) {
					frac += sc->fraction;
					frac_n++;
				}
			}
			csv_str(f, r->name);
			fprintf(f, ",%03d,", p->id);
			csv_str(f, pp ? pp->name : "");
			fputc(',', f);
			csv_str(f, p->category ? p->category : "");
			fprintf(f, ",%d,%d", p->n, p->correct);
			for (int k = 1; k <= s->nk; k++)
				csv_num(f, score_pass_at_k(p->n, p->correct, k));
			for (int q = 0; q < s->np; q++)
				csv_num(f, score_fast_p(it, p->n, s->p[q]));
			csv_num(f, score_geomean(it, p->n, 0, &geo_n));
			csv_num(f, score_geomean(it, p->n, 1, NULL));
			fprintf(f, ",%d", geo_n);
			int b = p->best;
			csv_num(f, b >= 0 && p->c[b].outcome == OC_PASS ? p->c[b].speedup : NAN);
			csv_num(f, sol_n ? sol / sol_n : NAN);
			csv_num(f, frac_n ? frac / frac_n : NAN);
			for (int o = 0; o < OC_COUNT; o++)
				fprintf(f, ",%d", oc[o]);
			fprintf(f, ",%d,%d,%d,%d\n", p->correct_announced, hid_n, hid_failed, below);
			free(it);
		}
	}
	int bad = ferror(f);
	if (f != stdout)
		bad |= fclose(f) != 0;
	else
		bad |= fflush(f) != 0;
	return bad ? error("cannot write '%s'", path) : 0;
}

/* --json and --csv: the same numbers for programs; -1 when a file failed */
static int write_machine(const struct sum_set *s, const char *json_path, const char *csv_path,
			 const char *defs)
{
	int rc = 0;
	if (json_path) {
		json_t *j = sum_json(s);
		json_object_set_new(j, "definitions", json_string(defs));
		if (!strcmp(json_path, "-")) {
			json_dumpf(j, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
			putchar('\n');
		} else {
			rc = json_write_file(json_path, j);
		}
		json_decref(j);
	}
	if (csv_path && write_csv(s, csv_path) < 0)
		rc = -1;
	return rc;
}

/* the table's metric rows, one column per run: counts, pass@k, fast_p,
 * the geomeans, S and the roofline fraction */
static void print_metrics(const struct sum_set *s, const double *p, int np, int nk, int hidden)
{
	printf("records kept: %s\n\n%-16s", s->fingerprint, "");
	for (int i = 0; i < s->nr; i++)
		printf(" %12.12s", s->r[i].name);
	printf("\n%-16s", "candidates");
	for (int i = 0; i < s->nr; i++)
		printf(" %12d", s->r[i].candidates);
	printf("\n%-16s", "problems");
	for (int i = 0; i < s->nr; i++)
		printf(" %12d", s->r[i].np);
	for (int k = 1; k <= nk; k++) {
		printf("\npass@%-11d", k);
		for (int i = 0; i < s->nr; i++)
			cell(s->r[i].pass_at[k - 1], 1);
	}
	for (int k = 1; hidden && k <= nk; k++) {
		printf("\npass@%d announced", k);
		for (int i = 0; i < s->nr; i++)
			cell(s->r[i].pass_announced[k - 1], 1);
	}
	for (int q = 0; q < np; q++) {
		char name[32];
		snprintf(name, sizeof(name), "fast_%g", p[q]);
		printf("\n%-16s", name);
		for (int i = 0; i < s->nr; i++)
			cell(s->r[i].fast_p[q], 1);
	}
	printf("\n%-16s", "geomean");
	for (int i = 0; i < s->nr; i++)
		cell(s->r[i].geo_raw, 0);
	printf("\n%-16s", "geomean clamped");
	for (int i = 0; i < s->nr; i++)
		cell(s->r[i].geo_clamped, 0);
	printf("\n%-16s", "S (mean)");
	for (int i = 0; i < s->nr; i++)
		cell(s->r[i].mean_sol, 0);
	printf("\n%-16s", "roofline frac");
	for (int i = 0; i < s->nr; i++)
		cell(s->r[i].mean_fraction, 1);
}

/* every candidate by outcome, the hidden-shape and below-bound rows where
 * some run has them, then per run its categories and what was left out */
static void print_failures(const struct sum_set *s, int hidden, int below)
{
	printf("\n\nfailure modes (candidates)\n");
	for (int o = 0; o < OC_COUNT; o++) {
		printf("%-16s", sum_outcome_names[o]);
		for (int i = 0; i < s->nr; i++)
			printf(" %12d", s->r[i].oc[o]);
		putchar('\n');
	}
	/* of the above: correct at the announced shape, not at the hidden one;
	 * recorded as pass with a time under the bound (in flagged) */
	if (hidden) {
		printf("%-16s", "hidden failed");
		for (int i = 0; i < s->nr; i++)
			printf(" %8d/%-3d", s->r[i].hidden_failed, s->r[i].hidden_n);
		putchar('\n');
	}
	if (below) {
		printf("%-16s", "below bound");
		for (int i = 0; i < s->nr; i++)
			printf(" %12d", s->r[i].below_bound);
		putchar('\n');
	}
	for (int i = 0; i < s->nr; i++) {
		const char *cat;
		json_t *a;
		printf("\n%s by category:", s->r[i].name);
		json_object_foreach(s->r[i].oc_by_cat, cat, a) {
			printf("\n  %-28s fast_1", cat);
			cell(json_real_value(json_object_get(s->r[i].fast_by_cat, cat)), 1);
			for (int o = 0; o < OC_COUNT; o++)
				if (json_integer_value(json_array_get(a, o)))
					printf("  %s %lld", sum_outcome_names[o],
					       (long long)json_integer_value(json_array_get(a, o)));
		}
		printf("\n  left out: %d of %d records", s->r[i].left_out, s->r[i].records);
		json_t *v;
		json_object_foreach(s->r[i].left_reasons, cat, v)
			printf("; %lld %s", (long long)json_integer_value(v), cat);
		putchar('\n');
	}
}

int cmd_score(int argc, char **argv)
{
	const char *plist = NULL, *json_path = NULL, *csv_path = NULL;
	int nk = 5, c;
	struct opts_parser P;
	opts_init(&P, tables);
	while ((c = opts_next(&P, argc, argv)) != -1) {
		int r = score_opt(c, optarg, &plist, &nk);
		if (r < 0)
			return PKB_EXIT_USAGE;
		if (r)
			continue;
		switch (c) {
		case 'j': json_path = optarg; break;
		case 'c': csv_path = optarg; break;
		case 'h': opts_usage(stdout, head, tables, tail); return 0;
		default: opts_usage(stderr, head, tables, tail); return PKB_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		error("score takes one or more runs");
		opts_usage(stderr, head, tables, tail);
		return PKB_EXIT_USAGE;
	}
	if (json_path && csv_path && !strcmp(json_path, "-") && !strcmp(csv_path, "-")) {
		error("--json - and --csv - cannot both take stdout");
		return PKB_EXIT_USAGE;
	}
	double p[SUM_MAX_P];
	int np;
	if (score_parse_p(plist, p, &np) < 0)
		return PKB_EXIT_USAGE;
	if (check_runs(argv + optind, argc - optind) < 0)
		return PKB_EXIT_INPUT;
	struct sum_set s;
	if (sum_load(&s, argv + optind, argc - optind, p, np, nk) < 0)
		return PKB_EXIT_INPUT;
	char *defs = definitions();
	int rc = 0;
	if (json_path || csv_path) {
		rc = write_machine(&s, json_path, csv_path, defs) < 0 ? PKB_EXIT_INPUT : 0;
	} else {
		/* the rows a hidden shape or a time under the bound adds, only
		 * where some run has one */
		int hidden = 0, below = 0;
		for (int i = 0; i < s.nr; i++) {
			hidden |= s.r[i].hidden_n > 0;
			below |= s.r[i].below_bound > 0;
		}
		print_metrics(&s, p, np, nk, hidden);
		print_failures(&s, hidden, below);
		printf("\n%s", defs);
	}
	free(defs);
	sum_free(&s);
	return rc;
}
