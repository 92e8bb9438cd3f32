/*
 * validated.c -- `pkb list`'s gpu-validated column: the world sizes at which
 * a problem passed the GPU suite, read from the suite results tools/test-gpu
 * writes (bench/results/ *suite*.jsonl, or $PKB_RESULTS), never a flag kept
 * by hand. The rule, also in docs/RESULTS.md: for each (problem, W, solution)
 * at the default shape the newest record counts (files in name order, which
 * starts with the date, a run's parts before the run: cmp_results; then line
 * order; a record marked not_run is no record); W is listed when the reference and
 * every ok_ and bad_ file now in the problem's solutions/ have such a record
 * and each got the outcome it expected (outcome == expect; a record without
 * a result, e.g. not_run, falls back to its exit code).
 *
 * The vs-original column likewise, from tools/crosscheck's results
 * (*crosscheck*.jsonl): the world sizes at which the newest record of
 * (problem, W) agrees with the original, and the first W where it does not,
 * with what it found ("2,4", "2 layout@4", "-"). A record of the control
 * (tools/crosscheck -g: torch's reduced-precision GEMM reductions) is not
 * the comparison and is skipped.
 */
#include "validated.h"
#include "exitcode.h"
#include "result.h"     /* defines: result_read */
#include "util.h"

#include <dirent.h>
#include <jansson.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

/* File order: by name without ".jsonl", except that a name sorts after
 * the names it is the start of: the parts of one run over several device
 * calls are named after it with a suffix (suite_w8_partial,
 * suite_w8_call1_j3) and the whole run, written last, has the short name
 * (suite_w8). Plain strcmp put the parts after the whole ('.' < '_'). */
static int cmp_results(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	size_t lx = strlen(x) - 6, ly = strlen(y) - 6;   /* both end in .jsonl */
	size_t l = lx < ly ? lx : ly;
	int c = strncmp(x, y, l);
	if (c)
		return c;
	return lx == ly ? 0 : lx < ly ? 1 : -1;
}

/* newest[W][solution base name] = passed (1) or not (0), for one problem */
static int record_passed(json_t *r)
{
	const char *expect = json_string_value(json_object_get(r, "expect"));
	if (!expect)
		return 0;
	/* the case's eval record, read as every reader of one does (result.h);
	 * one that does not read has no verdict: the exit status decides */
	json_t *res = json_object_get(r, "result");
	struct result rr;
	char why[300];
	if (json_is_object(res) && result_read(res, &rr, why, sizeof why) == 0) {
		int same = !strcmp(rr.outcome, expect);
		result_free(&rr);
		return same;
	}
	int want = outcome_parse(expect);
	json_t *ex = json_object_get(r, "exit");
	return want >= 0 && json_is_integer(ex) &&
	       json_integer_value(ex) == outcome_exit_code((enum pkb_outcome)want);
}

static const char *base_name(const char *s)
{
	const char *b = strrchr(s, '/');
	return b ? b + 1 : s;
}

/* every JSON line of the results files whose names contain `kind`, oldest
 * file first (cmp_results), to fn; lines that are not JSON (some early
 * files) are skipped */
static void each_record(const char *kind, void (*fn)(json_t *r, json_t *acc), json_t *acc)
{
	const char *env = getenv("PKB_RESULTS");
	char *dir = env && *env ? xstrdup(env) : xstrfmt("%s/bench/results", pkb_root());
	DIR *d = opendir(dir);
	char **names = NULL;
	size_t n = 0;
	for (struct dirent *e; d && (e = readdir(d));) {
		size_t l = strlen(e->d_name);
		if (strstr(e->d_name, kind) && l > 6 && !strcmp(e->d_name + l - 6, ".jsonl")) {
			names = xrealloc(names, (n + 1) * sizeof *names);
			names[n++] = xstrdup(e->d_name);
		}
	}
	if (d)
		closedir(d);
	qsort(names, n, sizeof *names, cmp_results);
	for (size_t i = 0; i < n; i++) {
		char *path = xstrfmt("%s/%s", dir, names[i]);
		char *txt = read_file(path, NULL);
		for (char *line = txt, *next; line && *line; line = next) {
			next = strchr(line, '\n');
			if (next)
				*next++ = 0;
			else
				next = line + strlen(line);
			json_t *r = json_loads(line, 0, NULL);
			if (r)
				fn(r, acc);
			json_decref(r);
		}
		free(txt);
		free(path);
		free(names[i]);
	}
	free(names);
	free(dir);
}

