/*
 * 045_reducescatter_fused_rmsnorm -- reduce-scatter (mean over ranks) fused
 * with an RMSNorm of the rank's rows.
 *
 * hidden = clamp(N, 32, 128), rows = max(2, max(M, W) / max(W, 4)),
 * chunk = rows*hidden. Rank r holds a flat rs_input_1d of W*chunk elements
 * and gamma (hidden,), the same on every rank. It returns
 *     x = T( T(sum_r' rs_input_{r'}[r*chunk : (r+1)*chunk]) / W )   as (rows, hidden)
 *     y[i,:] = T( x[i,:] * rsqrt(mean_j x[i,j]^2 + eps) * gamma )    (fp32 inside)
 * with eps = 1e-5 and T the dtype; the sum is the original's bf16
 * reduce_scatter_tensor.
 *
 * Minimum traffic per rank: its W-1 chunks that belong to other ranks,
 * (W-1) * chunk*e bytes sent (and received, on average over the ranks),
 * 192 KiB at M = N = 1024, bf16, W = 4.
 */
#include "pkb_problem.h"

static int64_t hidden_of(const struct pkb_dims *d)
{
	return d->n < 32 ? 32 : d->n > 128 ? 128 : d->n;
}

static int64_t rows_of(const struct pkb_dims *d)
{
	int64_t w = d->world, mw = d->m > w ? d->m : w, w4 = w > 4 ? w : 4;
	return mw / w4 > 2 ? mw / w4 : 2;
}

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->m < 1 || d->n < 1)
		return pkb_io_fail(io, "M and N must be >= 1");
	int64_t w = d->world, hidden = hidden_of(d), rows = rows_of(d);

	pkb_io_input(io, "rs_input_1d", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(w * rows * hidden));
	/* the original seeds gamma with rank 0's seed on every rank */
	pkb_io_input(io, "gamma", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(hidden))
		->same_on_all_ranks = 1;
	pkb_io_param(io, "eps", 1e-5);

	/*
	 * The reduce-scatter result goes through W-1 roundings to T in NCCL's
	 * order and one more in the division by W (exact for W a power of two);
	 * a candidate may sum in fp32 and round once. Those errors reach y
	 * scaled by rsqrt(...) * gamma: terms = W + 1. In an fp32 output the
	 * row scale shows too: the fp32 sum of `hidden` squares in another
	 * order and rsqrt's 2 ulp; as in 018, rtol = u*(8 + sqrt(hidden)) and
	 * l2 = u*(4 + sqrt(hidden)/4) with u = 2^-24.
	 */
	struct pkb_tol tol = PKB_TOL_SUM(w + 1);
	if (d->dtype == PKB_FP32) {
		double u = 1.0 / 16777216.0, sh = pkb_sqrt_pos((double)hidden);
		tol.rtol = u * (8 + sh);
		tol.l2 = u * (4 + sh / 4);
	}
	pkb_io_output(io, "y", d->dtype, tol, PKB_SHAPE(rows, hidden));
	return 0;
}

/* A reduce-scatter: the rank must send its W-1 foreign chunks, each feeding
 * one other rank's output, (W-1) * chunk*e bytes; the ranks together receive
 * what they send, so the busiest receives as much. Element-wise work on its
 * chunk: W-1 adds, the division by W, a square-accumulate (2) and the two
 * scale multiplies, W + 4 fp32 ops an element. HBM: its input, gamma and y. */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double w = d->world, chunk = (double)rows_of(d) * hidden_of(d);
	c->net_bytes = (w - 1) * chunk * pkb_dtype_size(d->dtype);
	c->flops = (w + 4) * chunk;
	c->flop_kind = PKB_FLOPS_VECTOR;
	c->note = "reduce-scatter fused with the row norm";
}

const struct pkb_problem pkb_problem_045 = {
	.id = 45,
	.name = "reducescatter_fused_rmsnorm",
	.title = "Reduce-scatter (mean) fused with RMSNorm",
	.category = "Tensor Parallel",
	.origin = "Megatron-style sequence-parallel reduce-scatter + RMSNorm (inferred)",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.cost = cost,
};
