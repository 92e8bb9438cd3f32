/*
 * dump_problems.c -- everything a problem's host side hands the harness, one
 * line per fact, for proving that a refactor of problem code changes none of
 * it: build it before and after, run both and diff (`make
 * build/tests/dump_problems && build/tests/dump_problems 028 029 > x`; no
 * argument: every problem).
 *
 * For each problem, W = 2, 4, 8 (those it takes), bf16, fp32 and fp16, two
 * base shapes, two seeds, two trials and every rank: describe()'s verdict
 * (or its reason), every input (name, dtype, shape, distribution, same on
 * all ranks) with an FNV-1a hash of gen_host's bytes for the host-drawn ones,
 * every output's tolerance (doubles as %a: bit for bit), the parameters and
 * the cost. Not a test (its name has no test_ prefix): it passes or fails
 * nothing, the diff does.
 */
#include "problem.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t fnv1a(const void *buf, size_t n)
{
	const unsigned char *p = buf;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static void shape(const struct pkb_tensor_desc *t)
{
	char s[160];
	tensor_desc_shape_str(t, s, sizeof s);
	printf(" %s dtype %d", s, (int)t->dtype);
}

static void dump_rank(const struct pkb_problem *p, const struct pkb_dims *d, uint64_t seed)
{
	struct pkb_io io;
	printf("%03d W%d M%" PRId64 " N%" PRId64 " dt%d s%" PRIu64 " t%d r%d:", p->id, d->world,
	       d->m, d->n, (int)d->dtype, seed, d->trial, d->rank);
	if (problem_describe(p, d, &io) < 0) {
		printf(" refused: %s\n", io.err);
		return;
	}
	printf(" ok\n");
	/* the harness's keys in kind: one for the structure all ranks share,
	 * one per (rank, tensor) */
	struct pkb_dims g = *d;
	g.common_seed = pkb_rng_mix(seed ^ (uint64_t)p->id << 32 ^ (uint64_t)d->trial << 48);
	for (int i = 0; i < io.n_in; i++) {
		const struct pkb_tensor_desc *t = &io.in[i];
		printf("  in %d %s", i, t->name);
		shape(t);
		printf(" dist %d %a %a same %d", (int)t->dist.kind, t->dist.a, t->dist.b,
		       t->same_on_all_ranks);
		if (t->dist.kind == PKB_DIST_HOST) {
			uint64_t key = pkb_rng_mix(g.common_seed ^ (uint64_t)(t->same_on_all_ranks ? 0xffff : d->rank) << 8
						   ^ (uint64_t)i);
			size_t bytes = tensor_desc_bytes(t);
			void *buf = calloc(1, bytes ? bytes : 1);
			int rc = p->gen_host(&g, i, key, buf, bytes);
			printf(" gen %d %016" PRIx64, rc, fnv1a(buf, bytes));
			free(buf);
		}
		printf("\n");
	}
	for (int i = 0; i < io.n_out; i++) {
		const struct pkb_tensor_desc *t = &io.out[i];
		const struct pkb_tol *l = &t->tol;
		printf("  out %d %s", i, t->name);
		shape(t);
		printf(" tol %a %a %a %a exact %d axis %d %" PRId64 " %" PRId64 "\n", l->rtol, l->atol,
		       l->terms, l->l2, l->exact, l->scale_axis, l->scale_len, l->scale_stride);
	}
	for (int i = 0; i < io.n_params; i++)
		printf("  param %s %a\n", io.params[i].name, io.params[i].value);
	if (p->cost) {
		struct pkb_cost c = { .hbm_bytes = -1 };
		p->cost(d, &c);
		printf("  cost net %a hbm %a flops %a kind %d note %s\n", c.net_bytes, c.hbm_bytes,
		       c.flops, (int)c.flop_kind, c.note ? c.note : "-");
	}
}

static void dump(const struct pkb_problem *p)
{
	static const int worlds[] = { 2, 4, 8 };
	static const pkb_dtype dtypes[] = { PKB_BF16, PKB_FP32, PKB_FP16 };
	static const int64_t shapes[][2] = { { 1024, 1024 }, { 512, 2048 } };
	static const uint64_t seeds[] = { 1, 0x5eed };
	for (int w = 0; w < 3; w++) {
		if (!problem_world_ok(p, worlds[w]))
			continue;
		for (int t = 0; t < 3; t++)
			for (int s = 0; s < 2; s++)
				for (int e = 0; e < 2; e++)
					for (int trial = 0; trial < 2; trial++)
						for (int r = 0; r < worlds[w]; r++) {
							struct pkb_dims d = {
								.world = worlds[w], .rank = r,
								.m = shapes[s][0], .n = shapes[s][1],
								.dtype = dtypes[t], .trial = trial,
							};
							dump_rank(p, &d, seeds[e]);
						}
	}
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		for (int i = 0; i < problem_count(); i++)
			dump(problem_at(i));
		return 0;
	}
	for (int i = 1; i < argc; i++) {
		const struct pkb_problem *p = problem_find(argv[i]);
		if (!p) {
			fprintf(stderr, "dump_problems: no problem '%s'\n", argv[i]);
			return 1;
		}
		dump(p);
	}
	return 0;
}
