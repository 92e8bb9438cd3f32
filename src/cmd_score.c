/*
 * cmd_score.c -- `pkb score RUN...`: the metrics of one or more sweeps
 * side by side (one column per run), each metric's definition under the
 * table, or the same numbers as JSON (summary.c makes both).
 */
#include "cmds.h"
#include "exitcode.h"
#include "summary.h"
#include "opts.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char head[] =
"usage: pkb score RUN... [options]\n"
"\n"
"Score the records of pkb sweep (RUN: a run directory with results.jsonl, or\n"
"the file); several runs are shown side by side.\n"
"\n";

const struct opt score_opts_pk[] = {
	{ 'p', "p", "LIST", "fast_p thresholds besides 0,0.5,1,1.5,2 (e.g. 3,4)" },
	{ 'k', "k", "K", "pass@k for k = 1..K (default 5, at most 8)" },
	OPTS_END,
};
static const struct opt score_own[] = {
	{ 'j', "json", "FILE", "write the scores as JSON (- for stdout)" },
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

int cmd_score(int argc, char **argv)
{
	const char *plist = NULL, *json_path = NULL;
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
		case 'h': opts_usage(stdout, head, tables, NULL); return 0;
		default: opts_usage(stderr, head, tables, NULL); return PKB_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		error("score takes one or more runs");
		opts_usage(stderr, head, tables, NULL);
		return PKB_EXIT_USAGE;
	}
	double p[SUM_MAX_P];
	int np;
	if (score_parse_p(plist, p, &np) < 0)
		return PKB_EXIT_USAGE;
	struct sum_set s;
	if (sum_load(&s, argv + optind, argc - optind, p, np, nk) < 0)
		return PKB_EXIT_INPUT;
	if (json_path) {
		json_t *j = sum_json(&s);
		int rc = 0;
		if (!strcmp(json_path, "-")) {
			json_dumpf(j, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
			putchar('\n');
		} else {
			rc = json_write_file(json_path, j);
		}
		json_decref(j);
		sum_free(&s);
		return rc < 0 ? PKB_EXIT_INPUT : 0;
	}
	printf("records kept: %s\n\n%-16s", s.fingerprint, "");
	for (int i = 0; i < s.nr; i++)
		printf(" %12.12s", s.r[i].name);
	printf("\n%-16s", "candidates");
	for (int i = 0; i < s.nr; i++)
		printf(" %12d", s.r[i].candidates);
	printf("\n%-16s", "problems");
	for (int i = 0; i < s.nr; i++)
		printf(" %12d", s.r[i].np);
	for (int k = 1; k <= nk; k++) {
		printf("\npass@%-11d", k);
		for (int i = 0; i < s.nr; i++)
			cell(s.r[i].pass_at[k - 1], 1);
	}
	for (int q = 0; q < np; q++) {
		char name[32];
		snprintf(name, sizeof(name), "fast_%g", p[q]);
		printf("\n%-16s", name);
		for (int i = 0; i < s.nr; i++)
			cell(s.r[i].fast_p[q], 1);
	}
	printf("\n%-16s", "geomean");
	for (int i = 0; i < s.nr; i++)
		cell(s.r[i].geo_raw, 0);
	printf("\n%-16s", "geomean >= 1");
	for (int i = 0; i < s.nr; i++)
		cell(s.r[i].geo_clamped, 0);
	printf("\n%-16s", "S (mean)");
	for (int i = 0; i < s.nr; i++)
		cell(s.r[i].mean_sol, 0);
	printf("\n%-16s", "roofline frac");
	for (int i = 0; i < s.nr; i++)
		cell(s.r[i].mean_fraction, 1);
	printf("\n\nfailure modes (candidates)\n");
	for (int o = 0; o < OC_COUNT; o++) {
		printf("%-16s", sum_outcome_names[o]);
		for (int i = 0; i < s.nr; i++)
			printf(" %12d", s.r[i].oc[o]);
		putchar('\n');
	}
	for (int i = 0; i < s.nr; i++) {
		const char *cat;
		json_t *a;
		printf("\n%s by category:", s.r[i].name);
		json_object_foreach(s.r[i].oc_by_cat, cat, a) {
			printf("\n  %-28s fast_1", cat);
			cell(json_real_value(json_object_get(s.r[i].fast_by_cat, cat)), 1);
			for (int o = 0; o < OC_COUNT; o++)
				if (json_integer_value(json_array_get(a, o)))
					printf("  %s %lld", sum_outcome_names[o],
					       (long long)json_integer_value(json_array_get(a, o)));
		}
		printf("\n  left out: %d of %d records", s.r[i].left_out, s.r[i].records);
		json_t *v;
		json_object_foreach(s.r[i].left_reasons, cat, v)
			printf("; %lld %s", (long long)json_integer_value(v), cat);
		putchar('\n');
	}
	printf("\n%s", sum_definitions);
	sum_free(&s);
	return 0;
}
