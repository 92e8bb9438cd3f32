/*
 * cmd_report.c -- `pkb report RUN... -o report.html`: one self-contained
 * page (inline CSS and SVG, no script, nothing fetched) of the runs that
 * `pkb score` scores, printed from the same structs (summary.h) and the
 * same number formatting (sum_fmt), so that page and score agree.
 */
#define _GNU_SOURCE
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
"usage: pkb report RUN... -o FILE.html [options]\n"
"\n"
"Write one self-contained HTML page of the runs: the summary table, each\n"
"run's fast_p curve, fast_1 per category, failure modes, and per problem the\n"
"best candidate's verdict, speedup and roofline fraction with links to its\n"
"source and log. The numbers are pkb score's.\n"
"\n";

static const struct opt report_opts[] = {
	{ 'o', "out", "FILE", "the page (required)" },
	OPTS_END,
};
static const struct opt *const tables[] = { report_opts, score_opts_pk, NULL };

/* one colour per run and per outcome (pass green, failures warm to grey) */
static const char *const run_colour[] = { "#1f77b4", "#d62728", "#2ca02c", "#9467bd",
	"#ff7f0e", "#17becf", "#8c564b", "#e377c2" };
static const char *const oc_colour[OC_COUNT] = { "#2ca02c", "#c7c7c7", "#ff7f0e", "#bcbd22",
	"#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f" };

static void esc(FILE *f, const char *s)
{
	for (; s && *s; s++)
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(*s, f);
		}
}

/* a file link: absolute paths as file://, relative ones as they are
 * (the page may sit anywhere; the run directory is named in full) */
static void link(FILE *f, const char *dir, const char *path, const char *text)
{
	if (!path) {
		fputs("-", f);
		return;
	}
	fputs("<a href=\"", f);
	if (path[0] == '/') {
		fputs("file://", f);
		esc(f, path);
	} else {
		if (dir[0] == '/')
			fputs("file://", f);
		esc(f, dir);
		fputc('/', f);
		esc(f, path);
	}
	fputs("\">", f);
	esc(f, text);
	fputs("</a>", f);
}

static void td(FILE *f, double x, int pct)
{
	char b[32];
	fprintf(f, "<td>%s</td>", sum_fmt(x, pct, b, sizeof(b)));
}

static void summary_table(FILE *f, const struct sum_set *s)
{
	fputs("<h2>Summary</h2>\n<table id=\"summary\"><tr><th></th>", f);
	for (int i = 0; i < s->nr; i++) {
		fputs("<th>", f);
		esc(f, s->r[i].name);
		fputs("</th>", f);
	}
	fputs("</tr>\n<tr><td>candidates</td>", f);
	for (int i = 0; i < s->nr; i++)
		fprintf(f, "<td>%d</td>", s->r[i].candidates);
	fputs("</tr>\n<tr><td>problems</td>", f);
	for (int i = 0; i < s->nr; i++)
		fprintf(f, "<td>%d</td>", s->r[i].np);
	for (int k = 1; k <= s->nk; k++) {
		fprintf(f, "</tr>\n<tr><td>pass@%d</td>", k);
		for (int i = 0; i < s->nr; i++)
			td(f, s->r[i].pass_at[k - 1], 1);
	}
	for (int q = 0; q < s->np; q++) {
		fprintf(f, "</tr>\n<tr><td>fast_%g</td>", s->p[q]);
		for (int i = 0; i < s->nr; i++)
			td(f, s->r[i].fast_p[q], 1);
	}
	const char *names[4] = { "geomean", "geomean &gt;= 1", "S (mean)", "roofline frac" };
	for (int m = 0; m < 4; m++) {
		fprintf(f, "</tr>\n<tr><td>%s</td>", names[m]);
		for (int i = 0; i < s->nr; i++) {
			const struct sum_run *r = &s->r[i];
			double v[4] = { r->geo_raw, r->geo_clamped, r->mean_sol, r->mean_fraction };
			td(f, v[m], m == 3);
		}
	}
	fputs("</tr>\n<tr><td>left out</td>", f);
	for (int i = 0; i < s->nr; i++) {
		fprintf(f, "<td>%d of %d", s->r[i].left_out, s->r[i].records);
		const char *why;
		json_t *v;
		json_object_foreach(s->r[i].left_reasons, why, v) {
			fprintf(f, "; %lld ", (long long)json_integer_value(v));
			esc(f, why);
		}
		fputs("</td>", f);
	}
	fputs("</tr></table>\n", f);
}

