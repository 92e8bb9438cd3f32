/*
 * test_problems.c -- every problem folder is complete and every descriptor
 * is sane, at every world size it claims among 2, 4 and 8 (the W = 8 paths
 * are checked here even where no 8-GPU machine is at hand): unique ids that
 * match the folder, shapes positive, inputs random (never constants), an
 * output, a README, a reference, an ok_ candidate, bad_ candidates naming
 * their expected category; no problem includes another's folder.
 */
#include "t.h"
#include "exitcode.h"
#include "problem.h"
#include "util.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Code that problems share lives in problems/lib/ (on the include path of
 * problem.c and references): no file of a problem folder, nor of lib,
 * includes another folder's ("../"), and solutions stay standalone. */
static int is_code(const char *name)
{
	const char *dot = strrchr(name, '.');
	return dot && (!strcmp(dot, ".c") || !strcmp(dot, ".h") || !strcmp(dot, ".cu") ||
		       !strcmp(dot, ".cuh"));
}

static void check_no_climb(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (!is_code(e->d_name))
			continue;
		char *path = xstrfmt("%s/%s", dir, e->d_name);
		char *text = read_file(path, NULL);
		for (const char *s = text ? strstr(text, "#include") : NULL; s;
		     s = strstr(s + 1, "#include")) {
			const char *q = s + strlen("#include");
			q += strspn(q, " \t");
			CHECKF(strncmp(q, "\"../", 4), "%s includes another folder's file: %.40s "
			       "(shared code goes to problems/lib)", path, s);
		}
		free(text);
		free(path);
	}
	if (d)
		closedir(d);
}

static void check_folder(const struct pkb_problem *p)
{
	char *dir = problem_dir(p);
	char *f;
	CHECKF(access(f = xstrfmt("%s/problem.c", dir), R_OK) == 0, "%s", f);
	free(f);
	CHECKF(access(f = xstrfmt("%s/README.md", dir), R_OK) == 0, "%s", f);
	free(f);
	CHECKF(access(f = xstrfmt("%s/reference.cu", dir), R_OK) == 0, "%s", f);
	free(f);
	char *sdir = xstrfmt("%s/solutions", dir);
	DIR *d = opendir(sdir);
	int ok = 0, bad = 0;
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (!strncmp(e->d_name, "ok_", 3))
			ok++;
		if (strncmp(e->d_name, "bad_", 4))
			continue;
		bad++;
		char *path = xstrfmt("%s/%s", sdir, e->d_name);
		char *text = read_file(path, NULL);
		char *m = text ? strstr(text, "pkb-expect:") : NULL;
		char cat[32] = "";
		if (m)
			sscanf(m + 11, " %31[a-z_]", cat);
		int o = outcome_parse(cat);
		CHECKF(o > OUT_PASS && o < OUT_ENV_ERROR, "%s: no valid pkb-expect line", path);
		/* pkb-worlds: world sizes the problem takes, or the file never runs */
		uint64_t w = problem_solution_worlds(text);
		CHECKF(w != 0, "%s: a pkb-worlds line without world sizes", path);
		for (int x = 0; x < 64 && w != ~0ull; x++)
			CHECKF(!((w >> x) & 1) || problem_world_ok(p, x),
			       "%s: pkb-worlds names W = %d, which %03d refuses (0: a size outside 1-63)",
			       path, x, p->id);
		free(text);
		free(path);
	}
	if (d)
		closedir(d);
	check_no_climb(dir);
	check_no_climb(sdir);
	CHECKF(ok >= 1, "%03d_%s has no ok_ candidate", p->id, p->name);
	CHECKF(bad >= 1, "%03d_%s has no bad_ candidate", p->id, p->name);
	free(sdir);
	free(dir);
}

int main(void)
{
	CHECK(problem_count() >= 1);
	for (int i = 0; i < problem_count(); i++) {
		const struct pkb_problem *p = problem_at(i);
		CHECK(p->id >= 1 && p->id <= 999 && p->name && *p->name && p->describe);
		CHECK(p->title && p->category && p->origin);
		if (i)
			CHECKF(problem_at(i - 1)->id < p->id, "ids out of order at %d", p->id);
		char key[8];
		snprintf(key, sizeof key, "%d", p->id);
		CHECK(problem_find(key) == p && problem_find(p->name) == p);
		check_folder(p);
		int worlds[] = { 2, 4, 8 }, valid = 0;
		for (int w = 0; w < 3; w++) {
			if (!problem_world_ok(p, worlds[w]))
				continue;
			for (int rank = 0; rank < worlds[w]; rank++) {
				struct pkb_dims d = { .world = worlds[w], .rank = rank, .m = 1024,
						      .n = 1024, .dtype = PKB_BF16 };
				struct pkb_io io;
				int rc = problem_describe(p, &d, &io);
				CHECKF(rc == 0, "%03d W=%d rank %d: %s", p->id, worlds[w], rank, io.err);
				if (rc)
					continue;
				valid++;
				for (int k = 0; k < io.n_in; k++) {
					const struct pkb_dist *ds = &io.in[k].dist;
					int random = ds->kind == PKB_DIST_HOST ||
						     (ds->kind == PKB_DIST_NORMAL ? ds->b > 0 : ds->b > ds->a + (ds->kind == PKB_DIST_RANDINT ? 1 : 0));
					CHECKF(random, "%03d input '%s' is not random", p->id, io.in[k].name);
				}
			}
		}
		CHECKF(valid > 0, "%03d is valid at none of W = 2, 4, 8", p->id);
		/* an invalid instance is refused with a reason, not a crash */
		struct pkb_dims bad = { .world = 4, .m = 0, .n = 1024, .dtype = PKB_BF16 };
		struct pkb_io io;
		CHECK(problem_describe(p, &bad, &io) < 0 && io.err[0]);
	}
	/* `pkb run --save` metadata: the params as JSON that reads back exactly
	 * (tools/crosscheck.py checks the original's kept scalars against them) */
	struct pkb_dims d40 = { .world = 4, .m = 1024, .n = 1024, .dtype = PKB_BF16 };
	struct pkb_io io40;
	CHECK(problem_describe(problem_find("40"), &d40, &io40) == 0);
	char *pj = problem_params_json(&io40);
	CHECKF(!strcmp(pj, "{\"lr\": 0.001, \"beta1\": 0.9, \"beta2\": 0.999, \"eps\": 1e-08}"),
	       "%s", pj);
	free(pj);
	struct pkb_io few = { .n_params = 3 };
	snprintf(few.params[0].name, sizeof few.params[0].name, "a\"b");
	few.params[0].value = 0.1 + 0.2;   /* needs all 17 digits */
	snprintf(few.params[1].name, sizeof few.params[1].name, "inf");
	few.params[1].value = -INFINITY;
	snprintf(few.params[2].name, sizeof few.params[2].name, "n[0]");
	few.params[2].value = -100;
	pj = problem_params_json(&few);
	CHECKF(!strcmp(pj, "{\"a\\\"b\": 0.30000000000000004, \"inf\": -Infinity, \"n[0]\": -100}"),
	       "%s", pj);
	free(pj);
	few.n_params = 0;
	CHECK(!strcmp(pj = problem_params_json(&few), "{}"));
	free(pj);
	char *lib = xstrfmt("%s/problems/lib", pkb_root());
	check_no_climb(lib);
	free(lib);
	CHECK(problem_find("nonexistent") == NULL && problem_find("999") == NULL);
	CHECK(problem_find("001_allreduce") && problem_find("1") && problem_find("allreduce"));
	return t_done("test_problems");
}
