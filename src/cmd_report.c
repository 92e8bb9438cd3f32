/*
 * cmd_report.c -- `pkb report RUN... -o report.html`: the page a
 * researcher puts in a paper or a post. One self-contained file (inline
 * CSS and SVG, no script, nothing fetched, every link relative to the
 * page, so that the folder can be zipped and shared) of the runs that
 * `pkb score` scores, printed from the same structs (summary.h) and the
 * same number formatting (sum_fmt), so that page and score agree.
 *
 * The confidence bands are a percentile bootstrap over problems, seeded
 * (sum_bootstrap): the same runs give the same page, byte for byte. No
 * date of its own is printed for that reason; each run's dates are its
 * records'.
 */
#define _GNU_SOURCE
#include "cmds.h"
#include "exitcode.h"
#include "summary.h"   /* defines: struct sum_set, sum_load, sum_bootstrap, sum_fmt */
#include "opts.h"
#include "util.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char head[] =
"usage: pkb report RUN... -o FILE.html [options]\n"
"\n"
"Write one self-contained HTML page of the runs: each run's model, provider,\n"
"samples, W, GPU, driver, pkb version and date; a leaderboard; pass@k and\n"
"fast_p curves with bootstrap confidence bands; a problem x run heat map of\n"
"speedups; failure modes by category; per problem the best candidate with\n"
"links (relative to the page) to its source and log. The numbers are pkb\n"
"score's.\n"
"\n";

enum { O_RESAMPLES = 1000, O_SEED };
static const struct opt report_opts[] = {
	{ 'o', "out", "FILE", "the page (required)" },
	{ O_RESAMPLES, "resamples", "B", "bootstrap resamples for the bands (default 1000,\n"
	  "at most 20000; 0: no bands)" },
	{ O_SEED, "seed", "S", "the bootstrap's seed (default 1)" },
	OPTS_END,
};
static const struct opt *const tables[] = { report_opts, score_opts_pk, NULL };

/* one colour per run (Okabe and Ito's, told apart by colour-blind
 * readers) and per outcome (pass green, then warm to cold, no_code grey) */
static const char *const run_colour[] = { "#0072B2", "#D55E00", "#009E73", "#CC79A7",
	"#E69F00", "#56B4E9", "#000000", "#F0E442" };
static const char *const oc_colour[OC_COUNT] = {
	[OC_PASS] = "#2da44e", [OC_NO_CODE] = "#d0d7de", [OC_COMPILE] = "#0072B2",
	[OC_LOAD] = "#56B4E9", [OC_MISMATCH] = "#D55E00", [OC_RUNTIME] = "#E69F00",
	[OC_TIMEOUT] = "#F0E442", [OC_FLAGGED] = "#CC79A7", [OC_OTHER] = "#6e7781",
};

#define GRID 201   /* fast_p curve: points from 0 to the largest p */

struct page {
	FILE *f;
	const struct sum_set *s;
	char *dir;              /* the page's folder, resolved */
	char **run_dir;         /* each run's folder, resolved */
	int B;                  /* resamples; 0: no bands */
	unsigned long long seed;
	double grid[GRID];
	/* per run, the metrics of sum_bootstrap: pass@1..nk, fast_p at s->p,
	 * then at grid */
	double **est, **lo, **hi;
};

static const char *colour(int i)
{
	return run_colour[i % ARRAY_SIZE(run_colour)];
}

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

/* s escaped, cut to n characters with an ellipsis (SVG text does not wrap;
 * the whole of it goes in the element's title) */
static void cut(FILE *f, const char *s, size_t n)
{
	if (strlen(s) <= n) {
		esc(f, s);
		return;
	}
	char *c = xstrfmt("%.*s", (int)n - 1, s);
	esc(f, c);
	fputs("\u2026", f);
	free(c);
}

/* ---- paths: every link relative to the page ----------------------------- */

/* an absolute path without ".", ".." or repeated slashes */
static char *normalize(const char *abs)
{
	char *out = xmalloc(strlen(abs) + 2);
	size_t n = 0;
	const char *s = abs;
	while (*s) {
		while (*s == '/')
			s++;
		const char *e = s;
		while (*e && *e != '/')
			e++;
		size_t len = (size_t)(e - s);
		if (len == 1 && s[0] == '.') {
			;
		} else if (len == 2 && s[0] == '.' && s[1] == '.') {
			while (n > 0 && out[n - 1] != '/')
				n--;
			if (n > 0)
				n--;
		} else if (len) {
			out[n++] = '/';
			memcpy(out + n, s, len);
			n += len;
		}
		s = e;
	}
	if (!n)
		out[n++] = '/';
	out[n] = 0;
	return out;
}

/* `to` as seen from the folder `from` (both absolute, normalized) */
static char *relative(const char *from, const char *to)
{
	size_t common = 0, i = 0;
	/* the longest common prefix that ends at a component boundary */
	for (; from[i] && from[i] == to[i]; i++)
		if (from[i] == '/')
			common = i;
	if (!from[i] && (to[i] == '/' || !to[i]))
		common = i;
	if (!strcmp(from, "/"))   /* the root: nothing to climb */
		common = 1;
	char *out = xstrdup("");
	for (const char *p = from + common; *p; p++)
		if (*p == '/') {
			char *o = xstrfmt("%s../", out);
			free(out);
			out = o;
		}
	const char *rest = to + common;
	while (*rest == '/')
		rest++;
	char *o = xstrfmt("%s%s", out, rest);
	free(out);
	if (!*o) {
		free(o);
		o = xstrdup(".");
	} else if (o[strlen(o) - 1] == '/') {
		o[strlen(o) - 1] = 0;
	}
	return o;
}

/* a folder resolved (symbolic links and all); else made absolute */
static char *resolve(const char *path)
{
	char buf[PATH_MAX];
	if (realpath(path, buf))
		return xstrdup(buf);
	char cwd[PATH_MAX];
	if (path[0] != '/' && getcwd(cwd, sizeof cwd)) {
		char *j = xstrfmt("%s/%s", cwd, path);
		char *n = normalize(j);
		free(j);
		return n;
	}
	return normalize(path);
}

