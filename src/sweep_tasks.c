/*
 * sweep_tasks.c -- the tasks of a sweep (sweep_tasks.h): the candidates a
 * run directory holds, their keys and shards, and the hidden shapes.
 */
#define _GNU_SOURCE
#include "sweep_tasks.h"
#include "dtype.h"     /* defines: dtype_name */
#include "problem.h"
#include "spec.h"      /* defines: spec_parse */
#include "util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* the problems SPEC selects (src/spec.c, as pkb generate), as a set of ids */
int sweep_spec_select(const char *spec, unsigned char *want, size_t nwant)
{
	char err[256];
	int n;
	const struct pkb_problem **ps = spec_parse(spec, &n, err, sizeof err);
	if (!ps)
		return error("%s", err);
	memset(want, 0, nwant);
	for (int i = 0; i < n; i++)
		if (ps[i]->id > 0 && (size_t)ps[i]->id < nwant)
			want[ps[i]->id] = 1;
	free(ps);
	return 0;
}

/* FNV-1a of a string, then mixed (splitmix64): strings that differ in a
 * digit or two land far apart */
static uint64_t hash_str(const char *str)
{
	uint64_t h = 14695981039346656037ull;
	for (const unsigned char *c = (const unsigned char *)str; *c; c++)
		h = (h ^ *c) * 1099511628211ull;
	return mix64(h);
}

/* the shard of a key: a hash of the key alone, so that every task of an
 * array and every later submission agree without a shared plan file,
 * whatever else was recorded meanwhile */
int sweep_shard_of(const char *key, int n)
{
	return (int)(hash_str(key) % (uint64_t)n);
}

/* ---- the hidden shape (issue 44, item 10; docs/SWEEP.md) ---- */

/* What a hidden shape is drawn from: each dimension of the announced shape
 * scaled by 1/2, 3/4, 1, 5/4, 3/2 or 2 (not both by 1), rounded to a
 * multiple of that dimension's alignment (the largest power of two that
 * divides it, at most 256). A kernel written for 1024 x 1024 meets
 * 768 x 2048, never a tail the announced shape did not ask it to handle
 * (--hidden-shape 1001x999 asks that). At most 2x per dimension: the
 * untimed check costs about what the announced evaluation's trials do. */
static const int hidden_scale[][2] = { { 1, 2 }, { 3, 4 }, { 1, 1 }, { 5, 4 }, { 3, 2 }, { 2, 1 } };
#define HIDDEN_SCALES ((int)ARRAY_SIZE(hidden_scale))

static long long hidden_dim(long long x, int num, int den)
{
	long long a = x & -x;   /* the largest power of two dividing x */
	if (a > 256)
		a = 256;
	long long q = (2 * x * num + den * a) / (2 * den * a);   /* x num / den in units of a */
	return q < 1 ? a : q * a;
}

/* The draw's seed: DIR/run.json's args (which generate and agent refuse to
 * change on resume; its dates are left out) and the announced instance, so
 * that a resumed sweep, each --slurm task and `--status` draw the same */
