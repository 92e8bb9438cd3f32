/*
 * roofline.h -- hardware descriptions (hw/NAME.json, or the calibrated
 * `local`), the three lower bounds of a problem instance, and the
 * speed-of-light score (docs/ROOFLINE.md).
 */
#ifndef PKB_ROOFLINE_H
#define PKB_ROOFLINE_H

#include <stddef.h>
#include "pkb_problem.h"   /* defines: struct pkb_problem, pkb_dims, pkb_cost */

struct hw_spec {
	char name[32];
	char title[160];
	int gpus;
	int sm_count;
	double l2_bytes, hbm_bytes;
	double hbm_bw;            /* bytes/s */
	double net_bw;            /* bytes/s one GPU can receive (per direction) */
	double flops_bf16, flops_fp16, flops_fp8, flops_tf32, flops_fp32;   /* FLOP/s */
	char path[512];           /* where it was read from */
};

/* NAME: hw/NAME.json under the pkb root, or "local" (what `pkb calibrate`
 * wrote into the cache). 0, or -1 with a one-line reason in err. */
int hw_load(const char *name, struct hw_spec *h, char *err, size_t n);
/* --hw NAME if given, else the nominal machine of the GPU named `device`
 * ("NVIDIA H200" -> h200_8) with at least `world` GPUs */
int hw_for_device(const char *asked, const char *device, int world, struct hw_spec *h, char *err,
		  size_t n);
/* the same from a file path */
int hw_load_file(const char *path, struct hw_spec *h, char *err, size_t n);
/* the file `pkb calibrate` writes and `hw_load("local")` reads */
char *hw_local_path(void);
/* the timed loop's floor on this machine, in seconds: `empty_call_us` of the
 * calibration in hw_local_path() when it was measured on `device` with at
 * least `world` GPUs; 0 when there is none (docs/ROOFLINE.md) */
double hw_local_floor(const char *device, int world);
/* "h100_8 h200_4 ..." (the files in hw/), for messages */
void hw_names(char *buf, size_t n);

struct roofline {
	double net_bytes, hbm_bytes, flops;   /* of the rank that bounds the instance */
	double t_net, t_hbm, t_flop;          /* seconds, the max over ranks of each */
	double t_bound;                       /* max over ranks of max(t_net, t_hbm, t_flop) */
	double t_serial;                      /* max over ranks of their sum */
	const char *bottleneck;               /* "interconnect", "HBM" or "compute" */
	int rank;                             /* the rank with the largest bound */
	enum pkb_flop_kind flop_kind;
	double peak_flops;                    /* the peak used for t_flop */
	const char *note;
};

/* 0, or -1 with a reason in err (no cost model, invalid dims, a W above the
 * hardware's GPU count) */
int roofline_compute(const struct pkb_problem *p, const struct pkb_dims *d,
		     const struct hw_spec *h, struct roofline *r, char *err, size_t n);
/* S = 1 / (1 + (t - t_sol) / (t_ref - t_sol)): 0.5 at the reference, 1 at
 * the bound; NAN when t_ref <= t_sol or t < t_sol (not scored) */
double sol_score(double t, double t_ref, double t_sol);

#endif