/* the file a record names, inside its run where it can be found there: a
 * sweep writes the candidate as the path it was given (runs/gpt/candidates/
 * 001/sample_0.cu from the folder it ran in, or absolute), so the longest
 * tail of it that exists under the run is the file; else the path under
 * the run as it stands (absolute: itself) */
static char *run_file(const char *run_dir, const char *path)
{
	for (const char *t = path; t; t = strchr(t, '/')) {
		while (*t == '/')
			t++;
		char *j = xstrfmt("%s/%s", run_dir, t);
		if (*t && access(j, F_OK) == 0) {
			char *n = normalize(j);
			free(j);
			return n;
		}
		free(j);
	}
	if (path[0] == '/')
		return normalize(path);
	char *j = xstrfmt("%s/%s", run_dir, path);
	char *n = normalize(j);
	free(j);
	return n;
}

/* an href: percent-encoded but for the unreserved characters and '/' */
static void href(FILE *f, const char *rel)
{
	for (const unsigned char *c = (const unsigned char *)rel; *c; c++)
		if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		    (*c >= '0' && *c <= '9') || strchr("-._~/", *c))
			fputc(*c, f);
		else
			fprintf(f, "%%%02X", *c);
}

static void file_link(struct page *pg, int run, const char *path, const char *text)
{
	if (!path) {
		fputs("-", pg->f);
		return;
	}
	char *abs = run_file(pg->run_dir[run], path);
	char *rel = relative(pg->dir, abs);
	fputs("<a href=\"", pg->f);
	href(pg->f, rel);
	fputs("\">", pg->f);
	esc(pg->f, text);
	fputs("</a>", pg->f);
	free(abs);
	free(rel);
}

/* ---- tables ----------------------------------------------------------------- */

static void td(FILE *f, double x, int pct)
{
	char b[32];
	fprintf(f, "<td>%s</td>", sum_fmt(x, pct, b, sizeof(b)));
}

/* a value with its band: 58.3% [41.7%, 75.0%] */
static void td_band(struct page *pg, int run, int m, int pct)
{
	char b[32], l[32], h[32];
	fprintf(pg->f, "<td>%s", sum_fmt(pg->est[run][m], pct, b, sizeof(b)));
	if (pg->B && isfinite(pg->lo[run][m]))
		fprintf(pg->f, " <span class=\"band\">[%s, %s]</span>",
			sum_fmt(pg->lo[run][m], pct, l, sizeof(l)), sum_fmt(pg->hi[run][m], pct, h, sizeof(h)));
	fputs("</td>", pg->f);
}

static void run_name(struct page *pg, int i)
{
	fprintf(pg->f, "<span class=\"swatch\" style=\"background:%s\"></span>", colour(i));
	esc(pg->f, pg->s->r[i].label);
}

static void runs_table(struct page *pg)
{
	FILE *f = pg->f;
	fputs("<h2 id=\"runs-h\">Runs</h2>\n<div class=\"wide\"><table id=\"runs\"><tr>"
	      "<th>run</th><th class=\"l\">folder</th><th class=\"l\">model</th>"
	      "<th class=\"l\">provider</th><th class=\"l\">mode</th><th>temperature</th>"
	      "<th>samples</th><th>problems</th><th>W</th><th class=\"l\">GPU</th>"
	      "<th class=\"l\">driver</th><th class=\"l\">CUDA</th><th class=\"l\">NCCL</th>"
	      "<th class=\"l\">pkb</th><th class=\"l\">date</th></tr>\n", f);
	for (int i = 0; i < pg->s->nr; i++) {
		const struct sum_run *r = &pg->s->r[i];
		const struct sum_meta *m = &r->meta;
		fputs("<tr><td>", f);
		run_name(pg, i);
		fputs("</td><td class=\"l\">", f);
		char *rel = relative(pg->dir, pg->run_dir[i]);
		fputs("<a href=\"", f);
		href(f, rel);
		fputs("/\">", f);
		esc(f, rel);
		fputs("</a></td>", f);
		free(rel);
		const char *left[] = { m->model, m->provider, m->mode };
		for (size_t k = 0; k < ARRAY_SIZE(left); k++) {
			fputs("<td class=\"l\">", f);
			esc(f, left[k]);
			fputs("</td>", f);
		}
		fputs("<td>", f);
		esc(f, m->temperature);
		fputs("</td><td>", f);
		esc(f, m->samples);
		fprintf(f, "</td><td>%d</td><td>", r->np);
		esc(f, m->world);
		fputs("</td>", f);
		const char *right[] = { m->gpu, m->driver, m->cuda, m->nccl, m->pkb, m->date };
		for (size_t k = 0; k < ARRAY_SIZE(right); k++) {
			fputs("<td class=\"l\">", f);
			esc(f, right[k]);
			fputs("</td>", f);
		}
		fputs("</tr>\n", f);
	}
	fputs("</table></div>\n", f);
}

/* the index of threshold p in s->p (1 is always there: a default) */
static int p_index(const struct sum_set *s, double p)
{
	for (int q = 0; q < s->np; q++)
		if (s->p[q] == p)
			return q;
	BUG("fast_p threshold %g missing", p);
}

static int by_rank(const void *a, const void *b, void *arg)
{
	const struct sum_set *s = arg;
	const struct sum_run *x = &s->r[*(const int *)a], *y = &s->r[*(const int *)b];
	int q = p_index(s, 1);
	double fx = isfinite(x->fast_p[q]) ? x->fast_p[q] : -1;
	double fy = isfinite(y->fast_p[q]) ? y->fast_p[q] : -1;
	if (fx != fy)
		return fx > fy ? -1 : 1;
	double px = isfinite(x->pass_at[0]) ? x->pass_at[0] : -1;
	double py = isfinite(y->pass_at[0]) ? y->pass_at[0] : -1;
	if (px != py)
		return px > py ? -1 : 1;
	return strcmp(x->label, y->label);
}

