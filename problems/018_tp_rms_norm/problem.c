/*
 * 018_tp_rms_norm -- RMSNorm with the hidden dimension split across ranks.
 *
 * The global hidden size is W*N; rank r holds columns [r*N, (r+1)*N) of every
 * row as local_hidden_states (M, N) and the matching slice local_weight (N,).
 * Each rank returns its slice of the normalised rows:
 *     ss[i]  = sum_r sum_j x_r[i,j]^2                 (fp32, all ranks)
 *     out[i,j] = w[j] * T( x[i,j] * rsqrt(ss[i] / (W*N) + eps) )
 * with eps = variance_epsilon = 1e-5 and T the dtype.
 *
 * Minimum traffic per rank: the M fp32 row sums of squares, an all-reduce of
 * 2 (W-1)/W * 4M bytes (6 KiB at M = 1024, W = 4): a latency problem.
 *
 * This is the main branch's version (x is (M, N) on every rank); the
 * original's triton_integration branch shards an N-wide row instead.
 */
#include "pkb_problem.h"

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->m < 1 || d->n < 1)
		return pkb_io_fail(io, "M and N must be >= 1");
	pkb_io_input(io, "local_hidden_states", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(d->m, d->n));
	pkb_io_input(io, "local_weight", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(d->n));
	pkb_io_param(io, "variance_epsilon", 1e-5);

	/*
	 * Two roundings to T: the normalised value, then its product with the
	 * weight (terms = 2; a candidate may skip the first). In an fp32 output
	 * the row scale shows too: the fp32 sum of K = W*N squares in another
	 * order moves by up to ~u*sqrt(K)/3 rms relative (a sequential sum, the
	 * worst correct order), rsqrt by 2 ulp; per element that is at most
	 * ~u*sqrt(K)/3 after the rsqrt halves it, so rtol = u*(8 + sqrt(K)) and
	 * l2 = u*(4 + sqrt(K)/4) (u = 2^-24), 2-3x above a sequential sum.
	 */
	struct pkb_tol tol = { .terms = 2 };
	if (d->dtype == PKB_FP32) {
		double u = 1.0 / 16777216.0, sk = pkb_sqrt_pos((double)d->world * d->n);
		tol.rtol = u * (8 + sk);
		tol.l2 = u * (4 + sk / 4);
	}
	pkb_io_output(io, "out", d->dtype, tol, PKB_SHAPE(d->m, d->n));
	return 0;
}

/* Only the M fp32 row sums of squares must cross: an all-reduce, 2 (W-1)/W
 * of 4*M bytes received (reduce-scatter then all-gather). Element-wise work:
 * a square and an add, then two multiplies, per element (4*M*N). HBM: the
 * default: x read at least once, w read and out written. */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double w = d->world;
	c->net_bytes = 2 * (w - 1) / w * 4.0 * d->m;
	c->flops = 4.0 * d->m * d->n;
	c->flop_kind = PKB_FLOPS_VECTOR;
	c->note = "row sums of squares + all-reduce of M floats";
}

const struct pkb_problem pkb_problem_018 = {
	.id = 18,
	.name = "tp_rms_norm",
	.title = "Tensor-parallel RMSNorm (hidden dim sharded)",
	.category = "Tensor Parallel",
	.origin = "Megatron/HF RMSNorm with the hidden dimension split across TP ranks (inferred)",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.cost = cost,
};