uint64_t sweep_hidden_seed(const struct sweep *s)
{
	char *args = s->run_args ? json_dumps(s->run_args, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	char *txt = xstrfmt("%s|W%d|%s|%lldx%lld", args ? args : "-", s->W, dtype_name(s->eval.dtype),
			    s->eval.m, s->eval.n);
	uint64_t h = hash_str(txt);
	free(txt);
	free(args);
	return h;
}

/* does p take (W, m, n, dtype)? why (may be NULL) gets its reason if not */
static int problem_takes(const struct pkb_problem *p, const struct sweep *s, long long m,
			 long long n, char *why, size_t nwhy)
{
	struct pkb_io *io = xcalloc(1, sizeof *io);
	struct pkb_dims d = { .world = s->W, .m = m, .n = n,
		.dtype = s->eval.dtype };
	int ok = problem_describe(p, &d, io) == 0;
	if (!ok && why)
		snprintf(why, nwhy, "%s", io->err);
	free(io);
	return ok;
}

/* The hidden shape of a problem (1 <= problem < 1024), worked out once:
 * --hidden-shape's when the problem takes it; else the first of the
 * scaled shapes, in the order the run's seed starts at, that the problem
 * takes (problem_describe, as the skips below and tools/test-gpu's -s):
 * one shape for the whole sweep wherever the problems allow it. */
static const struct hidden *hidden_for(struct sweep *s, int problem)
{
	struct hidden *h = &s->hid[problem];
	if (h->known)
		return h;
	h->known = 1;
	char id[16], why[300] = "";
	snprintf(id, sizeof id, "%d", problem);
	const struct pkb_problem *p = problem_find(id);
	if (!p) {
		h->why = xstrfmt("no problem %03d", problem);
		return h;
	}
	if (s->hidden_m) {
		if (problem_takes(p, s, s->hidden_m, s->hidden_n, why, sizeof why)) {
			h->m = s->hidden_m;
			h->n = s->hidden_n;
		} else {
			h->why = xstrfmt("%lldx%lld refused: %s", s->hidden_m, s->hidden_n, why);
		}
		return h;
	}
	int total = HIDDEN_SCALES * HIDDEN_SCALES, start = (int)(s->hidden_seed % (uint64_t)total);
	for (int k = 0; k < total && !h->m; k++) {
		int i = (start + k) % total;
		long long m = hidden_dim(s->eval.m, hidden_scale[i / HIDDEN_SCALES][0],
					 hidden_scale[i / HIDDEN_SCALES][1]);
		long long n = hidden_dim(s->eval.n, hidden_scale[i % HIDDEN_SCALES][0],
					 hidden_scale[i % HIDDEN_SCALES][1]);
		if ((m != s->eval.m || n != s->eval.n) && problem_takes(p, s, m, n, NULL, 0)) {
			h->m = m;
			h->n = n;
		}
	}
	if (!h->m)
		h->why = xstrfmt("it takes none of the %d scaled shapes at W = %d", total - 1, s->W);
	return h;
}

/* a timed sweep whose timing is not eval's default: warm, 100 calls after 500 */
int sweep_timing_given(const struct sweep *s)
{
	return s->perf && (s->eval.timing != PERF_WARM ||
			   s->eval.iters != 100 || s->eval.warmup != 500);
}

static void add_task(struct sweep *s, int problem, const char *stem, const char *path)
{
	if (problem < 1 || problem >= (int)sizeof(s->want) || !s->want[problem])
		return;
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		s->t = xrealloc(s->t, s->cap * sizeof(*s->t));
	}
	struct task *t = &s->t[s->n];
	memset(t, 0, sizeof(*t));
	t->problem = problem;
	t->sample = xstrdup(stem);
	strcpy(t->sha, "none");
	if (path) {
		t->path = xstrdup(path);
		if (sha256_file_hex(path, t->sha) < 0) {
			warning("cannot read %s: skipped", path);
			free(t->sample);
			free(t->path);
			return;
		}
	}
	/* the key: what makes two evaluations the same one */
	t->key = xstrfmt("%03d|%s|W%d|t%d|%s|tol%s/%s|pkb%s|%s", problem, stem, s->W, s->trials,
			 s->perf ? "perf" : "noperf", s->atol ? s->atol : "-", s->rtol ? s->rtol : "-",
			 PKB_VERSION, t->sha);
	/* an instance other than eval's default says so (keys of sweeps
	 * without these options stay as they were) */
	if (s->dtype || s->m_arg || s->n_arg) {
		char *k = xstrfmt("%s|%s|m%s|n%s", t->key, s->dtype ? s->dtype : "-",
				  s->m_arg ? s->m_arg : "-", s->n_arg ? s->n_arg : "-");
		free(t->key);
		t->key = k;
	}
	if (s->backend && strcmp(s->backend, "cuda")) {
		char *k = xstrfmt("%s|b%s", t->key, s->backend);
		free(t->key);
		t->key = k;
	}
	/* so does a timing other than eval's default (--timing, --iters,
	 * --warmup): it is another measurement */
	if (sweep_timing_given(s)) {
		char *k = xstrfmt("%s|%s|it%d|wu%d", t->key, perf_mode_name(s->eval.timing),
				  s->eval.iters, s->eval.warmup);
		free(t->key);
		t->key = k;
	}
	/* and the hidden shape: a second evaluation in the same record (off:
	 * the keys of sweeps before it) */
	if (!s->hidden_off) {
		const struct hidden *h = hidden_for(s, problem);
		char *k = h->m ? xstrfmt("%s|h%lldx%lld", t->key, h->m, h->n)
			       : xstrfmt("%s|hnone", t->key);
		free(t->key);
		t->key = k;
	}
	s->n++;
}