static void leaderboard(struct page *pg)
{
	FILE *f = pg->f;
	const struct sum_set *s = pg->s;
	int *order = xcalloc(s->nr + 1, sizeof(*order));
	for (int i = 0; i < s->nr; i++)
		order[i] = i;
	qsort_r(order, s->nr, sizeof(*order), by_rank, (void *)s);
	int q0 = p_index(s, 0), q1 = p_index(s, 1);
	fputs("<h2 id=\"leaderboard-h\">Leaderboard</h2>\n<p class=\"sub\">Ranked by fast_1 (correct "
	      "and faster than the reference), then pass@1.", f);
	if (pg->B)
		fprintf(f, " In brackets: the 95%% bootstrap interval (%d resamples of the problems).",
			pg->B);
	fputs("</p>\n<div class=\"wide\"><table id=\"leaderboard\"><tr><th>#</th><th class=\"l\">run"
	      "</th><th>problems</th><th>candidates</th><th>pass@1</th><th>fast_0 (correct)</th>"
	      "<th>fast_1</th><th>geomean speedup</th><th>S (mean)</th></tr>\n", f);
	for (int k = 0; k < s->nr; k++) {
		int i = order[k];
		const struct sum_run *r = &s->r[i];
		fprintf(f, "<tr><td>%d</td><td class=\"l\">", k + 1);
		run_name(pg, i);
		fprintf(f, "</td><td>%d</td><td>%d</td>", r->np, r->candidates);
		td_band(pg, i, 0, 1);
		td_band(pg, i, s->nk + q0, 1);
		td_band(pg, i, s->nk + q1, 1);
		td(f, r->geo_raw, 0);
		td(f, r->mean_sol, 0);
		fputs("</tr>\n", f);
	}
	fputs("</table></div>\n", f);
	free(order);
}

/* every number pkb score prints, in its layout */
static void summary_table(struct page *pg)
{
	FILE *f = pg->f;
	const struct sum_set *s = pg->s;
	fputs("<h2 id=\"summary-h\">All metrics</h2>\n<p class=\"sub\">As <code>pkb score</code> "
	      "prints them.</p>\n<div class=\"wide\"><table id=\"summary\"><tr><th></th>", f);
	for (int i = 0; i < s->nr; i++) {
		fputs("<th>", f);
		run_name(pg, i);
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
	/* as score: the announced shape alone, where a run has hidden-shape
	 * records (pass@k above counts a pass at both) */
	int hidden = 0, below = 0;
	for (int i = 0; i < s->nr; i++) {
		hidden |= s->r[i].hidden_n > 0;
		below |= s->r[i].below_bound > 0;
	}
	for (int k = 1; hidden && k <= s->nk; k++) {
		fprintf(f, "</tr>\n<tr><td>pass@%d announced</td>", k);
		for (int i = 0; i < s->nr; i++)
			td(f, s->r[i].pass_announced[k - 1], 1);
	}
	if (hidden) {
		fputs("</tr>\n<tr><td>hidden failed</td>", f);
		for (int i = 0; i < s->nr; i++)
			fprintf(f, "<td>%d/%d</td>", s->r[i].hidden_failed, s->r[i].hidden_n);
	}
	if (below) {
		fputs("</tr>\n<tr><td>below bound</td>", f);
		for (int i = 0; i < s->nr; i++)
			fprintf(f, "<td>%d</td>", s->r[i].below_bound);
	}
	for (int q = 0; q < s->np; q++) {
		fprintf(f, "</tr>\n<tr><td>fast_%g</td>", s->p[q]);
		for (int i = 0; i < s->nr; i++)
			td(f, s->r[i].fast_p[q], 1);
	}
	const char *names[4] = { "geomean", "geomean clamped", "S (mean)", "roofline frac" };
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
	fputs("</tr></table></div>\n", f);
}

/* ---- charts ----------------------------------------------------------------- */

/* a chart's frame: y from 0 to 100 % with grid lines, the x axis' title */
#define CW 640
#define CH 340
#define CL 52
#define CR 16
#define CT 14
#define CB 46
static double cy(double v)
{
	return CH - CB - v * (CH - CB - CT);
}

static void frame(FILE *f, const char *id, const char *label, const char *xtitle,
		  const char *ytitle)
{
	fprintf(f, "<svg id=\"%s\" class=\"chart\" viewBox=\"0 0 %d %d\" role=\"img\" "
		"aria-label=\"%s\" xmlns=\"http://www.w3.org/2000/svg\" font-size=\"12\">\n",
		id, CW, CH, label);
	for (int t = 0; t <= 4; t++) {
		double y = cy(t / 4.0);
		fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\"/>"
			"<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" fill=\"#57606a\">%d%%</text>\n",
			CL, y, CW - CR, y, t ? "#eaeef2" : "#8c959f", CL - 6, y + 4, 25 * t);
	}
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#57606a\">%s</text>\n"
		"<text transform=\"translate(14 %d) rotate(-90)\" text-anchor=\"middle\" "
		"fill=\"#57606a\">%s</text>\n", (CL + CW - CR) / 2, CH - 8, xtitle,
		(CH - CB + CT) / 2, ytitle);
}

/* a band between lo and hi over the points x[n] where both are finite */
static void band(FILE *f, const double *x, const double *lo, const double *hi, int n,
		 const char *col)
{
	int any = 0;
	for (int j = 0; j < n; j++)
		any |= isfinite(lo[j]) && isfinite(hi[j]);
	if (!any)
		return;
	fprintf(f, "<polygon class=\"band\" fill=\"%s\" fill-opacity=\"0.16\" stroke=\"none\" "
		"points=\"", col);
	for (int j = 0; j < n; j++)
		if (isfinite(lo[j]) && isfinite(hi[j]))
			fprintf(f, "%.1f,%.1f ", x[j], cy(hi[j]));
	for (int j = n - 1; j >= 0; j--)
		if (isfinite(lo[j]) && isfinite(hi[j]))
			fprintf(f, "%.1f,%.1f ", x[j], cy(lo[j]));
	fputs("\"/>\n", f);
}

