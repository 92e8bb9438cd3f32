/*
 * 013_gemm_allreduce -- per-rank GEMM, then a sum all-reduce of the products
 * (the row-parallel linear layer of Megatron-style tensor parallelism).
 *
 * K = 512 is fixed. Rank r holds A_local (M, K) and B_local (K, N), both its
 * own; it computes C_r = A_local @ B_local in the working dtype (fp32
 * accumulation, one rounding), and every rank returns C = sum_r C_r (M, N),
 * the same on all ranks. Any W >= 2.
 *
 * Minimum traffic per rank: 2 (W-1)/W * M*N*e bytes received (reduce-scatter
 * then all-gather of the products): 3 MiB at M = N = 1024, bf16, W = 4.
 * Where the operands are smaller than the products (large M and N against
 * K = 512) gathering them instead moves less; cost() takes the cheapest.
 * GEMM: 2*M*K*N FLOPs per rank (1.07 GFLOP at M = N = 1024).
 */
#include "pkb_problem.h"

#define K_DIM 512

/*
 * C is a sum over W ranks of rounded GEMM outputs: PKB_TOL_SUM(W) lets the
 * ranks be added in any order (the reference adds in NCCL's ring order with a
 * rounding after every add). A candidate may also skip the reference's W
 * roundings of the partials C_r (sum fp32 partials, round once): each is at
 * most u*|C_r|, and |C_r| ~ amax(C)/sqrt(W). Simulated on the host (bf16,
 * K = 512, 512x512 outputs at W = 2, 4, 8, 1024x1024 at W = 4) against the
 * ring order: the fp32 sum of rounded partials needs at most 1.0 terms, the
 * fp32 sum of fp32 partials 1.0, the reversed ring 2.1 -- all well inside W.
 *
 * Plus the W GEMMs' fp32 accumulations: K roundings each at 2^-24 of a
 * partial sum below amax(C), W*K*2^-24/u terms in the output's units: 0.03
 * at bf16, W = 4 (invisible) but 2048 at fp32, where a candidate that
 * accumulates in another order than cuBLAS must pass (a reversed fp32 dot
 * product of length 512 lands up to ~17 u*amax away). TF32 (relative error
 * ~4e-4) still fails the l2 bound (5e-6 at W = 4) by ~70x.
 */
static struct pkb_tol sum_tol(pkb_dtype t, int world)
{
	return (struct pkb_tol){
		.terms = world + world * K_DIM * 0x1p-24 / pkb_dtype_unit_roundoff(t) };
}

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->dtype != PKB_BF16 && d->dtype != PKB_FP16 && d->dtype != PKB_FP32)
		return pkb_io_fail(io, "dtype must be bf16, fp16 or fp32");
	pkb_io_input(io, "A_local", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(d->m, K_DIM));
	pkb_io_input(io, "B_local", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(K_DIM, d->n));
	pkb_io_output(io, "C", d->dtype, sum_tol(d->dtype, d->world), PKB_SHAPE(d->m, d->n));
	return 0;
}

/* The cheapest of: a reduce-scatter then an all-gather of the products; the
 * same but with the reduce-scatter step replaced by gathering the operands
 * of this rank's M/W rows (A_s's rows and B_s, from each peer); or gathering
 * every A_s and B_s (W times the FLOPs, but (W-1)*K*(M+N) elements). FLOPs:
 * the GEMM's own 2*M*K*N, this rank's share; HBM: the harness's default. */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double w = d->world, e = pkb_dtype_size(d->dtype), m = d->m, n = d->n;
	double part = m / w * n, ops = K_DIM * (m / w + n);
	double ring = (part < ops ? part : ops) + m / w * n, all = K_DIM * (m + n);
	c->net_bytes = (w - 1) * (ring < all ? ring : all) * e;
	c->flops = 2.0 * d->m * K_DIM * d->n;
	c->flop_kind = PKB_FLOPS_TENSOR;
	c->note = ring > all ? "all-gather of A and B + W GEMMs"
		: part <= ops ? "GEMM + reduce-scatter + all-gather"
		: "gather row-block operands + GEMM + all-gather";
}

const struct pkb_problem pkb_problem_013 = {
	.id = 13,
	.name = "gemm_allreduce",
	.title = "GEMM + all-reduce",
	.category = "Tensor Parallel",
	.origin = "matmul + all_reduce (row-parallel linear, GEMM+AR)",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.cost = cost,
};
