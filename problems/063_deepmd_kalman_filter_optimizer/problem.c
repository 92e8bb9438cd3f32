/*
 * 063_deepmd_kalman_filter_optimizer -- one step of DeePMD's layer-wise
 * Kalman filter optimizer, data parallel, all in fp64.
 *
 * Rank r holds 8 parameter blocks of 1024 (sizes fixed: M, N and the harness
 * dtype are unused): H (8, 1024, 1) = 0.01 N(0, 1), a scalar error N(0, 1),
 * weights (8, 1024, 1) N(0, 1) and P (8, 1024, 1024). With lam = 0.98:
 *     tmp = sum_i (lam + H_i^T P_i H_i), summed over ranks; A = 1/tmp
 *     K_i = P_i H_i
 *     weights_i += (A*err) * K_i;   P_i = (1/lam) * (P_i - A * K_i K_i^T)
 * then every rank returns every rank's updated weights (8W, 1024, 1), rank
 * major, its own 8 updated P, and lam_next = nue*lam + 1 - nue (nue 0.9987).
 *
 * The original's P is the identity on every rank; pkb draws P = I + U(-0.01,
 * 0.01) per rank (gen_host), so K = P H must be computed, not copied from H.
 *
 * Per rank: 64 MiB of P read and written (HBM-bound: ~28 us at 4.8 TB/s);
 * the exchange is one fp64 and an all-gather of 64 KiB.
 */
#include "pkb_problem.h"

#define BLOCKS 8
#define BLOCK 1024

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	static const int64_t scalar[1] = { 0 };
	pkb_io_input(io, "H", PKB_FP64, PKB_NORMAL(0, 0.01), PKB_SHAPE(BLOCKS, BLOCK, 1));
	pkb_io_input(io, "error", PKB_FP64, PKB_NORMAL(0, 1), 0, scalar);
	pkb_io_input(io, "weights", PKB_FP64, PKB_NORMAL(0, 1), PKB_SHAPE(BLOCKS, BLOCK, 1));
	pkb_io_input(io, "P", PKB_FP64, PKB_HOSTGEN, PKB_SHAPE(BLOCKS, BLOCK, BLOCK));
	pkb_io_param(io, "kalman_lambda", 0.98);
	pkb_io_param(io, "kalman_nue", 0.9987);

	/*
	 * weights: w (~1) + (A*err)*K, the update ~1/(8W) * 1 * 0.01 = 1e-3;
	 * K's 1024-term dot products in another order move it by ~1e-16
	 * relative, so the sum rounds the same within an ulp of w: terms = 2
	 * covers both roundings. tmp's 8W terms in another order move A by a
	 * few u and the update by ~1e-19. P: the same, (P - A K K^T) / lam
	 * with 1/lam multiplied or divided (1 ulp). lam_next: three roundings
	 * in any arrangement (terms = 4). Wrong results are far out: a gain
	 * from the local tmp only moves the update by (W-1)/W, ~1e-3 absolute
	 * in w and ~1e-5 in P, 10^10 ulps.
	 */
	pkb_io_output(io, "weights", PKB_FP64, PKB_TOL_SUM(2),
		      PKB_SHAPE((int64_t)BLOCKS * d->world, BLOCK, 1));
	pkb_io_output(io, "P", PKB_FP64, PKB_TOL_SUM(2), PKB_SHAPE(BLOCKS, BLOCK, BLOCK));
	pkb_io_output(io, "kalman_lambda_next", PKB_FP64, PKB_TOL_SUM(4), 0, scalar);
	return 0;
}

/* P = I + U(-0.01, 0.01): a covariance near the original's identity that a
 * candidate cannot skip */
static int gen_host(const struct pkb_dims *d, int index, uint64_t seed, void *buf, size_t bytes)
{
	(void)d;
	if (index != 3 || bytes != sizeof(double) * BLOCKS * BLOCK * BLOCK)
		return -1;
	double *p = (double *)buf;
	uint64_t s = seed;
	for (int64_t b = 0; b < BLOCKS; b++)
		for (int64_t i = 0; i < BLOCK; i++)
			for (int64_t j = 0; j < BLOCK; j++) {
				double u = pkb_rng_unit(pkb_rng_next(&s));
				p[(b * BLOCK + i) * BLOCK + j] = (i == j) + 0.02 * u - 0.01;
			}
	return 0;
}

/* The exchange: the (W-1) * 8192 fp64 weights of the peers (an all-gather)
 * and one fp64. FLOPs: per block the GEMV P H (2 * 1024^2) and the rank-one
 * update (3 * 1024^2: product, scale, subtract; the 1/lam multiply a 4th),
 * the quadratic form reusing K (H . K): ~6 * 1024^2 per block, fp64 on the
 * CUDA cores (counted as vector work). HBM: the default (inputs read once,
 * the part of the 64 MiB P output beyond one L2). */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double w = d->world;
	c->net_bytes = (w - 1) * BLOCKS * BLOCK * 8.0 + 8;
	c->flops = 6.0 * BLOCKS * BLOCK * (double)BLOCK;
	c->flop_kind = PKB_FLOPS_VECTOR;
	c->note = "GEMV + rank-one update per block; all-gather of the weights";
}

const struct pkb_problem pkb_problem_063 = {
	.id = 63,
	.name = "deepmd_kalman_filter_optimizer",
	.title = "Distributed Kalman-filter optimizer step (fp64)",
	.category = "Data Parallel",
	.origin = "deepmd-kit KFOptimizerWrapper / LKF distributed update (inferred)",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.gen_host = gen_host,
	.cost = cost,
};