static void legend(struct page *pg)
{
	fputs("<p class=\"legend\">", pg->f);
	for (int i = 0; i < pg->s->nr; i++) {
		fputs("<span>", pg->f);
		run_name(pg, i);
		fputs("</span>", pg->f);
	}
	fputs("</p>\n", pg->f);
}

static void passk_chart(struct page *pg)
{
	FILE *f = pg->f;
	const struct sum_set *s = pg->s;
	double x[SUM_MAX_K];
	for (int k = 1; k <= s->nk; k++)
		x[k - 1] = s->nk == 1 ? (CL + CW - CR) / 2.0 :
			CL + 20 + (k - 1) * (CW - CR - CL - 40.0) / (s->nk - 1);
	fputs("<figure>", f);
	frame(f, "passk", "pass@k against k", "k (samples drawn per problem)", "pass@k");
	for (int k = 1; k <= s->nk; k++)
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" fill=\"#57606a\">%d"
			"</text>\n", x[k - 1], CH - CB + 16, k);
	for (int i = 0; i < s->nr; i++)
		if (pg->B)
			band(f, x, pg->lo[i], pg->hi[i], s->nk, colour(i));
	for (int i = 0; i < s->nr; i++) {
		fprintf(f, "<polyline class=\"curve passk\" fill=\"none\" stroke=\"%s\" "
			"stroke-width=\"2\" points=\"", colour(i));
		for (int k = 0; k < s->nk; k++)
			if (isfinite(pg->est[i][k]))
				fprintf(f, "%.1f,%.1f ", x[k], cy(pg->est[i][k]));
		fputs("\"/>\n", f);
		for (int k = 0; k < s->nk; k++) {
			if (!isfinite(pg->est[i][k]))
				continue;
			char b[32];
			fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"><title>", x[k],
				cy(pg->est[i][k]), colour(i));
			esc(f, s->r[i].label);
			fprintf(f, ": pass@%d %s</title></circle>\n", k + 1,
				sum_fmt(pg->est[i][k], 1, b, sizeof(b)));
		}
	}
	fputs("</svg>\n<figcaption>pass@k: the chance that at least one of k samples of a "
	      "problem is correct (unbiased estimator), mean over problems", f);
	if (pg->B)
		fputs("; band: 95% bootstrap interval", f);
	fputs(".</figcaption></figure>\n", f);
}

static void fastp_chart(struct page *pg)
{
	FILE *f = pg->f;
	const struct sum_set *s = pg->s;
	double pmax = pg->grid[GRID - 1];
	double x[GRID];
	for (int j = 0; j < GRID; j++)
		x[j] = CL + pg->grid[j] / pmax * (CW - CR - CL);
	fputs("<figure>", f);
	frame(f, "fastp", "fast_p against p", "p (speedup over the reference)",
	      "fast_p (correct and speedup &gt; p)");
	for (double t = 0; t <= pmax + 1e-9; t += pmax > 4 ? 1 : 0.5)
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" fill=\"#57606a\">%g"
			"</text>\n", CL + t / pmax * (CW - CR - CL), CH - CB + 16, t);
	/* the reference's speed: p = 1 */
	fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#8c959f\" "
		"stroke-dasharray=\"4 3\"/>\n", CL + 1 / pmax * (CW - CR - CL), CT,
		CL + 1 / pmax * (CW - CR - CL), cy(0));
	int g0 = s->nk + s->np;
	for (int i = 0; i < s->nr; i++)
		if (pg->B)
			band(f, x, pg->lo[i] + g0, pg->hi[i] + g0, GRID, colour(i));
	for (int i = 0; i < s->nr; i++) {
		/* a step function: the value holds until the next grid point */
		fprintf(f, "<path class=\"curve fastp\" fill=\"none\" stroke=\"%s\" "
			"stroke-width=\"2\" d=\"", colour(i));
		for (int j = 0; j < GRID; j++) {
			double v = pg->est[i][g0 + j];
			v = isfinite(v) ? v : 0;
			if (!j)
				fprintf(f, "M%.1f,%.1f", x[j], cy(v));
			else
				fprintf(f, "H%.1fV%.1f", x[j], cy(v));
		}
		fputs("\"/>\n", f);
		for (int q = 0; q < s->np; q++) {
			double v = s->r[i].fast_p[q];
			if (!isfinite(v) || s->p[q] > pmax)
				continue;
			char b[32];
			fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"><title>",
				CL + s->p[q] / pmax * (CW - CR - CL), cy(v), colour(i));
			esc(f, s->r[i].label);
			fprintf(f, ": fast_%g %s</title></circle>\n", s->p[q], sum_fmt(v, 1, b, sizeof(b)));
		}
	}
	fputs("</svg>\n<figcaption>fast_p: per problem the fraction of samples that are correct "
	      "and faster than p times the reference, mean over problems (dots: the thresholds "
	      "of the tables)", f);
	if (pg->B)
		fputs("; band: 95% bootstrap interval", f);
	fputs(".</figcaption></figure>\n", f);
}

/* ---- the heat map ------------------------------------------------------------ */

/* speedup to colour: ColorBrewer's RdBu on log2, white at 1x, saturated at
 * 1/4x (red, slower) and 4x (blue, faster) */
