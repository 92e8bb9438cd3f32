/*
 * zero_host.h -- the host side of 041 (ZeRO-1) and 042 (ZeRO-2), which is
 * one: the same MLP shapes, inputs, tolerances and cost (a lower bound does
 * not depend on whether the gradient is all-reduced or reduce-scattered:
 * only the slice is used). Each problem.c includes it and names itself, its
 * descriptor pointing at zero_describe, zero_gen_host and zero_cost.
 */
#ifndef PKB_ZERO_HOST_H
#define PKB_ZERO_HOST_H

#include "pkb_problem.h"
#include "mlp_host.h"   /* defines: LR, struct mlp, clamp64, max64, mlp_sizes, adam_tols */

/* the original's _ddp_mlp_shapes_divisible_by_dp; hidden = 0: none found */
static inline struct mlp sizes(const struct pkb_dims *d)
{
	struct mlp s = mlp_sizes(d);
	for (int i = 0; i < 1024; i++, s.hidden++) {
		s.p = s.hidden * s.d_in + s.hidden + s.d_out * s.hidden + s.d_out;
		if (s.p % d->world == 0)
			return s;
	}
	s.hidden = 0;
	return s;
}

static inline int zero_describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->dtype != PKB_BF16 && d->dtype != PKB_FP16 && d->dtype != PKB_FP32)
		return pkb_io_fail(io, "dtype must be bf16, fp16 or fp32");
	if (d->m < 1 || d->n < 1)
		return pkb_io_fail(io, "M and N must be >= 1");
	struct mlp s = sizes(d);
	if (s.hidden == 0)
		return pkb_io_fail(io, "no hidden size makes the parameter count divisible by W = %d",
				   d->world);
	pkb_dtype t = d->dtype;
	int64_t part = s.p / d->world;

	pkb_io_input(io, "X_local", t, PKB_NORMAL(0, 1), PKB_SHAPE(s.chunk, s.d_in));
	pkb_io_input(io, "y_local", t, PKB_NORMAL(0, 1), PKB_SHAPE(s.chunk, s.d_out));
	pkb_io_input(io, "W1", t, PKB_NORMAL(0, 1), PKB_SHAPE(s.hidden, s.d_in));
	pkb_io_input(io, "b1", t, PKB_NORMAL(0, 1), PKB_SHAPE(s.hidden));
	pkb_io_input(io, "W2", t, PKB_NORMAL(0, 1), PKB_SHAPE(s.d_out, s.hidden));
	pkb_io_input(io, "b2", t, PKB_NORMAL(0, 1), PKB_SHAPE(s.d_out));
	pkb_io_input(io, "exp_avg_part", t, PKB_NORMAL(0, 0.5), PKB_SHAPE(part));
	pkb_io_input(io, "exp_avg_sq_part", t, PKB_UNIFORM(0.01, 0.05), PKB_SHAPE(part));
	pkb_io_param(io, "lr", LR);
	pkb_io_param(io, "beta1", 0.9);
	pkb_io_param(io, "beta2", 0.999);
	pkb_io_param(io, "eps", 1e-8);
	pkb_io_input(io, "step", PKB_I64, PKB_HOSTGEN, 0, (int64_t[]){ 0 });

	/*
	 * As 040 (mlp_host.h's adam_tols carries the argument and the
	 * measurements, which the host simulation repeated for the slices here,
	 * and for NCCL's reduce-scatter order in 042). The gradient is a sum
	 * over W ranks of partials that are fp32-accumulated GEMMs of at most K
	 * terms: m_part to terms_g = W + 2 + K 2^-24 / u of u*amax, v_part to
	 * twice that. The parameters: one ulp (rtol 2u) plus atol = 64 u lr, no
	 * amax term; a slice left un-updated (a stale gather) is off by
	 * lr * 0.3..3 and fails.
	 */
	struct pkb_tol tp, tm, tv;
	adam_tols(d, s, &tp, &tm, &tv);
	pkb_io_output(io, "W1", t, tp, PKB_SHAPE(s.hidden, s.d_in));
	pkb_io_output(io, "b1", t, tp, PKB_SHAPE(s.hidden));
	pkb_io_output(io, "W2", t, tp, PKB_SHAPE(s.d_out, s.hidden));
	pkb_io_output(io, "b2", t, tp, PKB_SHAPE(s.d_out));
	pkb_io_output(io, "m_part", t, tm, PKB_SHAPE(part));
	pkb_io_output(io, "v_part", t, tv, PKB_SHAPE(part));
	return 0;
}

static inline int zero_gen_host(const struct pkb_dims *d, int index, uint64_t seed, void *buf,
				size_t bytes)
{
	(void)seed;
	if (index == 8 && bytes == sizeof(int64_t)) {
		*(int64_t *)buf = 1 + d->trial % 7;
		return 0;
	}
	return -1;
}

/*
 * Every rank needs rank 0's P parameters for its forward (P elements in),
 * its slice of the summed gradient (a reduce-scatter, (W-1)/W P: 041's
 * all-reduce moves twice that, but only the slice is used) and
 * the other ranks' updated slices ((W-1)/W P): (3 - 2/W) P elements, 1.31 MB
 * at the default, W = 4, bf16. FLOPs as 040: 2 chunk hidden (2 d_in +
 * 3 d_out) in GEMMs; Adam on part elements is noise. HBM: the default.
 */
static inline void zero_cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	struct mlp s = sizes(d);
	double w = d->world, e = (double)pkb_dtype_size(d->dtype), p = (double)s.p;
	c->net_bytes = (1 + 2 * (w - 1) / w) * p * e;
	c->flops = 2.0 * s.chunk * s.hidden * (2.0 * s.d_in + 3.0 * s.d_out);
	c->flop_kind = PKB_FLOPS_TENSOR;
	c->note = "param broadcast, MLP fwd/bwd, grad reduce-scatter, sharded Adam, all-gather";
}

#endif /* PKB_ZERO_HOST_H */
