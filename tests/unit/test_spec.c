/*
 * test_spec.c -- the problem SPEC parser (src/spec.c) against the real
 * registry: "all", ids, ranges, names, categories, and the errors.
 */
#include "spec.h"
#include "problem.h"
#include "t.h"

#include <stdlib.h>
#include <string.h>

static int ids(const char *spec, int *out, int max)
{
	char err[256];
	int n = 0;
	const struct pkb_problem **ps = spec_parse(spec, &n, err, sizeof err);
	if (!ps)
		return -1;
	for (int i = 0; i < n && i < max; i++)
		out[i] = ps[i]->id;
	free(ps);
	return n;
}

static int fails_with(const char *spec, const char *want)
{
	char err[256] = "";
	int n = -7;
	const struct pkb_problem **ps = spec_parse(spec, &n, err, sizeof err);
	int ok = !ps && strstr(err, want) != NULL;
	if (!ok)
		fprintf(stderr, "spec '%s': err '%s'\n", spec, err);
	free(ps);
	return ok;
}

int main(void)
{
	int v[128];
	int total = problem_count();
	CHECK(total >= 8);
	CHECK(ids("all", v, 128) == total);
	/* ids ascend, each once */
	int ascending = 1;
	for (int i = 1; i < total; i++)
		ascending &= v[i] > v[i - 1];
	CHECK(ascending);

	CHECK(ids("1-8,13", v, 128) == 9);
	CHECK(v[0] == 1 && v[7] == 8 && v[8] == 13);
	/* order of items does not matter, duplicates fall out */
	CHECK(ids("13,3,1-4,003", v, 128) == 5);
	CHECK(v[0] == 1 && v[3] == 4 && v[4] == 13);
	CHECK(ids("allreduce", v, 128) == 1 && v[0] == 1);
	CHECK(ids("002_allgather", v, 128) == 1 && v[0] == 2);

	/* categories: as written, lowercase with dashes or underscores */
	int n_coll = 0;
	for (int i = 0; i < total; i++)
		n_coll += !strcmp(problem_at(i)->category, "Collective Primitive");
	CHECK(n_coll > 0);
	CHECK(ids("Collective Primitive", v, 128) == n_coll);
	CHECK(ids("collective-primitive", v, 128) == n_coll);
	CHECK(ids("collective_primitive", v, 128) == n_coll);
	int every_coll = 1;
	for (int i = 0; i < n_coll; i++) {
		char id[8];
		snprintf(id, sizeof id, "%d", v[i]);
		every_coll &= !strcmp(problem_find(id)->category, "Collective Primitive");
	}
	CHECK(every_coll);
	CHECK(ids("collective-primitive,1", v, 128) == n_coll);

	CHECK(fails_with("", "empty item"));
	CHECK(fails_with("1,,2", "empty item"));
	CHECK(fails_with("1,", "empty item"));
	CHECK(fails_with("999", "'999' is no problem"));
	CHECK(fails_with("8-1", "backwards"));
	CHECK(fails_with("900-950", "no problem in the range"));
	CHECK(fails_with("nonsense", "'nonsense' is no problem"));
	CHECK(fails_with("1-x", "'1-x' is no problem"));
	return t_done("test_spec");
}