static void speed_colour(double sp, char *buf, size_t n, int *dark)
{
	static const int neg[3][3] = { { 247, 247, 247 }, { 244, 165, 130 }, { 178, 24, 43 } };
	static const int pos[3][3] = { { 247, 247, 247 }, { 146, 197, 222 }, { 33, 102, 172 } };
	double t = log2(sp) / 2;
	t = t < -1 ? -1 : t > 1 ? 1 : t;
	const int (*c)[3] = t < 0 ? neg : pos;
	double a = fabs(t) * 2;
	int seg = a >= 1 ? 1 : 0;
	double u = a - seg;
	int rgb[3];
	for (int k = 0; k < 3; k++)
		rgb[k] = (int)lround(c[seg][k] + u * (c[seg + 1][k] - c[seg][k]));
	snprintf(buf, n, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
	*dark = fabs(t) > 0.6;
}

static const struct sum_problem *find_problem(const struct sum_run *r, int id)
{
	for (int j = 0; j < r->np; j++)
		if (r->p[j].id == id)
			return &r->p[j];
	return NULL;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static void heatmap(struct page *pg)
{
	FILE *f = pg->f;
	const struct sum_set *s = pg->s;
	/* the problems of every run, by id */
	int n = 0, cap = 0, *ids = NULL;
	const char **names = NULL;
	for (int i = 0; i < s->nr; i++)
		for (int j = 0; j < s->r[i].np; j++) {
			int id = s->r[i].p[j].id, seen = 0;
			for (int k = 0; k < n; k++)
				seen |= ids[k] == id;
			if (seen)
				continue;
			if (n == cap) {
				cap = cap ? 2 * cap : 32;
				ids = xrealloc(ids, cap * sizeof(*ids));
			}
			ids[n++] = id;
		}
	if (n)
		qsort(ids, n, sizeof(*ids), cmp_int);
	names = xcalloc(n + 1, sizeof(*names));
	for (int k = 0; k < n; k++)
		for (int i = 0; i < s->nr && !names[k]; i++) {
			const struct sum_problem *p = find_problem(&s->r[i], ids[k]);
			names[k] = p ? p->name : NULL;
		}
	const int L = 290, CWD = 104, RH = 20, T = 44;
	int w = L + s->nr * CWD + 4, h = T + n * RH + 74;
	w = w < 440 ? 440 : w;
	fputs("<h2 id=\"heatmap-h\">Speedup by problem</h2>\n<p class=\"sub\">Each cell: the best "
	      "candidate of the problem in the run, its speedup over the reference (blue faster, "
	      "red slower); with no correct candidate, the furthest any got.</p>\n", f);
	fprintf(f, "<div class=\"wide\"><svg id=\"heatmap\" width=\"%d\" height=\"%d\" viewBox=\"0 0 "
		"%d %d\" role=\"img\" aria-label=\"speedup by problem and run\" "
		"xmlns=\"http://www.w3.org/2000/svg\" font-size=\"12\">\n", w, h, w, h);
	for (int i = 0; i < s->nr; i++) {
		double cx = L + i * CWD + CWD / 2.0;
		fprintf(f, "<rect x=\"%.1f\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/>",
			cx - 5, T - 32, colour(i));
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" font-weight=\"600\">",
			cx, T - 8);
		/* long labels cut; the whole one in the tooltip */
		cut(f, s->r[i].label, 14);
		fputs("<title>", f);
		esc(f, s->r[i].label);
		fputs("</title></text>\n", f);
	}
	for (int k = 0; k < n; k++) {
		int y = T + k * RH;
		fprintf(f, "<text x=\"0\" y=\"%d\">%03d ", y + 14, ids[k]);
		cut(f, names[k] ? names[k] : "?", 34);
		fputs("</text>\n", f);
		for (int i = 0; i < s->nr; i++) {
			const struct sum_problem *p = find_problem(&s->r[i], ids[k]);
			double x = L + i * CWD;
			if (!p || p->best < 0) {
				fprintf(f, "<rect x=\"%.1f\" y=\"%d\" width=\"%d\" height=\"%d\" "
					"fill=\"#ffffff\" stroke=\"#eaeef2\"/>\n", x + 1, y + 1, CWD - 2,
					RH - 2);
				continue;
			}
			const struct sum_cand *c = &p->c[p->best];
			char fill[16] = "#eaeef2", text[48], b[32];
			int dark = 0;
			if (c->outcome == OC_PASS && isfinite(c->speedup)) {
				speed_colour(c->speedup, fill, sizeof fill, &dark);
				snprintf(text, sizeof text, "%s", sum_fmt(c->speedup, 0, b, sizeof b));
			} else {
				snprintf(fill, sizeof fill, "%s", c->outcome == OC_PASS ? "#dafbe1" : "#eaeef2");
				snprintf(text, sizeof text, "%s", sum_outcome_names[c->outcome]);
			}
			fprintf(f, "<g class=\"cell\"><rect x=\"%.1f\" y=\"%d\" width=\"%d\" height=\"%d\" "
				"fill=\"%s\"/><text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" fill=\"%s\"%s>"
				"%s</text><title>%03d ", x + 1, y + 1, CWD - 2, RH - 2, fill, x + CWD / 2.0,
				y + 14, dark ? "#ffffff" : c->outcome == OC_PASS ? "#1b1f24" : "#57606a",
				c->outcome == OC_PASS ? "" : " font-style=\"italic\"", text, ids[k]);
			esc(f, p->name);
			fputs(", ", f);
			esc(f, s->r[i].label);
			fprintf(f, ": %s, %d of %d correct</title></g>\n", c->sample ? c->sample : "?",
				p->correct, p->n);
		}
	}
	/* the scale */
	int y = T + n * RH + 16;
	const int SL = 70;   /* the scale's left end */
	fprintf(f, "<text x=\"0\" y=\"%d\" fill=\"#57606a\">speedup</text>\n", y + 12);
	static const double ticks[] = { 0.25, 0.5, 1, 2, 4 };
	for (int t = 0; t < 40; t++) {
		char fill[16];
		int dark;
		speed_colour(pow(2, -2 + 4.0 * (t + 0.5) / 40), fill, sizeof fill, &dark);
		fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"6\" height=\"14\" fill=\"%s\"/>", SL + 6 * t,
			y, fill);
	}
	fputs("\n", f);
	for (size_t t = 0; t < ARRAY_SIZE(ticks); t++)
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" fill=\"#57606a\">%gx</text>\n",
			SL + 240 * (log2(ticks[t]) + 2) / 4, y + 28, ticks[t]);
	y += 40;
	fprintf(f, "<rect x=\"0\" y=\"%d\" width=\"14\" height=\"14\" fill=\"#eaeef2\"/>"
		"<text x=\"20\" y=\"%d\" fill=\"#57606a\">no correct candidate (the furthest "
		"verdict)</text>\n<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"14\" fill=\"#fff\" "
		"stroke=\"#d0d7de\"/><text x=\"%d\" y=\"%d\" fill=\"#57606a\">not in the run</text>\n",
		y, y + 12, 320, y, 340, y + 12);
	fputs("</svg></div>\n", f);
	free(ids);
	free(names);
}

