/*
 * summary.c -- see summary.h. The records kept are those with the
 * fingerprint most of the records share (GPU, world size, timing mode,
 * tolerance): a speedup on another machine or timing mode is another
 * quantity, and averaging it in would be wrong. The rest are counted by reason.
 */
#define _GNU_SOURCE
#include "summary.h"
#include "problem.h"
#include "result.h"     /* defines: result_read */
#include "results.h"
#include "score.h"     /* defines: SCORE_GEOMEAN_WORDS */
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const sum_outcome_names[OC_COUNT] = {
	"pass", "no_code", "compile_error", "load_refused", "mismatch", "runtime_error",
	"timeout", "flagged", "other",
};

const int sum_outcome_rank[OC_COUNT] = {
	[OC_PASS] = 8, [OC_FLAGGED] = 7, [OC_MISMATCH] = 6, [OC_RUNTIME] = 5, [OC_TIMEOUT] = 5,
	[OC_LOAD] = 4, [OC_COMPILE] = 3, [OC_OTHER] = 2, [OC_NO_CODE] = 1,
};

const char sum_definitions[] =
"pass@k     per problem 1 - C(n-c,k)/C(n,k) (Chen et al. 2021, unbiased; n samples,\n"
"           c correct: at the announced shape and, where pkb sweep evaluated one, at\n"
"           the hidden shape too), mean over the problems with n >= k; pass@k\n"
"           announced: c counts the announced shape alone\n"
"fast_p     per problem the fraction of its samples that are correct AND faster than\n"
"           p times the reference (speedup > p strictly, as KernelBench), mean over\n"
"           problems; fast_0 is the fraction correct. A time under the roofline's\n"
"           bound is flagged, never counted, here or in the geomeans\n"
SCORE_GEOMEAN_WORDS
"S          speed-of-light score 1 / (1 + (T_k - T_sol) / (T_b - T_sol)), mean over\n"
"           correct candidates with a bound: 0.5 at the reference, 1 at the bound\n"
"           (docs/ROOFLINE.md); roofline fraction T_sol / T_k, mean likewise\n"
"failures   every candidate by outcome: no_code (no code in the reply), compile_error,\n"
"           load_refused, mismatch, runtime_error, timeout, flagged (faster than the\n"
"           bound), other (env_error, internal_error: the harness's fault); one\n"
"           correct at the announced shape only counts as its hidden shape's outcome;\n"
"           hidden failed: how many did, of those evaluated at a hidden shape; below\n"
"           bound: recorded as pass with a median under the roofline's bound (flagged)\n"
"left out   records whose GPU, world size, timing mode, tolerance or hidden shape\n"
"           differ from most records' (not comparable), or a key seen twice\n";

const char *sum_fmt(double x, int pct, char *buf, int n)
{
	if (!isfinite(x))
		snprintf(buf, n, "-");
	else if (pct)
		snprintf(buf, n, "%.1f%%", 100 * x);
	else
		snprintf(buf, n, "%.3f", x);
	return buf;
}

static int outcome_index(const char *o)
{
	for (int i = 0; i < OC_COUNT; i++)
		if (o && !strcmp(o, sum_outcome_names[i]))
			return i;
	return OC_OTHER;
}