/* ---- the content a record was made with ---------------------------------------- */

struct files {
	char **rel;   /* paths relative to pkb's root */
	size_t n;
};

static int files_has(const struct files *f, const char *rel)
{
	for (size_t i = 0; i < f->n; i++)
		if (!strcmp(f->rel[i], rel))
			return 1;
	return 0;
}

static void files_add(struct files *f, const char *rel)
{
	f->rel = xrealloc(f->rel, (f->n + 1) * sizeof *f->rel);
	f->rel[f->n++] = xstrdup(rel);
}

/* every regular file below root/rel, recursively */
static int files_walk(struct files *f, const char *root, const char *rel)
{
	char *path = xstrfmt("%s/%s", root, rel);
	DIR *d = opendir(path);
	free(path);
	if (!d)
		return -1;
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		char *sub = xstrfmt("%s/%s", rel, e->d_name), *full = xstrfmt("%s/%s", root, sub);
		struct stat st;
		size_t l = strlen(e->d_name);
		if (stat(full, &st) == 0 && S_ISDIR(st.st_mode))
			files_walk(f, root, sub);
		else if (S_ISREG(st.st_mode) && !(l > 3 && !strcmp(e->d_name + l - 3, ".md")))
			files_add(f, sub);   /* the text (README.md) runs nowhere */
		free(sub);
		free(full);
	}
	closedir(d);
	return 0;
}

/* the problems/lib headers that file f->rel[i] includes, added (and, as
 * the loop reaches them, scanned in turn) */
static void files_lib_includes(struct files *f, const char *root, size_t i)
{
	char *path = xstrfmt("%s/%s", root, f->rel[i]);
	char *txt = read_file(path, NULL);
	free(path);
	for (char *s = txt; s && (s = strstr(s, "#include \""));) {
		s += 10;
		char *q = strchr(s, '"');
		if (!q)
			break;
		char *rel = xstrfmt("problems/lib/%.*s", (int)(q - s), s), *full =
			xstrfmt("%s/%s", root, rel);
		struct stat st;
		if (!strstr(rel, "..") && stat(full, &st) == 0 && S_ISREG(st.st_mode) &&
		    !files_has(f, rel))
			files_add(f, rel);
		free(rel);
		free(full);
		s = q;
	}
	free(txt);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* validated_sha's hash, computed (malloc'd) */
static char *files_sha(const struct pkb_problem *p)
{
	const char *root = pkb_root();
	char *dir = problem_dir(p);
	size_t rl = strlen(root);
	const char *rel = !strncmp(dir, root, rl) && dir[rl] == '/' ? dir + rl + 1 : dir;
	struct files f = { 0 };
	int bad = files_walk(&f, root, rel);
	free(dir);
	for (size_t i = 0; !bad && i < f.n; i++)   /* f.n grows as headers join */
		files_lib_includes(&f, root, i);
	qsort(f.rel, f.n, sizeof *f.rel, cmp_str);
	struct strbuf all = STRBUF_INIT;   /* a problem's files: tens to hundreds of KB */
	for (size_t i = 0; i < f.n; i++) {
		char *path = xstrfmt("%s/%s", root, f.rel[i]);
		size_t len = 0;
		char *txt = read_file(path, &len);
		strbuf_add(&all, f.rel[i], strlen(f.rel[i]) + 1);
		if (txt)
			strbuf_add(&all, txt, len);
		strbuf_add(&all, "", 1);
		free(txt);
		free(path);
		free(f.rel[i]);
	}
	free(f.rel);
	char *hex = NULL;
	if (!bad) {
		hex = xmalloc(65);
		sha256_hex(all.s, all.len, hex);
	}
	strbuf_free(&all);
	return hex;
}