/* ---- failure modes ------------------------------------------------------------- */

/* the categories of every run, sorted */
static json_t *categories(const struct sum_set *s)
{
	json_t *cats = json_object();
	for (int i = 0; i < s->nr; i++) {
		const char *c;
		json_t *v;
		json_object_foreach(s->r[i].oc_by_cat, c, v)
			json_object_set_new(cats, c, json_true());
	}
	json_t *a = json_array();
	const char *c;
	json_t *v;
	json_object_foreach(cats, c, v)
		json_array_append_new(a, json_string(c));
	json_decref(cats);
	/* insertion sort of a dozen names */
	for (size_t i = 1; i < json_array_size(a); i++)
		for (size_t j = i; j > 0 && strcmp(json_string_value(json_array_get(a, j)),
						   json_string_value(json_array_get(a, j - 1))) < 0; j--) {
			json_t *t = json_incref(json_array_get(a, j));
			json_array_set(a, j, json_array_get(a, j - 1));
			json_array_set_new(a, j - 1, t);
		}
	return a;
}

/* one stacked bar: counts[OC_COUNT] as shares of the width */
static void stacked(FILE *f, const int *counts, double x0, int y, double bw, int bh,
		    const char *what)
{
	int total = 0;
	for (int o = 0; o < OC_COUNT; o++)
		total += counts[o];
	double x = x0;
	for (int o = 0; o < OC_COUNT && total; o++) {
		if (!counts[o])
			continue;
		double w = (double)counts[o] / total * bw;
		fprintf(f, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\">"
			"<title>", x, y, w, bh, oc_colour[o]);
		esc(f, what);
		fprintf(f, ": %s %d of %d</title></rect>", sum_outcome_names[o], counts[o], total);
		if (w > 22)
			fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" fill=\"%s\" "
				"font-size=\"11\">%d</text>", x + w / 2, y + bh - 4,
				o == OC_TIMEOUT || o == OC_NO_CODE || o == OC_RUNTIME || o == OC_LOAD ?
				"#1b1f24" : "#ffffff", counts[o]);
		x += w;
	}
	fputc('\n', f);
}

static void failure_chart(struct page *pg)
{
	FILE *f = pg->f;
	const struct sum_set *s = pg->s;
	json_t *cats = categories(s);
	int nc = (int)json_array_size(cats);
	const int W = 700, L = 170, RH = 18, GAP = 8, T = 52;
	int h = T + (nc + 1) * ((s->nr + 1) * RH + GAP) + 6;
	fputs("<h2 id=\"failures-h\">Failure modes</h2>\n<p class=\"sub\">Every candidate by "
	      "outcome, over all problems and per category (counts in the bars; the order is how "
	      "far a candidate got).</p>\n", f);
	fprintf(f, "<figure><svg id=\"failures\" class=\"chart\" viewBox=\"0 0 %d %d\" role=\"img\" "
		"aria-label=\"failure modes by category\" xmlns=\"http://www.w3.org/2000/svg\" "
		"font-size=\"12\">\n", W, h);
	/* the legend, in the bars' order */
	double lx = 0;
	int ly = 4;
	for (int o = 0; o < OC_COUNT; o++) {
		double lw = 16 + 7.2 * strlen(sum_outcome_names[o]) + 16;
		if (lx + lw > W) {
			lx = 0;
			ly += 20;
		}
		fprintf(f, "<rect x=\"%.0f\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>"
			"<text x=\"%.0f\" y=\"%d\">%s</text>", lx, ly, oc_colour[o], lx + 16, ly + 10,
			sum_outcome_names[o]);
		lx += lw;
	}
	fputc('\n', f);
	int y = T;
	for (int c = -1; c < nc; c++) {
		const char *cat = c < 0 ? "all problems" : json_string_value(json_array_get(cats, c));
		fprintf(f, "<text x=\"0\" y=\"%d\" font-weight=\"600\">", y + 13);
		esc(f, cat);
		fputs("</text>\n", f);
		y += RH;
		for (int i = 0; i < s->nr; i++) {
			const struct sum_run *r = &s->r[i];
			int counts[OC_COUNT] = { 0 };
			json_t *a = c < 0 ? NULL : json_object_get(r->oc_by_cat, cat);
			for (int o = 0; o < OC_COUNT; o++)
				counts[o] = c < 0 ? r->oc[o] : (int)json_integer_value(json_array_get(a, o));
			fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"8\" height=\"%d\" fill=\"%s\"/>",
				L - 14, y + 2, RH - 6, colour(i));
			fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" fill=\"#57606a\">",
				L - 20, y + 12);
			cut(f, r->label, 20);
			fputs("</text>", f);
			char *what = xstrfmt("%s, %s", cat, r->label);
			stacked(f, counts, L, y, W - L - 10, RH - 4, what);
			free(what);
			y += RH;
		}
		y += GAP;
	}
	fputs("</svg></figure>\n", f);
	json_decref(cats);
	/* the counts as a table: the bars' numbers, readable */
	fputs("<div class=\"wide\"><table id=\"outcome-counts\"><tr><th>outcome</th>", f);
	for (int i = 0; i < s->nr; i++) {
		fputs("<th>", f);
		run_name(pg, i);
		fputs("</th>", f);
	}
	fputs("</tr>\n", f);
	for (int o = 0; o < OC_COUNT; o++) {
		fprintf(f, "<tr><td>%s</td>", sum_outcome_names[o]);
		for (int i = 0; i < s->nr; i++)
			fprintf(f, "<td>%d</td>", s->r[i].oc[o]);
		fputs("</tr>\n", f);
	}
	fputs("</table></div>\n", f);
}