static double num(json_t *v)
{
	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* the parts of a record that make two records comparable; "-" where the
 * record cannot say (a no_code or compile_error record was never timed on
 * any GPU: it is comparable with every run of the same sweep) */
#define FP_N 6
static const char *const fp_names[FP_N] = { "gpu", "world", "timing", "mode", "tolerance",
					    "hidden" };
static const char *const fp_reason[FP_N] = { "different hardware", "different world size",
	"different timing mode", "different timing mode", "different tolerance",
	"different hidden shape" };

/* the hidden shape of pkb sweep as the fingerprint sees it: "drawn" (per
 * problem from the run: runs side by side may differ), the MxN given, or
 * "off" (a sweep without one, or from before it): a pass at one shape is
 * not a pass at two */
static char *fp_hidden(json_t *in)
{
	json_t *h = json_object_get(in, "hidden");
	const char *from = json_string_value(json_object_get(h, "from"));
	const char *given = json_string_value(json_object_get(h, "given"));
	return xstrdup(!h ? "off" : given ? given : from ? from : "?");
}

static void fingerprint(json_t *rec, const struct result *res, char *parts[FP_N])
{
	json_t *in = json_object_get(rec, "instance");
	const char *gpu = json_string_value(json_object_get(json_object_get(in, "hardware"), "gpu"));
	const char *tm = json_string_value(json_object_get(in, "timing"));
	const char *mode = res->timing_mode;
	double at = num(json_object_get(in, "atol")), rt = num(json_object_get(in, "rtol"));
	parts[0] = xstrdup(gpu ? gpu : "-");
	parts[1] = xstrfmt("%lld", (long long)json_integer_value(json_object_get(in, "world")));
	parts[2] = xstrdup(tm ? tm : "-");
	parts[3] = xstrdup(mode ? mode : "-");
	parts[4] = isnan(at) && isnan(rt) ? xstrdup("problem's") : xstrfmt("%g/%g", at, rt);
	parts[5] = fp_hidden(in);
}

static int fp_complete(char *parts[FP_N])
{
	for (int k = 0; k < FP_N; k++)
		if (!strcmp(parts[k], "-"))
			return 0;
	return 1;
}

static char *fp_join(char *parts[FP_N])
{
	return xstrfmt("gpu=%s world=%s timing=%s mode=%s tolerance=%s hidden=%s", parts[0],
		       parts[1], parts[2], parts[3], parts[4], parts[5]);
}

static void fp_free(char *parts[FP_N])
{
	for (int k = 0; k < FP_N; k++)
		free(parts[k]);
}

/* the records of a run: results.jsonl and the shard files of pkb sweep
 * --slurm (results.h); a key in two files is left out below as twice */
static json_t *load_records(const char *path, char **dir)
{
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		*dir = xstrdup(path);
	} else {
		const char *sl = strrchr(path, '/');
		*dir = sl ? xstrfmt("%.*s", (int)(sl - path), path) : xstrdup(".");
	}
	int n;
	char **files = results_files(path, &n);
	json_t *a = json_array();
	int found = 0;
	for (int i = 0; i < n; i++) {
		found += access(files[i], F_OK) == 0;
		if (results_read(files[i], a, NULL, NULL, NULL) < 0) {
			error("cannot read %s", files[i]);
			json_decref(a);
			results_files_free(files);
			return NULL;
		}
	}
	if (!found) {
		error("cannot read %s", files[0]);
		json_decref(a);
		a = NULL;
	}
	results_files_free(files);
	return a;
}

static struct sum_problem *problem_slot(struct sum_run *r, int id)
{
	for (int i = 0; i < r->np; i++)
		if (r->p[i].id == id)
			return &r->p[i];
	r->p = xrealloc(r->p, (r->np + 1) * sizeof(*r->p));
	struct sum_problem *p = &r->p[r->np++];
	memset(p, 0, sizeof(*p));
	p->id = id;
	const struct pkb_problem *pp = NULL;
	for (int i = 0; i < problem_count(); i++)
		if (problem_at(i)->id == id)
			pp = problem_at(i);
	p->category = pp && pp->category ? pp->category : "unknown";
	p->name = pp && pp->name ? pp->name : "?";
	return p;
}

static int cmp_problem(const void *a, const void *b)
{
	return ((const struct sum_problem *)a)->id - ((const struct sum_problem *)b)->id;
}

static void count_cat(json_t *by, const char *cat, int oc)
{
	json_t *a = json_object_get(by, cat);
	if (!a) {
		a = json_array();
		for (int i = 0; i < OC_COUNT; i++)
			json_array_append_new(a, json_integer(0));
		json_object_set_new(by, cat, a);
	}
	json_array_set_new(a, oc, json_integer(json_integer_value(json_array_get(a, oc)) + 1));
}

/* a timed pass whose median is under the roofline's lower bound (eval's
 * own test, report_perf_verdict; "fraction" > 1 when the median is not
 * recorded): no real kernel runs faster than the hardware allows */
static int below_bound(const struct result *res)
{
	double bound_us = res->roofline.bound_us, tk = res->cand.median_ms;
	if (isfinite(bound_us) && isfinite(tk))
		return tk * 1000 < bound_us;
	return res->roofline.fraction > 1;
}

