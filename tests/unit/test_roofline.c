/*
 * test_roofline.c -- hardware files, cost models against hand-computed
 * values, the bound and its bottleneck, and the speed-of-light score.
 */
#define _GNU_SOURCE
#include "t.h"
#include "problem.h"
#include "roofline.h"
#include "util.h"

#include <math.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MiB 1048576.0

static int near(double a, double b)
{
	return fabs(a - b) <= 1e-9 * fabs(b) + 1e-15;
}

static void bounds(const char *problem, const char *hw, int w, long long m, long long n,
		   struct roofline *r)
{
	struct hw_spec h;
	char err[600];
	memset(r, 0, sizeof *r);
	CHECKF(hw_load(hw, &h, err, sizeof err) == 0, "%s", err);
	struct pkb_dims d = { .world = w, .m = m, .n = n, .dtype = PKB_BF16 };
	const struct pkb_problem *p = problem_find(problem);
	CHECK(p != NULL);
	if (p)
		CHECKF(roofline_compute(p, &d, &h, r, err, sizeof err) == 0, "%s", err);
}

int main(void)
{
	struct hw_spec h;
	char err[600];

	/* every shipped machine loads, with the per-GPU figures of docs/HARDWARE.md */
	const char *names[] = { "h100_8", "h200_8", "h200_4", "b200_8", "b200_72" };
	for (int i = 0; i < 5; i++)
		CHECKF(hw_load(names[i], &h, err, sizeof err) == 0, "%s: %s", names[i], err);
	CHECK(hw_load("h200_4", &h, err, sizeof err) == 0 && h.gpus == 4 && h.net_bw == 450e9 &&
	      h.hbm_bw == 4.8e12 && h.flops_bf16 == 989e12);
	CHECK(hw_load("b200_72", &h, err, sizeof err) == 0 && h.gpus == 72 && h.net_bw == 900e9);
	CHECK(hw_load("h300_2", &h, err, sizeof err) < 0 && strstr(err, "known: ") &&
	      strstr(err, "h200_4"));
	CHECK(hw_load("../etc/passwd", &h, err, sizeof err) < 0 && strstr(err, "not a hardware name"));

	/* a malformed file names the field; a broken one its line */
	char path[] = "/tmp/pkb-hw.XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");
	fputs("{\"gpus\": 4, \"sm_count\": 132, \"l2_bytes\": 1, \"hbm_bytes\": 1, \"hbm_bw\": 1,"
	      " \"net_bw\": -5, \"flops\": {}}", f);
	fclose(f);
	CHECK(hw_load_file(path, &h, err, sizeof err) < 0 && strstr(err, "'net_bw'"));
	f = fopen(path, "w");
	fputs("{\"gpus\": 4, \"sm_count\": 132, \"l2_bytes\": 1, \"hbm_bytes\": 1, \"hbm_bw\": 1,"
	      " \"nlt_bw\": 5, \"flops\": {\"bf16\": 1, \"fp16\": 1, \"fp8\": 1, \"tf32\": 1,"
	      " \"fp32\": 1}}", f);
	fclose(f);
	CHECK(hw_load_file(path, &h, err, sizeof err) < 0 && strstr(err, "unknown key 'nlt_bw'"));
	f = fopen(path, "w");
	fputs("{\"gpus\": 4, \"sm_count\": 132, \"l2_bytes\": 1, \"hbm_bytes\": 1, \"hbm_bw\": 1,"
	      " \"flops\": {\"bf16\": 1, \"fp16\": 1, \"fp8\": 1, \"tf32\": 1, \"fp32\": 1,"
	      " \"bf61\": 2}}", f);
	fclose(f);
	CHECK(hw_load_file(path, &h, err, sizeof err) < 0 && strstr(err, "unknown key 'bf61'"));
	f = fopen(path, "w");
	fputs("{\"gpus\": 4, \"sm_count\": 132, \"l2_bytes\": 1, \"hbm_bytes\": 1, \"hbm_bw\": 1,"
	      " \"flops\": {\"bf16\": 1, \"fp16\": 1, \"fp8\": 1, \"tf32\": 1, \"fp32\": 1}}", f);
	fclose(f);
	CHECK(hw_load_file(path, &h, err, sizeof err) == 0 && h.net_bw == 0 && h.gpus == 4);
	f = fopen(path, "w");
	fputs("{\n\"gpus\": 4,\n oops", f);
	fclose(f);
	CHECK(hw_load_file(path, &h, err, sizeof err) < 0 && strstr(err, "line 3"));
	remove(path);

	/* 001 at W = 4, 1024 x 1024 bf16 on h200_4: receive 2 (W-1)/W of 2 MiB,
	 * read the input from HBM (the 2 MiB output fits in L2, so it need not
	 * reach HBM within the call), (W-1)/W adds per element */
	struct roofline r;
	bounds("1", "h200_4", 4, 1024, 1024, &r);
	CHECK(near(r.net_bytes, 3 * MiB) && near(r.t_net, 3 * MiB / 450e9));
	CHECK(near(r.hbm_bytes, 2 * MiB) && near(r.t_hbm, 2 * MiB / 4.8e12));
	CHECK(near(r.flops, 0.75 * MiB) && near(r.t_flop, 0.75 * MiB / 67e12));
	CHECK(near(r.t_bound, r.t_net) && !strcmp(r.bottleneck, "interconnect"));
	CHECK(near(r.t_serial, r.t_net + r.t_hbm + r.t_flop));
	/* 256 MiB per rank: the output beyond L2 (60 MiB) counts */
	bounds("1", "h200_4", 4, 131072, 1024, &r);
	CHECK(near(r.hbm_bytes, 256 * MiB + 196 * MiB));
	/* 64 KiB per rank: 32 x 1024 */
	bounds("1", "h200_4", 4, 32, 1024, &r);
	CHECK(near(r.net_bytes, 1.5 * 65536));

	/* 012 at the original's default on 8x H100 (the original quotes 4.99 us;
	 * docs/ROOFLINE.md reconciles): receive 7 shards of (1024, 64) bf16,
	 * 2 * 1024 * 512 * 1024 FLOPs, HBM A_local + B (C fits in L2) */
	bounds("12", "h100_8", 8, 1024, 1024, &r);
	CHECK(near(r.net_bytes, 7.0 * 1024 * 64 * 2));
	CHECK(near(r.flops, 2.0 * 1024 * 512 * 1024) && r.flop_kind == PKB_FLOPS_TENSOR);
	CHECK(near(r.hbm_bytes, 1024.0 * 64 * 2 + 512.0 * 1024 * 2));
	CHECK(near(r.t_bound, 917504 / 450e9) && !strcmp(r.bottleneck, "interconnect"));
	CHECK(fabs(r.t_serial * 1e6 - 3.477) < 0.001);

	/* the default machine: the smallest nominal one of the GPU's family with W GPUs */
	CHECK(hw_for_device(NULL, "NVIDIA H200", 4, &h, err, sizeof err) == 0 &&
	      !strcmp(h.name, "h200_4"));
	CHECK(hw_for_device(NULL, "NVIDIA H200", 8, &h, err, sizeof err) == 0 &&
	      !strcmp(h.name, "h200_8"));
	CHECK(hw_for_device(NULL, "NVIDIA H100 80GB HBM3", 2, &h, err, sizeof err) == 0 &&
	      !strcmp(h.name, "h100_8"));
	CHECK(hw_for_device(NULL, "NVIDIA H100 80GB HBM3", 16, &h, err, sizeof err) < 0 &&
	      strstr(err, "16 GPUs"));
	CHECK(hw_for_device(NULL, "NVIDIA B200", 16, &h, err, sizeof err) == 0 &&
	      !strcmp(h.name, "b200_72"));

	/* a W the machine does not have is refused */
	CHECK(hw_load("h200_4", &h, err, sizeof err) == 0);
	struct pkb_dims d8 = { .world = 8, .m = 1024, .n = 1024, .dtype = PKB_BF16 };
	CHECK(roofline_compute(problem_find("1"), &d8, &h, &r, err, sizeof err) < 0 &&
	      strstr(err, "more GPUs"));

	/* every problem has a cost model, valid at W = 2, 4, 8 where it takes W */
	CHECK(hw_load("h100_8", &h, err, sizeof err) == 0);
	for (int i = 0; i < problem_count(); i++) {
		const struct pkb_problem *p = problem_at(i);
		CHECKF(p->cost != NULL, "%03d_%s has no cost model", p->id, p->name);
		for (int w = 2; w <= 8 && p->cost; w *= 2) {
			struct pkb_dims d = { .world = w, .m = 1024, .n = 1024, .dtype = PKB_BF16 };
			if (!problem_world_ok(p, w))
				continue;
			int ok = roofline_compute(p, &d, &h, &r, err, sizeof err) == 0;
			CHECKF(ok && r.t_bound > 0 && isfinite(r.t_serial) && r.t_serial >= r.t_bound,
			       "%03d_%s at W=%d: %s", p->id, p->name, w, ok ? "bad bound" : err);
		}
	}

	/* S = 1 / (1 + (t - t_sol) / (t_ref - t_sol)) */
	CHECK(near(sol_score(10, 10, 2), 0.5));
	CHECK(near(sol_score(2, 10, 2), 1.0));
	CHECK(near(sol_score(18, 10, 2), 1.0 / 3));
	CHECK(isnan(sol_score(1, 10, 2)));   /* below the bound: flagged, not scored */
	CHECK(isnan(sol_score(5, 2, 3)));    /* a reference below the bound */
	return t_done("test_roofline");
}
