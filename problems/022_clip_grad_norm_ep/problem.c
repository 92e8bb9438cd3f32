/*
 * 022_clip_grad_norm_ep -- gradient-norm clipping with expert-parallel
 * groups (FSDP2 + EP clip_grad_norm_, torchtitan / VeOmni style).
 *
 * Each rank holds one non-expert gradient shard and one expert gradient
 * shard, both (M, N). ep_size = max(1, W / 2) (integer division). With
 * s = 1/ep_size applied first to the expert gradient when ep_size > 1:
 *     e      = T(g_ep * s)                        (ep_size > 1), else g_ep
 *     A      = sum over ranks of ||fp32(g_non_ep)||^2      (fp32)
 *     B      = sum over ranks of ||fp32(e)||^2             (fp32)
 *     total  = sqrt(A + B)
 *     out    = T(g_non_ep * c), T(e * c)   with c = max_norm / total,
 *              if total > max_norm; else g_non_ep and e
 * The original reduces B over the EP-FSDP group then the EP group, which
 * tile the world: the sum over all ranks either way. It works in place;
 * pkb inputs are read-only, so the clipped gradients are outputs.
 */
#include "pkb_problem.h"

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->m < 1 || d->n < 1)
		return pkb_io_fail(io, "M and N must be >= 1");
	int ep_size = d->world / 2 > 1 ? d->world / 2 : 1;
	pkb_io_input(io, "non_ep_grad_tensors[0]", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(d->m, d->n));
	pkb_io_input(io, "ep_grad_tensors[0]", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(d->m, d->n));
	pkb_io_param(io, "max_norm", 1.0);
	pkb_io_param(io, "norm_type", 2.0);
	pkb_io_param(io, "ep_size", ep_size);

	/*
	 * total_norm: fp32 sums of K = 2*W*M*N squares and a sqrt, in any order:
	 * ~u*sqrt(K)/3.5 rms for a sequential sum (see 021), so rtol = l2 =
	 * u*(8 + sqrt(K)) (1.4e-4 at W = 4, 1024^2). Wrong answers are far out:
	 * the expert term left unscaled is 26% high at W = 4 (total^2 8MN, not
	 * 5MN), the EP group's ranks alone 1.5% low at W = 8, the local shards
	 * alone 1/sqrt(W).
	 */
	double u32 = 1.0 / 16777216.0;
	double sk = pkb_sqrt_pos(2.0 * d->world * (double)d->m * (double)d->n);
	struct pkb_tol tn = { .rtol = u32 * (8 + sk), .l2 = u32 * (8 + sk) };
	pkb_io_output(io, "total_norm", PKB_FP32, tn, 0, (int64_t[]){ 0 });

	/*
	 * Clipped gradients: one rounding to T for the non-expert one, two for
	 * the expert one (the 1/ep_size scale, exact for ep_size a power of two,
	 * then the clip): terms = 2 there. In fp32 the clip coefficient's error
	 * (total_norm's) is the whole error, common to every element.
	 */
	struct pkb_tol t1 = PKB_TOL_DEFAULT, t2 = PKB_TOL_SUM(2);
	if (d->dtype == PKB_FP32) {
		t1.rtol = t1.l2 = u32 * (10 + sk);
		t2.rtol = t2.l2 = u32 * (12 + sk);
		t2.terms = 0;
	}
	pkb_io_output(io, "clipped_non_ep_grads[0]", d->dtype, t1, PKB_SHAPE(d->m, d->n));
	pkb_io_output(io, "clipped_ep_grads[0]", d->dtype, t2, PKB_SHAPE(d->m, d->n));
	return 0;
}

/* Two fp32 scalars cross (the non-expert and expert sums; one all-reduce of
 * 8 bytes does both, since the EP groups tile the world). Per element a
 * square, an add and a multiply, plus the expert scale (3 * 2MN + MN).
 * HBM: the default, both shards read once and written once. */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double w = d->world, e = (double)d->m * d->n;
	c->net_bytes = 2 * (w - 1) / w * 8.0;
	c->flops = 7.0 * e;
	c->flop_kind = PKB_FLOPS_VECTOR;
	c->note = "two sums of squares + all-reduce of 2 floats + scale pass";
}

const struct pkb_problem pkb_problem_022 = {
	.id = 22,
	.name = "clip_grad_norm_ep",
	.title = "Grad-norm clipping with expert-parallel groups",
	.category = "FSDP / ZeRO",
	.origin = "FSDP2 + EP clip_grad_norm_ (torchtitan / VeOmni style; inferred)",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.cost = cost,
};