static void add_record(struct sum_run *r, json_t *rec, const struct result *res)
{
	json_t *in = json_object_get(rec, "instance");
	struct sum_problem *p = problem_slot(r, (int)json_integer_value(json_object_get(in, "problem")));
	p->c = xrealloc(p->c, (p->n + 1) * sizeof(*p->c));
	struct sum_cand *c = &p->c[p->n++];
	memset(c, 0, sizeof(*c));
	const char *s = json_string_value(json_object_get(in, "sample"));
	c->sample = xstrdup(s ? s : "?");
	s = json_string_value(json_object_get(rec, "candidate"));
	c->candidate = s ? xstrdup(s) : NULL;
	s = json_string_value(json_object_get(rec, "log"));
	c->log = s ? xstrdup(s) : NULL;
	c->outcome = outcome_index(json_string_value(json_object_get(rec, "outcome")));
	c->speedup = c->sol = c->fraction = NAN;
	c->hidden = -1;
	if (c->outcome == OC_PASS && below_bound(res)) {
		c->outcome = OC_FLAGGED;
		c->below_bound = 1;
		r->below_bound++;
	}
	c->announced = c->outcome;
	p->correct_announced += c->announced == OC_PASS;
	json_t *hid = json_object_get(rec, "hidden");
	if (json_is_object(hid)) {
		c->hidden = outcome_index(json_string_value(json_object_get(hid, "outcome")));
		r->hidden_n++;
		if (c->outcome == OC_PASS && c->hidden != OC_PASS) {
			c->outcome = c->hidden;
			r->hidden_failed++;
		}
	}
	if (c->outcome == OC_PASS) {
		p->correct++;
		c->speedup = res->speedup;
		double bound_ms = res->roofline.bound_us / 1000;
		double tk = res->cand.median_ms, tb = res->ref.median_ms;
		c->sol = score_sol(tk, tb, bound_ms);
		c->fraction = score_roofline_fraction(tk, bound_ms);
	}
	r->oc[c->outcome]++;
	r->candidates++;
	count_cat(r->oc_by_cat, p->category, c->outcome);
}

static void compute(struct sum_set *s, struct sum_run *r)
{
	qsort(r->p, r->np, sizeof(*r->p), cmp_problem);
	double pk[SUM_MAX_K] = { 0 }, pka[SUM_MAX_K] = { 0 }, fp[SUM_MAX_P] = { 0 };
	int npk[SUM_MAX_K] = { 0 };
	struct score_item *all = xcalloc(r->candidates + 1, sizeof(*all));
	int na = 0;
	double sol = 0, frac = 0;
	json_t *cat_n = json_object();
	for (int i = 0; i < r->np; i++) {
		struct sum_problem *p = &r->p[i];
		struct score_item *it = xcalloc(p->n + 1, sizeof(*it));
		p->best = p->n ? 0 : -1;
		for (int j = 0; j < p->n; j++) {
			struct sum_cand *c = &p->c[j];
			it[j] = (struct score_item){ c->outcome == OC_PASS, c->speedup };
			all[na++] = it[j];
			/* the fastest correct one; while none is, the first of
			 * those that got furthest */
			const struct sum_cand *b = &p->c[p->best];
			if (it[j].correct ? b->outcome != OC_PASS ||
			    (isfinite(c->speedup) && !(c->speedup <= b->speedup)) :
			    sum_outcome_rank[c->outcome] > sum_outcome_rank[b->outcome])
				p->best = j;
			if (it[j].correct && isfinite(c->sol)) {
				sol += c->sol;
				r->sol_n++;
			}
			if (it[j].correct && isfinite(c->fraction)) {
				frac += c->fraction;
				r->fraction_n++;
			}
		}
		for (int k = 1; k <= s->nk; k++)
			if (p->n >= k) {
				pk[k - 1] += score_pass_at_k(p->n, p->correct, k);
				pka[k - 1] += score_pass_at_k(p->n, p->correct_announced, k);
				npk[k - 1]++;
			}
		for (int q = 0; q < s->np; q++)
			fp[q] += score_fast_p(it, p->n, s->p[q]);
		/* fast_1 by category: mean over its problems */
		json_t *a = json_object_get(r->fast_by_cat, p->category);
		if (!a) {
			a = json_real(0);
			json_object_set_new(r->fast_by_cat, p->category, a);
		}
		json_real_set(a, json_real_value(a) + score_fast_p(it, p->n, 1.0));
		json_object_set_new(cat_n, p->category, json_integer(
			json_integer_value(json_object_get(cat_n, p->category)) + 1));
		free(it);
	}
	for (int k = 0; k < s->nk; k++) {
		r->pass_at[k] = npk[k] ? pk[k] / npk[k] : NAN;
		r->pass_announced[k] = npk[k] ? pka[k] / npk[k] : NAN;
	}
	for (int q = 0; q < s->np; q++)
		r->fast_p[q] = r->np ? fp[q] / r->np : NAN;
	const char *cat;
	json_t *v;
	json_object_foreach(r->fast_by_cat, cat, v)
		json_real_set(v, json_real_value(v) / json_integer_value(json_object_get(cat_n, cat)));
	json_decref(cat_n);
	r->geo_raw = score_geomean(all, na, 0, &r->geo_n);
	r->geo_clamped = score_geomean(all, na, 1, NULL);
	r->mean_sol = r->sol_n ? sol / r->sol_n : NAN;
	r->mean_fraction = r->fraction_n ? frac / r->fraction_n : NAN;
	free(all);
}

