/*
 * 009_layernorm_backward -- LayerNorm weight and bias gradients, summed over
 * ranks that each hold a different block of rows.
 *
 * Rank r holds X_hat_r and dY_r (M, N) and returns
 *     d_gamma = sum_r sum_i dY_r[i,:] * X_hat_r[i,:]      (N,)
 *     d_beta  = sum_r sum_i dY_r[i,:]                      (N,)
 * identical on every rank, in that order (d_gamma first). The original rounds
 * the product to the dtype, sums the M rows in fp32, rounds each rank's
 * column sum to the dtype and all-reduces the two vectors (NCCL, rounding
 * after every add).
 *
 * Minimum traffic per rank: the two column-sum vectors, 2 * 2 (W-1)/W * N*e
 * bytes (6 KiB at N = 1024, bf16, W = 4): a latency problem.
 */
#include "pkb_problem.h"

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->m < 1 || d->n < 1)
		return pkb_io_fail(io, "M and N must be >= 1");
	/*
	 * The original draws X_hat ~ randn and divides every row by its L2 norm
	 * (+1e-5). N(0, 1/sqrt(N)) gives the same entry size and rows of norm
	 * 1 +- 1/sqrt(2N); nothing in the problem depends on the exact norm.
	 */
	double sd = 1.0 / pkb_sqrt_pos((double)d->n);
	pkb_io_input(io, "X_hat", d->dtype, PKB_NORMAL(0, sd), PKB_SHAPE(d->m, d->n));
	pkb_io_input(io, "dY", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(d->m, d->n));

	/*
	 * bf16/fp16: the reference rounds each rank's fp32 column sum to the
	 * dtype (W roundings) and then adds the W rounded partials in NCCL's
	 * order (W-1 roundings); a correct candidate may keep fp32 partials and
	 * round once. 2W roundings of values no larger than the output: terms
	 * = 2W. fp32: what differs is the order of the fp32 sum of M*W terms
	 * itself (a thread that runs down a column one row at a time is
	 * correct, and 15-25 ulps of the output's rms away from a tree sum at
	 * M = 1024): terms = M*W, still ~1e-4 of amax, far below any bug.
	 */
	double terms = 2.0 * d->world;
	if (d->dtype == PKB_FP32 && (double)d->m * d->world > terms)
		terms = (double)d->m * d->world;
	struct pkb_tol tol = PKB_TOL_SUM(terms);
	pkb_io_output(io, "d_gamma", d->dtype, tol, PKB_SHAPE(d->n));
	pkb_io_output(io, "d_beta", d->dtype, tol, PKB_SHAPE(d->n));
	return 0;
}

/* The two column sums are an all-reduce of 2N elements: a reduce-scatter
 * then an all-gather receives 2 (W-1)/W of them; the inputs never need to
 * cross. Element-wise work: a product and two running sums per input
 * element (3*M*N) plus the reduction's adds. HBM: the harness's default,
 * both inputs read once and the two vectors written. */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double w = d->world, e = pkb_dtype_size(d->dtype);
	c->net_bytes = 2 * (w - 1) / w * 2.0 * d->n * e;
	c->flops = 3.0 * d->m * d->n + (w - 1) / w * 2.0 * d->n;
	c->flop_kind = PKB_FLOPS_VECTOR;
	c->note = "column sums + all-reduce of 2N";
}

const struct pkb_problem pkb_problem_009 = {
	.id = 9,
	.name = "layernorm_backward",
	.title = "LayerNorm weight/bias gradients with all-reduce",
	.category = "Tensor Parallel",
	.origin = "Megatron-style replicated LayerNorm parameter gradients (inferred)",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.cost = cost,
};