/* the logs of an evaluation, relative to the run directory: eval's output
 * (.log) and, beside it, the ranks' logs (.ranks/) */
char *sweep_task_log(const struct task *t, const char *ext)
{
	return xstrfmt("logs/%03d/%s%s", t->problem, t->sample, ext);
}

static int has_suffix(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);
	return a >= b && !strcmp(s + a - b, suf);
}

/* a candidate's file: .cu, or .py (the triton backend's); the stem's
 * length, 0 when neither */
static size_t cand_stem(const char *name)
{
	size_t n = strlen(name);
	return has_suffix(name, ".cu") ? n - 3 : has_suffix(name, ".py") ? n - 3 : 0;
}

/* DIR/NNN/ *.cu and *.py (and, with replies, DIR/../replies/NNN/ *.json
 * lacking one) */
static void scan_problem_dir(struct sweep *s, const char *dir, int problem, const char *replies)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t k = cand_stem(e->d_name);
		if (!k)
			continue;
		char *stem = xstrdup(e->d_name);
		stem[k] = 0;
		char *path = xstrfmt("%s/%s", dir, e->d_name);
		add_task(s, problem, stem, path);
		free(stem);
		free(path);
	}
	closedir(d);
	if (!replies || !(d = opendir(replies)))
		return;
	while ((e = readdir(d))) {
		if (!has_suffix(e->d_name, ".json"))
			continue;
		char *stem = xstrdup(e->d_name);
		stem[strlen(stem) - 5] = 0;
		char *cu = xstrfmt("%s/%s.cu", dir, stem), *py = xstrfmt("%s/%s.py", dir, stem);
		if (access(cu, F_OK) != 0 && access(py, F_OK) != 0)
			add_task(s, problem, stem, NULL);
		free(cu);
		free(py);
		free(stem);
	}
	closedir(d);
}

static int cmp_task(const void *a, const void *b)
{
	const struct task *x = a, *y = b;
	if (x->problem != y->problem)
		return x->problem - y->problem;
	return strcmp(x->sample, y->sample);
}

void sweep_scan(struct sweep *s, const char *root)
{
	char *cand = xstrfmt("%s/candidates", root);
	struct stat st;
	int gen = stat(cand, &st) == 0 && S_ISDIR(st.st_mode);
	const char *base = gen ? cand : root;
	DIR *d = opendir(base);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d))) {
			char *end;
			long id = strtol(e->d_name, &end, 10);
			if (end == e->d_name)
				continue;
			char *p = xstrfmt("%s/%s", base, e->d_name);
			if (!*end && stat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
				char *rep = gen ? xstrfmt("%s/replies/%s", root, e->d_name) : NULL;
				scan_problem_dir(s, p, (int)id, rep);
				free(rep);
			} else if (*end == '_' && cand_stem(e->d_name)) {
				char *stem = xstrdup(e->d_name);
				stem[cand_stem(e->d_name)] = 0;
				add_task(s, (int)id, stem, p);
				free(stem);
			}
			free(p);
		}
		closedir(d);
	}
	free(cand);
	qsort(s->t, s->n, sizeof(*s->t), cmp_task);
}