/* fast_p against p: a polyline per run through the table's points */
static void fastp_chart(FILE *f, const struct sum_set *s)
{
	const int W = 560, H = 300, L = 50, B = 40, T = 10, R = 120;
	double pmax = s->p[s->np - 1] > 0 ? s->p[s->np - 1] : 1;
	fprintf(f, "<h2>fast_p</h2>\n<svg id=\"fastp\" width=\"%d\" height=\"%d\" "
		"xmlns=\"http://www.w3.org/2000/svg\" font-size=\"12\">\n", W, H);
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#000\"/>"
		"<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#000\"/>\n",
		L, H - B, W - R, H - B, L, T, L, H - B);
	for (int t = 0; t <= 4; t++) {   /* y ticks every 25 % */
		int y = H - B - t * (H - B - T) / 4;
		fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%d%%</text>"
			"<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ddd\"/>\n",
			L - 4, y + 4, 25 * t, L, y, W - R, y);
	}
	for (int q = 0; q < s->np; q++) {
		double x = L + s->p[q] / pmax * (W - R - L);
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n", x, H - B + 16, s->p[q]);
	}
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">p (speedup over the reference)</text>\n",
		(L + W - R) / 2, H - 6);
	for (int i = 0; i < s->nr; i++) {
		const char *col = run_colour[i % ARRAY_SIZE(run_colour)];
		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", col);
		for (int q = 0; q < s->np; q++) {
			double v = isfinite(s->r[i].fast_p[q]) ? s->r[i].fast_p[q] : 0;
			fprintf(f, "%.1f,%.1f ", L + s->p[q] / pmax * (W - R - L), H - B - v * (H - B - T));
		}
		fputs("\"/>\n", f);
		fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>"
			"<text x=\"%d\" y=\"%d\">", W - R + 10, T + 18 * i, col, W - R + 26, T + 18 * i + 10);
		esc(f, s->r[i].name);
		fputs("</text>\n", f);
	}
	fputs("</svg>\n", f);
}

/* fast_1 per category: horizontal bars, one per run in each category */
static void category_chart(FILE *f, const struct sum_set *s)
{
	json_t *cats = json_object();
	for (int i = 0; i < s->nr; i++) {
		const char *c;
		json_t *v;
		json_object_foreach(s->r[i].fast_by_cat, c, v)
			json_object_set_new(cats, c, json_true());
	}
	int rows = (int)json_object_size(cats) * s->nr;
	const int L = 220, BW = 300, RH = 16;
	fprintf(f, "<h2>fast_1 by category</h2>\n<svg id=\"categories\" width=\"%d\" height=\"%d\" "
		"xmlns=\"http://www.w3.org/2000/svg\" font-size=\"12\">\n", L + BW + 80,
		rows * RH + (int)json_object_size(cats) * 8 + 10);
	int y = 4;
	const char *c;
	json_t *dummy;
	json_object_foreach(cats, c, dummy) {
		fprintf(f, "<text x=\"0\" y=\"%d\">", y + 12);
		esc(f, c);
		fputs("</text>\n", f);
		for (int i = 0; i < s->nr; i++) {
			json_t *v = json_object_get(s->r[i].fast_by_cat, c);
			double x = v ? json_real_value(v) : NAN;
			char b[32];
			fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>"
				"<text x=\"%.1f\" y=\"%d\">%s</text>\n", L, y, isfinite(x) ? x * BW : 0, RH - 3,
				run_colour[i % ARRAY_SIZE(run_colour)], L + (isfinite(x) ? x * BW : 0) + 4,
				y + 11, sum_fmt(x, 1, b, sizeof(b)));
			y += RH;
		}
		y += 8;
	}
	fputs("</svg>\n", f);
	json_decref(cats);
}

