/*
 * t.h -- the unit-test harness: CHECK counts, t_done() prints
 * "<file>: N passed, N failed" and gives the exit status. tools/run-tests
 * adds the files up into the final "N passed, N failed" line.
 */
#ifndef PKB_T_H
#define PKB_T_H

#include <stdio.h>

static int t_passed, t_failed;

#define CHECK(cond) do { \
	if (cond) { t_passed++; } else { t_failed++; \
		fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); } \
} while (0)

#define CHECKF(cond, ...) do { \
	if (cond) { t_passed++; } else { t_failed++; \
		fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
		fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } \
} while (0)

static inline int t_done(const char *name)
{
	printf("%s: %d passed, %d failed\n", name, t_passed, t_failed);
	return t_failed ? 1 : 0;
}

#endif