/* fast_1 per category: a bar per run in each category */
static void category_chart(struct page *pg)
{
	FILE *f = pg->f;
	const struct sum_set *s = pg->s;
	json_t *cats = categories(s);
	int nc = (int)json_array_size(cats);
	const int W = 700, L = 170, RH = 18, GAP = 8;
	double bw = W - L - 60;
	fputs("<h2 id=\"categories-h\">fast_1 by category</h2>\n", f);
	fprintf(f, "<figure><svg id=\"categories\" class=\"chart\" viewBox=\"0 0 %d %d\" role=\"img\" "
		"aria-label=\"fast_1 by category\" xmlns=\"http://www.w3.org/2000/svg\" "
		"font-size=\"12\">\n", W, nc * ((s->nr + 1) * RH + GAP) + 4);
	int y = 2;
	for (int c = 0; c < nc; c++) {
		const char *cat = json_string_value(json_array_get(cats, c));
		fprintf(f, "<text x=\"0\" y=\"%d\" font-weight=\"600\">", y + 13);
		esc(f, cat);
		fputs("</text>\n", f);
		y += RH;
		for (int i = 0; i < s->nr; i++) {
			json_t *v = json_object_get(s->r[i].fast_by_cat, cat);
			fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" fill=\"#57606a\">",
				L - 8, y + 10);
			cut(f, s->r[i].label, 20);
			fputs("</text>", f);
			double x = v ? json_real_value(v) : NAN;
			char b[32];
			fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>"
				"<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"none\" "
				"stroke=\"#eaeef2\"/><text x=\"%.1f\" y=\"%d\">%s</text>\n", L, y,
				isfinite(x) ? x * bw : 0, RH - 5, colour(i), L, y, bw, RH - 5,
				L + bw + 6, y + 11, sum_fmt(x, 1, b, sizeof(b)));
			y += RH;
		}
		y += GAP;
	}
	fputs("</svg></figure>\n", f);
	json_decref(cats);
}

/* ---- per problem ------------------------------------------------------------- */

static void problem_table(struct page *pg, int idx)
{
	FILE *f = pg->f;
	const struct sum_run *r = &pg->s->r[idx];
	fputs("<h3>", f);
	run_name(pg, idx);
	fprintf(f, "</h3>\n<div class=\"wide\"><table id=\"problems-%d\"><tr><th>problem</th>"
		"<th class=\"l\">category</th><th>correct</th><th class=\"l\">best: verdict</th>"
		"<th>speedup</th><th>roofline frac</th><th>S</th><th class=\"l\">source</th>"
		"<th class=\"l\">log</th></tr>\n", idx);
	for (int j = 0; j < r->np; j++) {
		const struct sum_problem *p = &r->p[j];
		const struct sum_cand *c = p->best >= 0 ? &p->c[p->best] : NULL;
		fprintf(f, "<tr><td>%03d ", p->id);
		esc(f, p->name);
		fputs("</td><td class=\"l\">", f);
		esc(f, p->category);
		fprintf(f, "</td><td>%d of %d</td><td class=\"l %s\">%s</td>", p->correct, p->n,
			c && c->outcome == OC_PASS ? "ok" : "bad", c ? sum_outcome_names[c->outcome] : "-");
		td(f, c ? c->speedup : NAN, 0);
		td(f, c ? c->fraction : NAN, 1);
		td(f, c ? c->sol : NAN, 0);
		fputs("<td class=\"l\">", f);
		file_link(pg, idx, c ? c->candidate : NULL, c ? c->sample : "-");
		fputs("</td><td class=\"l\">", f);
		file_link(pg, idx, c ? c->log : NULL, "log");
		fputs("</td></tr>\n", f);
	}
	fputs("</table></div>\n", f);
}

/* ---- the page ------------------------------------------------------------------- */

static const char css[] =
"*{box-sizing:border-box}\n"
"body{font:14px/1.45 system-ui,-apple-system,\"Segoe UI\",Roboto,\"Helvetica Neue\",Arial,"
"sans-serif;color:#1b1f24;background:#fff;margin:0;padding:24px 32px}\n"
"h1{font-size:24px;margin:0 0 4px}\n"
"h2{font-size:18px;margin:32px 0 6px;padding-bottom:4px;border-bottom:1px solid #d0d7de}\n"
"h3{font-size:15px;margin:20px 0 4px}\n"
".sub,figcaption{color:#57606a}\n"
"figcaption{font-size:13px;margin-top:4px}\n"
"figure{margin:0}\n"
"table{border-collapse:collapse;font-variant-numeric:tabular-nums;margin:6px 0}\n"
"th,td{padding:4px 8px;border-bottom:1px solid #d0d7de;text-align:right;white-space:nowrap}\n"
"th{background:#f6f8fa;font-weight:600}\n"
"td:first-child,th:first-child,.l{text-align:left}\n"
".wide{overflow-x:auto;max-width:100%}\n"
".grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(460px,1fr));gap:16px 40px}\n"
"svg.chart{width:100%;height:auto;display:block}\n"
".split{display:grid;grid-template-columns:min-content minmax(0,1fr);gap:0 48px;"
"align-items:start}\n"
"@media (max-width:1100px){.split{grid-template-columns:minmax(0,1fr)}}\n"
"table{font-size:13px}\n"
"td.ok{color:#1a7f37}td.bad{color:#cf222e}\n"
"span.band{color:#57606a;font-size:12px}\n"
".swatch{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px}\n"
".legend span{margin-right:18px;white-space:nowrap}\n"
"pre{background:#f6f8fa;padding:12px;overflow-x:auto;font-size:12px}\n"
"a{color:#0969da}\n"
"@media print{body{padding:0}h2{break-after:avoid}figure,table{break-inside:avoid}}\n";