/* failure modes: one stacked bar per run, a segment per outcome */
static void failure_chart(FILE *f, const struct sum_set *s)
{
	const int L = 120, BW = 400, RH = 22;
	fprintf(f, "<h2>Outcomes</h2>\n<svg id=\"outcomes\" width=\"%d\" height=\"%d\" "
		"xmlns=\"http://www.w3.org/2000/svg\" font-size=\"12\">\n", L + BW + 20, s->nr * RH + 50);
	for (int i = 0; i < s->nr; i++) {
		const struct sum_run *r = &s->r[i];
		int y = 4 + i * RH;
		fprintf(f, "<text x=\"0\" y=\"%d\">", y + 14);
		esc(f, r->name);
		fputs("</text>\n", f);
		double x = L;
		for (int o = 0; o < OC_COUNT && r->candidates; o++) {
			double w = (double)r->oc[o] / r->candidates * BW;
			if (w <= 0)
				continue;
			fprintf(f, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\">"
				"<title>%s %d</title></rect>\n", x, y, w, RH - 4, oc_colour[o],
				sum_outcome_names[o], r->oc[o]);
			x += w;
		}
	}
	int y = s->nr * RH + 16, x = 0;
	for (int o = 0; o < OC_COUNT; o++) {
		fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/>"
			"<text x=\"%d\" y=\"%d\">%s</text>\n", x, y, oc_colour[o], x + 13, y + 9,
			sum_outcome_names[o]);
		x += (int)strlen(sum_outcome_names[o]) * 7 + 24;
		if (x > L + BW - 100) {
			x = 0;
			y += 15;
		}
	}
	fputs("</svg>\n", f);
	/* the counts as a table: the bars' numbers, readable */
	fputs("<table id=\"outcome-counts\"><tr><th></th>", f);
	for (int i = 0; i < s->nr; i++) {
		fputs("<th>", f);
		esc(f, s->r[i].name);
		fputs("</th>", f);
	}
	fputs("</tr>\n", f);
	for (int o = 0; o < OC_COUNT; o++) {
		fprintf(f, "<tr><td>%s</td>", sum_outcome_names[o]);
		for (int i = 0; i < s->nr; i++)
			fprintf(f, "<td>%d</td>", s->r[i].oc[o]);
		fputs("</tr>\n", f);
	}
	fputs("</table>\n", f);
}

static void problem_table(FILE *f, const struct sum_run *r, int idx)
{
	fputs("<h2>Problems: ", f);
	esc(f, r->name);
	fprintf(f, "</h2>\n<table id=\"problems-%d\"><tr><th>problem</th><th>category</th>"
		"<th>correct</th><th>best: verdict</th><th>speedup</th><th>roofline frac</th>"
		"<th>S</th><th>source</th><th>log</th></tr>\n", idx);
	for (int j = 0; j < r->np; j++) {
		const struct sum_problem *p = &r->p[j];
		const struct sum_cand *c = p->best >= 0 ? &p->c[p->best] : NULL;
		fprintf(f, "<tr><td>%03d</td><td>", p->id);
		esc(f, p->category);
		fprintf(f, "</td><td>%d of %d</td><td class=\"%s\">%s</td>", p->correct, p->n,
			c && c->outcome == 0 ? "ok" : "bad", c ? sum_outcome_names[c->outcome] : "-");
		td(f, c ? c->speedup : NAN, 0);
		td(f, c ? c->fraction : NAN, 1);
		td(f, c ? c->sol : NAN, 0);
		fputs("<td>", f);
		link(f, r->dir, c ? c->candidate : NULL, c ? c->sample : "-");
		fputs("</td><td>", f);
		link(f, r->dir, c ? c->log : NULL, "log");
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n", f);
}

int cmd_report(int argc, char **argv)
{
	const char *out = NULL, *plist = NULL;
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
		case 'o': out = optarg; break;
		case 'h': opts_usage(stdout, head, tables, NULL); return 0;
		default: opts_usage(stderr, head, tables, NULL); return PKB_EXIT_USAGE;
		}
	}
	if (optind >= argc || !out) {
		error("report takes one or more runs and -o FILE");
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
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	      "<title>pkb report</title>\n<style>\n"
	      "body{font-family:sans-serif;margin:20px;color:#222;background:#fff}\n"
	      "table{border-collapse:collapse;margin:8px 0 20px}\n"
	      "td,th{border:1px solid #bbb;padding:3px 8px;text-align:right}\n"
	      "td:first-child,th:first-child{text-align:left}\n"
	      "td.ok{color:#1a7f1a}td.bad{color:#b01010}\n"
	      "pre{background:#f4f4f4;padding:8px}\n</style></head><body>\n"
	      "<h1>pkb report</h1>\n<p>records kept: ", f);
	esc(f, s.fingerprint);
	fputs("</p>\n", f);
	summary_table(f, &s);
	fastp_chart(f, &s);
	category_chart(f, &s);
	failure_chart(f, &s);
	for (int i = 0; i < s.nr; i++)
		problem_table(f, &s.r[i], i);
	fputs("<h2>Definitions</h2>\n<pre>", f);
	esc(f, sum_definitions);
	fputs("</pre>\n</body></html>\n", f);
	fclose(f);
	int rc = write_file_atomic(out, buf, len);
	free(buf);
	sum_free(&s);
	if (rc < 0) {
		error("cannot write %s", out);
		return PKB_EXIT_INPUT;
	}
	return 0;
}
