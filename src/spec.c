/*
 * spec.c -- the problem SPEC parser (spec.h). The registry is small (87
 * problems at most), so each item marks a flag per registry slot and the
 * result is read back in registry order, which is id order: no sort, and
 * duplicates ("1-8,3") fall out for free.
 */
#include "spec.h"
#include "problem.h"
#include "util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "Tensor Parallel" matches "tensor parallel", "tensor-parallel" and
 * "tensor_parallel": a category typed in a shell without quotes */
static int category_eq(const char *cat, const char *s)
{
	for (; *cat && *s; cat++, s++) {
		int a = tolower((unsigned char)*cat), b = tolower((unsigned char)*s);
		if (a == ' ')
			a = '-';
		if (b == ' ' || b == '_')
			b = '-';
		if (a != b)
			return 0;
	}
	return !*cat && !*s;
}

/* strtol over the whole of [s, e): the id, or -1 */
static long parse_id(const char *s, const char *e)
{
	if (s == e || e - s > 6)
		return -1;
	long v = 0;
	for (const char *c = s; c < e; c++) {
		if (!isdigit((unsigned char)*c))
			return -1;
		v = v * 10 + (*c - '0');
	}
	return v;
}

static int mark_item(const char *item, char *mark, char *err, size_t errn)
{
	int np = problem_count(), hits = 0;
	if (!*item) {
		snprintf(err, errn, "empty item in the problem list");
		return -1;
	}
	if (!strcmp(item, "all")) {
		memset(mark, 1, np);
		return 0;
	}
	const char *dash = strchr(item, '-');
	long lo = -1, hi = -1;
	if (dash && dash != item) {
		lo = parse_id(item, dash);
		hi = parse_id(dash + 1, dash + strlen(dash));
	}
	if (lo >= 0 && hi >= 0) {
		if (lo > hi) {
			snprintf(err, errn, "range '%s' runs backwards", item);
			return -1;
		}
		for (int i = 0; i < np; i++)
			if (problem_at(i)->id >= lo && problem_at(i)->id <= hi)
				mark[i] = 1, hits++;
		if (!hits) {
			snprintf(err, errn, "no problem in the range '%s'", item);
			return -1;
		}
		return 0;
	}
	const struct pkb_problem *p = problem_find(item);
	for (int i = 0; i < np; i++) {
		if (problem_at(i) == p || category_eq(problem_at(i)->category, item))
			mark[i] = 1, hits++;
	}
	if (!hits) {
		snprintf(err, errn, "'%s' is no problem id, name or category", item);
		return -1;
	}
	return 0;
}

const struct pkb_problem **spec_parse(const char *spec, int *n, char *err, size_t errn)
{
	int np = problem_count();
	char *mark = xcalloc(np ? np : 1, 1);
	char *copy = xstrdup(spec);
	int bad = 0;
	char *item = copy;
	for (;;) {
		char *comma = strchr(item, ',');
		if (comma)
			*comma = 0;
		if (mark_item(item, mark, err, errn) < 0) {
			bad = 1;
			break;
		}
		if (!comma)
			break;
		item = comma + 1;
	}
	free(copy);
	if (bad) {
		free(mark);
		return NULL;
	}
	const struct pkb_problem **out = xcalloc(np ? np : 1, sizeof *out);
	*n = 0;
	for (int i = 0; i < np; i++)
		if (mark[i])
			out[(*n)++] = problem_at(i);
	free(mark);
	return out;
}