static void write_page(struct page *pg)
{
	FILE *f = pg->f;
	const struct sum_set *s = pg->s;
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	      "<title>pkb report: ", f);
	for (int i = 0; i < s->nr; i++) {
		fputs(i ? ", " : "", f);
		esc(f, s->r[i].label);
	}
	fprintf(f, "</title>\n<style>\n%s</style></head><body>\n<header>\n"
		"<h1>ParallelKernelBench: ", css);
	for (int i = 0; i < s->nr; i++) {
		fputs(i ? ", " : "", f);
		esc(f, s->r[i].label);
	}
	fprintf(f, "</h1>\n<p class=\"sub\">%d run%s scored by pkb %s. Records kept: ", s->nr,
		s->nr == 1 ? "" : "s", PKB_VERSION);
	esc(f, s->fingerprint);
	if (pg->B)
		fprintf(f, ". Bands: 95%% percentile bootstrap over problems, %d resamples, seed %llu.",
			pg->B, pg->seed);
	else
		fputs(". No bands (--resamples 0).", f);
	fputs("</p>\n</header>\n", f);
	runs_table(pg);
	leaderboard(pg);
	fputs("<h2 id=\"curves-h\">pass@k and fast_p</h2>\n", f);
	legend(pg);
	fputs("<div class=\"grid\">\n", f);
	passk_chart(pg);
	fastp_chart(pg);
	fputs("</div>\n", f);
	fputs("<div class=\"split\">\n<section>\n", f);
	heatmap(pg);
	fputs("</section>\n<section>\n", f);
	failure_chart(pg);
	category_chart(pg);
	fputs("</section>\n</div>\n", f);
	summary_table(pg);
	fputs("<h2 id=\"problems-h\">Problems</h2>\n<p class=\"sub\">Per run, each problem's best "
	      "candidate (the fastest correct one; with none correct, the first of those that got "
	      "furthest), with its source and eval's log.</p>\n", f);
	for (int i = 0; i < s->nr; i++)
		problem_table(pg, i);
	fputs("<h2 id=\"definitions-h\">Definitions</h2>\n<pre>", f);
	esc(f, sum_definitions);
	esc(f, "best       per problem the fastest correct candidate; with none correct, the first\n"
	       "           of those that got furthest: pass > flagged > mismatch > runtime_error =\n"
	       "           timeout > load_refused > compile_error > other > no_code\n");
	if (pg->B)
		fprintf(f, "bands      95%% percentile bootstrap: the run's problems drawn with\n"
			"           replacement %d times (splitmix64, seed %llu mixed with the run's\n"
			"           folder name), each draw's pass@k and fast_p as above; the 2.5th and\n"
			"           97.5th percentiles. They show how much the mean over this set of\n"
			"           problems depends on which problems are in it.\n", pg->B, pg->seed);
	fputs("</pre>\n</body></html>\n", f);
}

int cmd_report(int argc, char **argv)
{
	const char *out = NULL, *plist = NULL;
	int nk = 5, c;
	long long B = 1000, seed = 1;
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
		case O_RESAMPLES:
			/* each metric's B draws are kept to sort: 20000 x 211 x 8 bytes = 34 MB */
			if (opt_int("resamples", optarg, 0, 20000, &B) < 0)
				return PKB_EXIT_USAGE;
			break;
		case O_SEED:
			if (opt_int("seed", optarg, 0, LLONG_MAX, &seed) < 0)
				return PKB_EXIT_USAGE;
			break;
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
	/* the page's folder must exist: every link is relative to it */
	const char *sl = strrchr(out, '/');
	char *odir = sl ? xstrfmt("%.*s", (int)(sl - out), out) : xstrdup(".");
	char rbuf[PATH_MAX];
	if (!realpath(*odir ? odir : "/", rbuf)) {
		error("cannot write '%s': no folder '%s'", out, odir);
		free(odir);
		return PKB_EXIT_INPUT;
	}
	free(odir);
	struct sum_set s;
	if (sum_load(&s, argv + optind, argc - optind, p, np, nk) < 0)
		return PKB_EXIT_INPUT;
	s.resamples = (int)B;
	s.seed = (uint64_t)seed;
	struct page pg = { .s = &s, .dir = xstrdup(rbuf), .B = (int)B,
			   .seed = (unsigned long long)seed };
	double pmax = s.p[s.np - 1] > 1 ? s.p[s.np - 1] : 1;
	for (int j = 0; j < GRID; j++)
		pg.grid[j] = pmax * j / (GRID - 1);
	int nm = s.nk + s.np + GRID;
	double *pl = xcalloc(s.np + GRID, sizeof(*pl));
	memcpy(pl, s.p, s.np * sizeof(*pl));
	memcpy(pl + s.np, pg.grid, sizeof(pg.grid));
	pg.run_dir = xcalloc(s.nr, sizeof(char *));
	pg.est = xcalloc(s.nr, sizeof(double *));
	pg.lo = xcalloc(s.nr, sizeof(double *));
	pg.hi = xcalloc(s.nr, sizeof(double *));
	for (int i = 0; i < s.nr; i++) {
		pg.run_dir[i] = resolve(s.r[i].dir);
		pg.est[i] = xcalloc(nm, sizeof(double));
		pg.lo[i] = xcalloc(nm, sizeof(double));
		pg.hi[i] = xcalloc(nm, sizeof(double));
		sum_bootstrap(&s, &s.r[i], pl, s.np + GRID, pg.B, pg.seed, pg.est[i], pg.lo[i],
			      pg.hi[i]);
	}
	free(pl);
	char *buf = NULL;
	size_t len = 0;
	pg.f = open_memstream(&buf, &len);
	write_page(&pg);
	fclose(pg.f);
	int rc = write_file_atomic(out, buf, len);
	free(buf);
	for (int i = 0; i < s.nr; i++) {
		free(pg.run_dir[i]);
		free(pg.est[i]);
		free(pg.lo[i]);
		free(pg.hi[i]);
	}
	free(pg.run_dir);
	free(pg.est);
	free(pg.lo);
	free(pg.hi);
	free(pg.dir);
	sum_free(&s);
	if (rc < 0) {
		error("cannot write %s", out);
		return PKB_EXIT_INPUT;
	}
	return 0;
}
