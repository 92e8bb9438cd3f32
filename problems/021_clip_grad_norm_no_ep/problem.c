/*
 * 021_clip_grad_norm_no_ep -- global gradient-norm clipping over an FSDP
 * group (FSDP2-style clip_grad_norm_, two-stage reduce helper).
 *
 * Each rank holds three gradient shards (M, N). With p = norm_type = 2:
 *     local  = sum_t fl( ||fp32(g_t)||_2 ^ 2 )          (fp32)
 *     total  = sqrt( sum over ranks of local )          (fp32, all ranks)
 *     coef   = max_norm / total   if total > max_norm
 *     out_t  = T( g_t * coef )    (or g_t unchanged when total <= max_norm)
 * The original scales the gradients in place and returns only total_norm;
 * pkb inputs are read-only, so the clipped gradients are returned as outputs
 * instead (the same work: every gradient element read, scaled and written).
 *
 * Minimum traffic per rank: one fp32 scalar all-reduced -- a latency problem
 * wrapped around a bandwidth one (3*M*N elements read and written).
 */
#include "pkb_problem.h"

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->m < 1 || d->n < 1)
		return pkb_io_fail(io, "M and N must be >= 1");
	pkb_io_input(io, "grad_tensors[0]", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(d->m, d->n));
	pkb_io_input(io, "grad_tensors[1]", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(d->m, d->n));
	pkb_io_input(io, "grad_tensors[2]", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(d->m, d->n));
	pkb_io_param(io, "max_norm", 1.0);
	pkb_io_param(io, "norm_type", 2.0);

	/*
	 * total_norm is the fp32 sum of K = 3*W*M*N squares, then a sqrt. Summed
	 * in another correct order (a tree, per-block partials, a sequential
	 * sum -- the worst) the sum moves by about u*sqrt(K/3) relative (rms of
	 * a sequential sum of positive terms), the sqrt halves that: ~u*sqrt(K)/3.5.
	 * rtol = u*(8 + sqrt(K)) is 3.5x that plus a few ulp for the per-tensor
	 * sqrt-then-square of the original (2e-4 at K = 12.6M, W = 4, 1024^2).
	 * A wrong result is far out: the local norm alone is 1/sqrt(W) of it,
	 * one tensor missing is sqrt(2/3) of it.
	 */
	double u32 = 1.0 / 16777216.0;
	double sk = pkb_sqrt_pos(3.0 * d->world * (double)d->m * (double)d->n);
	struct pkb_tol tn = { .rtol = u32 * (8 + sk), .l2 = u32 * (8 + sk) };
	pkb_io_output(io, "total_norm", PKB_FP32, tn, 0, (int64_t[]){ 0 });

	/*
	 * The clipped gradients: one rounding of fp32(g)*coef to T. In bf16/fp16
	 * coef's own error (above, < 1e-3 of an ulp) only flips a rounding at a
	 * tie: one ulp, the default. In fp32 coef's relative error is the whole
	 * error and the same for every element, so the bound is total_norm's
	 * plus one rounding, element-wise and whole-output alike.
	 */
	struct pkb_tol tg = PKB_TOL_DEFAULT;
	if (d->dtype == PKB_FP32) {
		tg.rtol = u32 * (10 + sk);
		tg.l2 = u32 * (10 + sk);
	}
	pkb_io_output(io, "clipped_grads[0]", d->dtype, tg, PKB_SHAPE(d->m, d->n));
	pkb_io_output(io, "clipped_grads[1]", d->dtype, tg, PKB_SHAPE(d->m, d->n));
	pkb_io_output(io, "clipped_grads[2]", d->dtype, tg, PKB_SHAPE(d->m, d->n));
	return 0;
}

/* One fp32 scalar crosses: an all-reduce of 4 bytes (a one-shot exchange
 * receives (W-1)*4 bytes; the bound takes the ring's 2 (W-1)/W * 4, both are
 * nothing next to the latency). Per element a square, an add and a multiply
 * (3 * 3*M*N). HBM: the default, the gradients read once and written once. */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double w = d->world, e = 3.0 * d->m * d->n;
	c->net_bytes = 2 * (w - 1) / w * 4.0;
	c->flops = 3.0 * e;
	c->flop_kind = PKB_FLOPS_VECTOR;
	c->note = "sum of squares + all-reduce of 1 float + scale pass";
}

const struct pkb_problem pkb_problem_021 = {
	.id = 21,
	.name = "clip_grad_norm_no_ep",
	.title = "Global grad-norm clipping (FSDP group)",
	.category = "FSDP / ZeRO",
	.origin = "FSDP2-style clip_grad_norm_ (torchtitan/veScale-like two-stage reduce helper; inferred)",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.cost = cost,
};