/* the current content hash of the problem named `name` ("001_allreduce"),
 * cached in shas; NULL for a problem pkb does not know */
static const char *current_sha(json_t *shas, const char *name)
{
	json_t *v = json_object_get(shas, name);
	if (!v) {
		const struct pkb_problem *p = problem_find(name);
		char *h = p ? files_sha(p) : NULL;
		v = h ? json_string(h) : json_null();
		json_object_set_new(shas, name, v);
		free(h);
	}
	return json_string_value(v);
}

/* a suite record: "problem W solution" -> passed */
static void suite_record(json_t *r, json_t *newest)
{
	const char *p = json_string_value(json_object_get(r, "problem"));
	const char *sol = json_string_value(json_object_get(r, "solution"));
	const char *shape = json_string_value(json_object_get(r, "shape"));
	json_t *w = json_object_get(r, "world");
	/* a case not run (test-gpu's -t deadline) says nothing: it does not
	 * hide an earlier outcome */
	if (p && sol && json_is_integer(w) && (!shape || !strcmp(shape, "default")) &&
	    !json_is_true(json_object_get(r, "not_run"))) {
		/* a record made with the problem's files as they are now is the
		 * case's outcome, the newest such one (file order) winning; one
		 * made with other files says nothing about these, whatever its
		 * file's name: two runs of one date sort by their machines'
		 * names, not their times (2026-11-28: h200x4's stale records
		 * hid h200x2's fresh ones). Until a current record is seen, a
		 * stale one does make older records without the hash (from
		 * before it was written, taken as they are) stop counting. */
		const char *made = json_string_value(json_object_get(r, "problem_sha256"));
		const char *now = made ? current_sha(json_object_get(newest, ""), p) : NULL;
		int stale = made && (!now || strcmp(made, now));
		char *key = xstrfmt("%s %lld %s", p, (long long)json_integer_value(w),
				    base_name(sol));
		json_t *current = json_object_get(newest, "\x01");   /* keys set by a current record */
		if (made && !stale) {
			json_object_set_new(newest, key, json_boolean(record_passed(r)));
			json_object_set_new(current, key, json_true());
		} else if (!json_object_get(current, key)) {
			json_object_set_new(newest, key, json_boolean(!stale && record_passed(r)));
		}
		free(key);
	}
}

const char *validated_sha(json_t *newest, const struct pkb_problem *p)
{
	char name[160];
	snprintf(name, sizeof name, "%03d_%s", p->id, p->name);
	return current_sha(json_object_get(newest, ""), name);
}

json_t *validated_load(void)
{
	json_t *newest = json_object();   /* "problem W solution" -> true/false */
	json_object_set_new(newest, "", json_object());   /* the problems' content hashes */
	json_object_set_new(newest, "\x01", json_object());
	each_record("suite", suite_record, newest);
	return newest;
}

/* whether a tools/crosscheck record is of -g, the control: its
 * gemm_reductions is not "fp32" (the comparison's), or, in a record from
 * before that field (2026-11-28's fp32off file), a note says -g */
static int crosscheck_control(json_t *r)
{
	const char *g = json_string_value(json_object_get(r, "gemm_reductions"));
	if (g)
		return strcmp(g, "fp32") != 0;
	size_t i;
	json_t *note;
	json_array_foreach(json_object_get(r, "notes"), i, note) {
		const char *s = json_string_value(note);
		if (s && strstr(s, "(-g: the control)"))
			return 1;
	}
	return 0;
}

/* a tools/crosscheck record: "problem W" -> its result; not_run and the
 * control say nothing */
static void crosscheck_record(json_t *r, json_t *newest)
{
	const char *p = json_string_value(json_object_get(r, "problem"));
	const char *res = json_string_value(json_object_get(r, "result"));
	json_t *w = json_object_get(r, "world");
	if (p && res && json_is_integer(w) && strcmp(res, "not_run") && !crosscheck_control(r)) {
		char *key = xstrfmt("%s %lld", p, (long long)json_integer_value(w));
		json_object_set_new(newest, key, json_string(res));
		free(key);
	}
}