/* ---- what a run is: the page's header ------------------------------------ */

/* sets[field] gets the value v (a set: object keys) */
static void meta_note(json_t *sets, const char *field, const char *v)
{
	if (!v || !*v)
		return;
	json_t *set = json_object_get(sets, field);
	if (!set) {
		set = json_object();
		json_object_set_new(sets, field, set);
	}
	json_object_set_new(set, v, json_true());
}

/* the parts of a kept record that say where and when it ran */
static void meta_record(json_t *sets, json_t *rec, const struct result *res)
{
	json_t *in = json_object_get(rec, "instance");
	json_t *hw = json_object_get(in, "hardware");
	if (json_is_integer(json_object_get(in, "world"))) {
		char w[24];
		snprintf(w, sizeof w, "%lld", (long long)json_integer_value(json_object_get(in, "world")));
		meta_note(sets, "world", w);
	}
	meta_note(sets, "gpu", json_string_value(json_object_get(hw, "gpu")));
	meta_note(sets, "driver", json_string_value(json_object_get(hw, "driver")));
	meta_note(sets, "cuda", json_string_value(json_object_get(hw, "cuda_runtime")));
	meta_note(sets, "nccl", json_string_value(json_object_get(hw, "nccl")));
	const char *v = json_string_value(json_object_get(in, "pkb_version"));
	meta_note(sets, "pkb", v ? v : res->pkb_version);
	const char *d = res->date;
	if (d && strlen(d) >= 10) {
		char day[11];
		memcpy(day, d, 10);
		day[10] = 0;
		meta_note(sets, "date", day);
	}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* sets[field] sorted and joined with ", " (dates: first to last); else
 * the fallback, else "-" */
static char *meta_join(json_t *sets, const char *field, const char *fallback)
{
	json_t *set = json_object_get(sets, field);
	size_t n = json_object_size(set);
	if (!n)
		return xstrdup(fallback && *fallback ? fallback : "-");
	const char **v = xcalloc(n, sizeof(*v));
	const char *k;
	json_t *t;
	size_t i = 0;
	json_object_foreach(set, k, t)
		v[i++] = k;
	qsort(v, n, sizeof(*v), cmp_str);
	char *out;
	if (!strcmp(field, "date")) {
		out = n == 1 ? xstrdup(v[0]) : xstrfmt("%s to %s", v[0], v[n - 1]);
	} else {
		out = xstrdup(v[0]);
		for (i = 1; i < n; i++) {
			char *o = xstrfmt("%s, %s", out, v[i]);
			free(out);
			out = o;
		}
	}
	free(v);
	return out;
}

static void meta_finish(struct sum_run *r, json_t *sets)
{
	struct sum_meta *m = &r->meta;
	char *path = xstrfmt("%s/run.json", r->dir);
	json_t *rj = json_load_file(path, 0, NULL), *args = json_object_get(rj, "args");
	free(path);
	m->model = xstrdup(json_str(args, "model", "-"));
	m->provider = xstrdup(json_str(args, "provider", "-"));
	m->mode = xstrdup(json_str(args, "mode", args ? "one-shot" : "-"));
	json_t *t = json_object_get(args, "temperature");
	m->temperature = json_is_number(t) ? xstrfmt("%g", json_number_value(t)) : xstrdup("-");
	int lo = 0, hi = 0;
	for (int i = 0; i < r->np; i++) {
		lo = !i || r->p[i].n < lo ? r->p[i].n : lo;
		hi = r->p[i].n > hi ? r->p[i].n : hi;
	}
	json_t *k = json_object_get(args, "k");
	m->samples = r->np ? (lo == hi ? xstrfmt("%d", lo) : xstrfmt("%d-%d", lo, hi)) :
		json_is_integer(k) ? xstrfmt("%lld", (long long)json_integer_value(k)) : xstrdup("-");
	json_t *w = json_object_get(args, "world");
	char ws[24] = "";
	if (json_is_integer(w))
		snprintf(ws, sizeof ws, "%lld", (long long)json_integer_value(w));
	m->world = meta_join(sets, "world", ws);
	m->gpu = meta_join(sets, "gpu", NULL);
	m->driver = meta_join(sets, "driver", NULL);
	m->cuda = meta_join(sets, "cuda", NULL);
	m->nccl = meta_join(sets, "nccl", NULL);
	m->pkb = meta_join(sets, "pkb", json_str(rj, "pkb_version", NULL));
	const char *up = json_str(rj, "updated", NULL);
	char day[11] = "";
	if (up && strlen(up) >= 10)
		snprintf(day, sizeof day, "%.10s", up);
	m->date = meta_join(sets, "date", day);
	r->label = xstrdup(strcmp(m->model, "-") ? m->model : r->name);
	json_decref(rj);
}

/* two runs of one model: each label gets its folder too */
static void unique_labels(struct sum_set *s)
{
	int *dup = xcalloc(s->nr + 1, sizeof(*dup));
	for (int i = 0; i < s->nr; i++)
		for (int j = 0; j < s->nr; j++)
			if (i != j && !strcmp(s->r[i].label, s->r[j].label))
				dup[i] = 1;
	for (int i = 0; i < s->nr; i++)
		if (dup[i] && strcmp(s->r[i].label, s->r[i].name)) {
			char *l = xstrfmt("%s (%s)", s->r[i].label, s->r[i].name);
			free(s->r[i].label);
			s->r[i].label = l;
		}
	free(dup);
}

static void meta_free(struct sum_meta *m)
{
	char **f[] = { &m->model, &m->provider, &m->mode, &m->temperature, &m->samples, &m->world,
		       &m->gpu, &m->driver, &m->cuda, &m->nccl, &m->pkb, &m->date };
	for (size_t i = 0; i < ARRAY_SIZE(f); i++)
		free(*f[i]);
}

/* ---- loading ---------------------------------------------------------------- */

/* each record's eval result ("result"), read once (result.h); a record
 * without one (no_code) reads as result_none's, and so does one that does
 * not read, said on stderr: it is counted by its record's outcome, untimed */
static struct result *read_results(json_t *recs, const char *dir)
{
	struct result *res = xcalloc(json_array_size(recs) + 1, sizeof *res);
	size_t j;
	json_t *rec;
	json_array_foreach(recs, j, rec) {
		json_t *v = json_object_get(rec, "result");
		char err[300];
		if (!v)
			result_none(&res[j]);
		else if (result_read(v, &res[j], err, sizeof err) < 0)
			warning("%s: record '%s': its result: %s; read as untimed", dir,
				json_str(rec, "key", "?"), err);
	}
	return res;
}

static void free_results(struct result *res, size_t n)
{
	for (size_t j = 0; j < n; j++)
		result_free(&res[j]);
	free(res);
}

int sum_load(struct sum_set *s, char **paths, int n, const double *p, int np, int nk)
{
	memset(s, 0, sizeof(*s));
	if (np > SUM_MAX_P || nk > SUM_MAX_K)
		return error("at most %d thresholds and k up to %d", SUM_MAX_P, SUM_MAX_K);
	memcpy(s->p, p, np * sizeof(*p));
	s->resamples = 1000;
	s->seed = 1;
	s->np = np;
	s->nk = nk;
	s->nr = n;
	s->r = xcalloc(n, sizeof(*s->r));
	json_t **recs = xcalloc(n, sizeof(*recs));
	struct result **res = xcalloc(n, sizeof(*res));
	json_t *votes = json_object();   /* fingerprint -> records */
	for (int i = 0; i < n; i++) {
		if (!(recs[i] = load_records(paths[i], &s->r[i].dir))) {
			json_decref(votes);
			return -1;
		}
		res[i] = read_results(recs[i], s->r[i].dir);
		const char *b = strrchr(s->r[i].dir, '/');
		s->r[i].name = xstrdup(b && b[1] ? b + 1 : s->r[i].dir);
		size_t j;
		json_t *rec;
		json_array_foreach(recs[i], j, rec) {
			char *parts[FP_N];
			fingerprint(rec, &res[i][j], parts);
			char *f = fp_join(parts);
			json_t *vote = json_object_get(votes, f);
			/* complete fingerprints outvote any partial one */
			json_object_set_new(votes, f, json_integer(json_integer_value(vote) +
				(fp_complete(parts) ? 1000000 : 1)));
			free(f);
			fp_free(parts);
		}
	}
	/* the fingerprint most records have; ties to the first in sorted order */
	const char *f, *best = NULL;
	json_t *v;
	long long most = 0;
	json_object_foreach(votes, f, v)
		if (json_integer_value(v) > most || (json_integer_value(v) == most && best && strcmp(f, best) < 0)) {
			most = json_integer_value(v);
			best = f;
		}
	s->fingerprint = xstrdup(best ? best : "-");
	json_decref(votes);
	/* the kept parts, split back out of the string */
	char *keep[FP_N] = { 0 };
	for (int k = 0; k < FP_N; k++) {
		char *at = strstr(s->fingerprint, fp_names[k]);
		char *end = k + 1 < FP_N && at ? strstr(at, fp_names[k + 1]) : NULL;
		if (at)
			at += strlen(fp_names[k]) + 1;
		keep[k] = !at ? xstrdup("-") :
			end ? xstrfmt("%.*s", (int)(end - at - 1), at) : xstrdup(at);
	}
	for (int i = 0; i < n; i++) {
		struct sum_run *r = &s->r[i];
		r->left_reasons = json_object();
		r->oc_by_cat = json_object();
		r->fast_by_cat = json_object();
		json_t *seen = json_object(), *sets = json_object();
		size_t j;
		json_t *rec;
		json_array_foreach(recs[i], j, rec) {
			r->records++;
			char *parts[FP_N];
			fingerprint(rec, &res[i][j], parts);
			const char *why = NULL;
			for (int k = 0; k < FP_N && !why; k++)
				if (strcmp(parts[k], "-") && strcmp(keep[k], "-") && strcmp(parts[k], keep[k]))
					why = fp_reason[k];
			const char *key = json_string_value(json_object_get(rec, "key"));
			if (!why && json_object_get(seen, key))
				why = "key seen twice";
			if (why) {
				r->left_out++;
				json_object_set_new(r->left_reasons, why, json_integer(
					json_integer_value(json_object_get(r->left_reasons, why)) + 1));
			} else {
				json_object_set_new(seen, key, json_true());
				add_record(r, rec, &res[i][j]);
				meta_record(sets, rec, &res[i][j]);
			}
			fp_free(parts);
		}
		json_decref(seen);
		free_results(res[i], json_array_size(recs[i]));
		json_decref(recs[i]);
		compute(s, r);
		meta_finish(r, sets);
		json_decref(sets);
	}
	unique_labels(s);
	free(recs);
	free(res);
	fp_free(keep);
	return 0;
}

/* ---- bootstrap ------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* the q-quantile of the m sorted values v, linear between order
 * statistics at (m - 1) q (numpy's default) */
static double quantile(const double *v, int m, double q)
{
	double h = (m - 1) * q;
	int a = (int)floor(h), b = a + 1 < m ? a + 1 : a;
	return v[a] + (h - a) * (v[b] - v[a]);
}

/* the 2.5th and 97.5th percentiles of the finite values of v[n] (which
 * are moved to its front and sorted); NaN when none is */
static void interval(double *v, int n, double *lo, double *hi)
{
	int m = 0;
	for (int i = 0; i < n; i++)
		if (isfinite(v[i]))
			v[m++] = v[i];
	qsort(v, m, sizeof(*v), cmp_double);
	*lo = m ? quantile(v, m, 0.025) : NAN;
	*hi = m ? quantile(v, m, 0.975) : NAN;
}

void sum_bootstrap(const struct sum_set *s, const struct sum_run *r, const double *p, int np,
		   int B, uint64_t seed, double *est, double *lo, double *hi)
{
	int nm = s->nk + np, P = r->np;
	/* each problem's metrics once: pass@k (NaN when n < k), fast_p */
	double *per = xcalloc((size_t)P * nm + 1, sizeof(*per));
	for (int i = 0; i < P; i++) {
		const struct sum_problem *pr = &r->p[i];
		struct score_item *it = xcalloc(pr->n + 1, sizeof(*it));
		for (int j = 0; j < pr->n; j++)
			it[j] = (struct score_item){ pr->c[j].outcome == OC_PASS, pr->c[j].speedup };
		for (int k = 1; k <= s->nk; k++)
			per[i * nm + k - 1] = pr->n >= k ? score_pass_at_k(pr->n, pr->correct, k) : NAN;
		for (int q = 0; q < np; q++)
			per[i * nm + s->nk + q] = score_fast_p(it, pr->n, p[q]);
		free(it);
	}
	/* the estimates: as compute() */
	for (int m = 0; m < nm; m++) {
		double t = 0;
		int c = 0;
		for (int i = 0; i < P; i++)
			if (isfinite(per[i * nm + m])) {
				t += per[i * nm + m];
				c++;
			}
		est[m] = c ? t / (m < s->nk ? c : P) : NAN;
	}
	/* the stream: the seed mixed with the run's name (FNV-1a) */
	uint64_t st = 14695981039346656037ull;
	for (const unsigned char *c = (const unsigned char *)r->name; *c; c++)
		st = (st ^ *c) * 1099511628211ull;
	st = mix64(seed ^ mix64(st));
	double *rep = xcalloc((size_t)nm * B + 1, sizeof(*rep));
	double *sum = xcalloc(nm + 1, sizeof(*sum));
	int *cnt = xcalloc(nm + 1, sizeof(*cnt));
	for (int b = 0; b < B && P; b++) {
		memset(sum, 0, nm * sizeof(*sum));
		memset(cnt, 0, nm * sizeof(*cnt));
		for (int d = 0; d < P; d++) {
			st += 0x9e3779b97f4a7c15ull;
			/* a draw in [0, P): the top bits of a 64-bit draw times P */
			int i = (int)(((unsigned __int128)mix64(st) * (unsigned)P) >> 64);
			for (int m = 0; m < nm; m++)
				if (isfinite(per[i * nm + m])) {
					sum[m] += per[i * nm + m];
					cnt[m]++;
				}
		}
		for (int m = 0; m < nm; m++)
			rep[(size_t)m * B + b] = cnt[m] ? sum[m] / (m < s->nk ? cnt[m] : P) : NAN;
	}
	for (int m = 0; m < nm; m++)
		interval(rep + (size_t)m * B, P ? B : 0, &lo[m], &hi[m]);
	free(per);
	free(rep);
	free(sum);
	free(cnt);
}

/* NaN is not JSON: null */
static json_t *jnum(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

/* the 95% bands of pass@k and fast_p at the thresholds, as the page's */
static json_t *bands_json(const struct sum_set *s, const struct sum_run *r)
{
	int nm = s->nk + s->np;
	double est[SUM_MAX_K + SUM_MAX_P], lo[SUM_MAX_K + SUM_MAX_P], hi[SUM_MAX_K + SUM_MAX_P];
	sum_bootstrap(s, r, s->p, s->np, s->resamples, s->seed, est, lo, hi);
	json_t *pk = json_object(), *fp = json_object();
	for (int m = 0; m < nm; m++) {
		char name[32];
		if (m < s->nk)
			snprintf(name, sizeof(name), "%d", m + 1);
		else
			snprintf(name, sizeof(name), "%g", s->p[m - s->nk]);
		json_object_set_new(m < s->nk ? pk : fp, name, json_pack("[o, o]", jnum(lo[m]),
									  jnum(hi[m])));
	}
	return json_pack("{s:s, s:f, s:i, s:I, s:o, s:o}", "method",
			 "percentile bootstrap over problems", "level", 0.95, "resamples",
			 s->resamples, "seed", (json_int_t)s->seed, "pass_at_k", pk, "fast_p", fp);
}

json_t *sum_json(const struct sum_set *s)
{
	json_t *runs = json_array();
	for (int i = 0; i < s->nr; i++) {
		const struct sum_run *r = &s->r[i];
		json_t *pk = json_object(), *fp = json_object(), *oc = json_object(), *cats = json_object();
		json_t *pka = json_object();
		for (int k = 1; k <= s->nk; k++) {
			char name[16];
			snprintf(name, sizeof(name), "%d", k);
			json_object_set_new(pk, name, jnum(r->pass_at[k - 1]));
			json_object_set_new(pka, name, jnum(r->pass_announced[k - 1]));
		}
		for (int q = 0; q < s->np; q++) {
			char name[32];
			snprintf(name, sizeof(name), "%g", s->p[q]);
			json_object_set_new(fp, name, jnum(r->fast_p[q]));
		}
		for (int o = 0; o < OC_COUNT; o++)
			json_object_set_new(oc, sum_outcome_names[o], json_integer(r->oc[o]));
		const char *cat;
		json_t *a;
		json_object_foreach(r->oc_by_cat, cat, a) {
			json_t *m = json_object();
			for (int o = 0; o < OC_COUNT; o++)
				json_object_set(m, sum_outcome_names[o], json_array_get(a, o));
			json_object_set_new(m, "fast_1", jnum(json_real_value(json_object_get(r->fast_by_cat, cat))));
			json_object_set_new(cats, cat, m);
		}
		json_t *probs = json_array();
		for (int j = 0; j < r->np; j++) {
			const struct sum_problem *p = &r->p[j];
			json_t *cs = json_array();
			for (int k = 0; k < p->n; k++) {
				const struct sum_cand *c = &p->c[k];
				json_array_append_new(cs, json_pack("{s:s, s:s?, s:s?, s:s, s:s, s:s?, s:b, "
					"s:o, s:o, s:o}",
					"sample", c->sample, "candidate", c->candidate, "log", c->log,
					"outcome", sum_outcome_names[c->outcome], "outcome_announced",
					sum_outcome_names[c->announced], "outcome_hidden", c->hidden < 0 ? NULL :
					sum_outcome_names[c->hidden], "below_bound", c->below_bound,
					"speedup", jnum(c->speedup),
					"sol", jnum(c->sol), "roofline_fraction", jnum(c->fraction)));
			}
			json_array_append_new(probs, json_pack("{s:i, s:s, s:i, s:i, s:i, s:i, s:o}", "id",
				p->id, "category", p->category, "n", p->n, "correct", p->correct,
				"correct_announced", p->correct_announced, "best", p->best,
				"candidates", cs));
		}
		json_array_append_new(runs, json_pack("{s:s, s:s, s:i, s:i, s:O, s:i, s:o, s:o, s:o, s:o, "
			"s:i, s:o, s:o, s:i, s:o, s:o, s:o}",
			"name", r->name, "dir", r->dir, "records", r->records, "left_out", r->left_out,
			"left_out_reasons", r->left_reasons, "candidates", r->candidates, "pass_at_k", pk,
			"fast_p", fp, "geomean_speedup", jnum(r->geo_raw),
			"geomean_speedup_clamped", jnum(r->geo_clamped), "geomean_n", r->geo_n,
			"mean_sol", jnum(r->mean_sol), "mean_roofline_fraction", jnum(r->mean_fraction),
			"sol_n", r->sol_n, "outcomes", oc, "categories", cats, "problems", probs));
		const struct sum_meta *m = &r->meta;
		json_t *run = json_array_get(runs, json_array_size(runs) - 1);
		json_object_set_new(run, "label", json_string(r->label));
		json_object_set_new(run, "pass_at_k_announced", pka);
		json_object_set_new(run, "hidden", json_pack("{s:i, s:i}", "evaluated", r->hidden_n,
							       "failed", r->hidden_failed));
		json_object_set_new(run, "below_bound", json_integer(r->below_bound));
		if (s->resamples > 0)
			json_object_set_new(run, "ci", bands_json(s, r));
		json_object_set_new(run, "meta", json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, "
			"s:s, s:s, s:s, s:s}", "model", m->model, "provider", m->provider, "mode",
			m->mode, "temperature", m->temperature, "samples", m->samples, "world", m->world,
			"gpu", m->gpu, "driver", m->driver, "cuda_runtime", m->cuda, "nccl", m->nccl,
			"pkb_version", m->pkb, "date", m->date));
	}
	return json_pack("{s:s, s:o, s:s}", "fingerprint", s->fingerprint, "runs", runs,
			 "definitions", sum_definitions);
}

void sum_free(struct sum_set *s)
{
	for (int i = 0; i < s->nr; i++) {
		struct sum_run *r = &s->r[i];
		for (int j = 0; j < r->np; j++) {
			for (int k = 0; k < r->p[j].n; k++) {
				free(r->p[j].c[k].sample);
				free(r->p[j].c[k].candidate);
				free(r->p[j].c[k].log);
			}
			free(r->p[j].c);
		}
		free(r->p);
		free(r->dir);
		free(r->name);
		free(r->label);
		meta_free(&r->meta);
		json_decref(r->left_reasons);
		json_decref(r->oc_by_cat);
		json_decref(r->fast_by_cat);
	}
	free(s->r);
	free(s->fingerprint);
}
