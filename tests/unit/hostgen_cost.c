/*
 * hostgen_cost.c -- what drawing a problem's host-generated inputs costs on
 * this CPU: for each problem with PKB_DIST_HOST inputs (or those named), at
 * its default shape, bf16, for W = 2 and 4 (those it takes), the seconds of
 * one rank's gen_host over all of its host-drawn inputs (rank 0, the
 * median of 3). The timing harness draws a group's inputs anew for every
 * timed call (timing.c:perf_block), so this times warmup + iters calls of
 * each solution: `make build/tests/hostgen_cost && build/tests/hostgen_cost
 * [IDS]`. Not a test (no test_ prefix): it passes or fails nothing.
 */
#include "problem.h"
#include "util.h"   /* defines: now_s */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void one(const struct pkb_problem *p, int world)
{
	struct pkb_dims d = { .world = world, .rank = 0, .m = 1024, .n = 1024,
			      .dtype = PKB_BF16, .trial = 1, .common_seed = 0x1234 };
	struct pkb_io io;
	if (problem_describe(p, &d, &io) < 0)
		return;
	size_t bytes = 0;
	int n = 0;
	double t[3];
	for (int k = 0; k < 3; k++) {
		double t0 = now_s();
		for (int i = 0; i < io.n_in; i++) {
			const struct pkb_tensor_desc *x = &io.in[i];
			if (x->dist.kind != PKB_DIST_HOST)
				continue;
			size_t b = tensor_desc_bytes(x);
			void *buf = calloc(1, b ? b : 1);
			if (p->gen_host(&d, i, 0x9e3779b97f4a7c15ull + (uint64_t)i, buf, b) != 0)
				printf("%03d W%d: gen_host of '%s' failed\n", p->id, world, x->name);
			free(buf);
			if (k == 0) {
				bytes += b;
				n++;
			}
		}
		t[k] = now_s() - t0;
	}
	if (!n)
		return;
	qsort(t, 3, sizeof *t, cmp_d);
	printf("%03d_%s W=%d: %d host-drawn inputs, %.1f MB, %.4f s\n", p->id, p->name, world, n,
	       bytes / 1e6, t[1]);
}

int main(int argc, char **argv)
{
	for (int k = 0; k < problem_count(); k++) {
		const struct pkb_problem *p = problem_at(k);
		int want = argc < 2;
		for (int a = 1; a < argc; a++)
			want |= atoi(argv[a]) == p->id;
		if (!want || !p->gen_host)
			continue;
		one(p, 2);
		one(p, 4);
	}
	return 0;
}