json_t *crosscheck_load(void)
{
	json_t *newest = json_object();
	each_record("crosscheck", crosscheck_record, newest);
	return newest;
}

json_t *crosscheck_worlds(json_t *newest, const struct pkb_problem *p, char *buf, size_t len)
{
	char name[160];
	snprintf(name, sizeof name, "%03d_%s ", p->id, p->name);
	size_t off = 0;
	json_t *by_w = json_object();
	const char *worst = NULL;   /* the first result that is not agree, at worst_w */
	int worst_w = 0;
	buf[0] = 0;
	for (int w = 1; w <= 63; w++) {
		char key[192];
		snprintf(key, sizeof key, "%s%d", name, w);
		const char *res = json_string_value(json_object_get(newest, key));
		if (!res)
			continue;
		char ws[8];
		snprintf(ws, sizeof ws, "%d", w);
		json_object_set_new(by_w, ws, json_string(res));
		if (!strcmp(res, "agree")) {
			if (off < len)
				off += snprintf(buf + off, len - off, "%s%d", off ? "," : "", w);
		} else if (!worst) {
			worst = res;
			worst_w = w;
		}
	}
	if (worst && off < len)
		snprintf(buf + off, len - off, "%s%s@%d", off ? " " : "", worst, worst_w);
	if (!buf[0])
		snprintf(buf, len, "-");
	return by_w;
}

/* the world sizes a bad_ file runs at (its pkb-worlds line: tools/test-gpu
 * runs it only there) */
static uint64_t file_worlds(const char *path)
{
	char *txt = read_file(path, NULL);
	uint64_t m = problem_solution_worlds(txt);
	free(txt);
	return m;
}

/* "2,4" or "-" into buf, and the sizes as a JSON array */
json_t *validated_worlds(json_t *newest, const struct pkb_problem *p, char *buf, size_t len)
{
	char *pdir = problem_dir(p), *sdir = xstrfmt("%s/solutions", pdir);
	char name[160];
	snprintf(name, sizeof name, "%03d_%s", p->id, p->name);
	/* the cases: the reference and every ok_ and bad_ file now on disk */
	char **cases = xmalloc(sizeof *cases);
	uint64_t *at = xmalloc(sizeof *at);   /* the W each case is run at */
	size_t nc = 0;
	at[nc] = ~0ull;
	cases[nc++] = xstrdup("reference");
	DIR *d = opendir(sdir);
	for (struct dirent *e; d && (e = readdir(d));)
		if (!strncmp(e->d_name, "ok_", 3) || !strncmp(e->d_name, "bad_", 4)) {
			cases = xrealloc(cases, (nc + 1) * sizeof *cases);
			at = xrealloc(at, (nc + 1) * sizeof *at);
			char *path = xstrfmt("%s/%s", sdir, e->d_name);
			at[nc] = e->d_name[0] == 'b' ? file_worlds(path) : ~0ull;
			free(path);
			cases[nc++] = xstrdup(e->d_name);
		}
	if (d)
		closedir(d);
	json_t *arr = json_array();
	size_t off = 0;
	buf[0] = 0;
	for (int w = 1; w <= 63; w++) {
		int all = 1;
		for (size_t i = 0; i < nc && all; i++) {
			if (!((at[i] >> w) & 1))
				continue;
			char *key = xstrfmt("%s %d %s", name, w, cases[i]);
			all = json_is_true(json_object_get(newest, key));
			free(key);
		}
		if (!all)
			continue;
		json_array_append_new(arr, json_integer(w));
		if (off < len)
			off += snprintf(buf + off, len - off, "%s%d", off ? "," : "", w);
	}
	if (!buf[0])
		snprintf(buf, len, "-");
	for (size_t i = 0; i < nc; i++)
		free(cases[i]);
	free(cases);
	free(at);
	free(sdir);
	free(pdir);
	return arr;
}
