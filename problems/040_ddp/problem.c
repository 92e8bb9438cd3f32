/*
 * 040_ddp -- one data-parallel training step: broadcast the model and the
 * Adam state from rank 0, forward and backward of a two-layer MLP on this
 * rank's rows, all-reduce (mean) of the gradients, and the Adam update,
 * replicated on every rank.
 *
 * Sizes (the original's): n = roundup(max(M, W), W) rows in all, chunk =
 * n/W per rank; d_in = clamp(N, 16, 256), hidden = clamp(N/2, 32, 512),
 * d_out = clamp(N/4, 8, 256); P = hidden*d_in + hidden + d_out*hidden + d_out
 * parameters (262,912 at N >= 1024). Every tensor is of the harness dtype T:
 *     h    = relu(X W1^T + b1)              (chunk, hidden)
 *     out  = h W2^T + b2                    (chunk, d_out)
 *     loss = mean((out - y)^2)              backward by autograd
 *     g    = all_reduce_sum(flat grads) / W (order W1, b1, W2, b2)
 *     m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2
 *     p = p - lr * (m / bc1) / (sqrt(v / bc2) + eps)
 * with bc1 = 1 - beta1^step, bc2 = 1 - beta2^step. The 12 outputs are the
 * updated W1, b1, W2, b2, their 4 exp_avg and 4 exp_avg_sq, identical on
 * every rank.
 *
 * Inputs, and where they leave the original's on purpose:
 *   - X_local, y_local: N(0,1) per rank (the original's row slices of one
 *     global randn: the same distribution).
 *   - W1, b1, W2, b2: N(0,1) on EVERY rank, different per rank. The original
 *     has zeros on ranks != 0; with zeros a SUM all-reduce would stand in
 *     for the broadcast and pass. Only rank 0's values enter the result.
 *   - the 8 moments: exp_avg N(0, 0.5), exp_avg_sq U(0.01, 0.05), per rank
 *     (only rank 0's enter). The original passes zeros. With zero moments
 *     m/bc1 / sqrt(v/bc2) = +-1 at step 1 (+-0.5..0.74 later): the update is
 *     lr times the SIGN of g, a step function of the gradient. The gradient
 *     is a bf16 sum over W ranks that a correct kernel may add in another
 *     order, and measured (host simulation, W = 4, bf16) ~0.02% of its
 *     elements then change sign, moving a parameter by 2 lr -- as much as a
 *     wrong kernel that skips the update altogether. Zero moments also make
 *     the two moment broadcasts unobservable. With v >= 0.01 the update is
 *     a smooth function of g (d upd/dg <= lr / sqrt(999 * 0.01)) and the
 *     comparison below can be tight. The computation is the original's.
 *   - step = 1 + trial % 7, an int64 0-dim input from gen_host (describe()
 *     runs once per eval, so a param could not follow the trial); lr, beta1,
 *     beta2, eps are params with the original's values.
 */
#include <stdio.h>
#include "pkb_problem.h"
#include "mlp_host.h"
/* defines: LR, struct mlp, clamp64, max64, mlp_sizes, adam_tols */

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->dtype != PKB_BF16 && d->dtype != PKB_FP16 && d->dtype != PKB_FP32)
		return pkb_io_fail(io, "dtype must be bf16, fp16 or fp32");
	if (d->m < 1 || d->n < 1)
		return pkb_io_fail(io, "M and N must be >= 1");
	struct mlp s = mlp_sizes(d);
	pkb_dtype t = d->dtype;
	const int64_t w1[] = { s.hidden, s.d_in }, b1[] = { s.hidden };
	const int64_t w2[] = { s.d_out, s.hidden }, b2[] = { s.d_out };
	static const char *const pn[4] = { "W1", "b1", "W2", "b2" };
	const int nd[4] = { 2, 1, 2, 1 };
	const int64_t *sh[4] = { w1, b1, w2, b2 };
	char name[PKB_NAME_MAX];

	pkb_io_input(io, "X_local", t, PKB_NORMAL(0, 1), PKB_SHAPE(s.chunk, s.d_in));
	pkb_io_input(io, "y_local", t, PKB_NORMAL(0, 1), PKB_SHAPE(s.chunk, s.d_out));
	for (int i = 0; i < 4; i++)
		pkb_io_input(io, pn[i], t, PKB_NORMAL(0, 1), nd[i], sh[i]);
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof name, "exp_avg_%s", pn[i]);
		pkb_io_input(io, name, t, PKB_NORMAL(0, 0.5), nd[i], sh[i]);
	}
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof name, "exp_avg_sq_%s", pn[i]);
		pkb_io_input(io, name, t, PKB_UNIFORM(0.01, 0.05), nd[i], sh[i]);
	}
	pkb_io_param(io, "lr", LR);
	pkb_io_param(io, "beta1", 0.9);
	pkb_io_param(io, "beta2", 0.999);
	pkb_io_param(io, "eps", 1e-8);
	pkb_io_input(io, "step", PKB_I64, PKB_HOSTGEN, 0, (int64_t[]){ 0 });

	/* the gradient is a sum over the W ranks: mlp_host.h's adam_tols */
	struct pkb_tol tp, tm, tv;
	adam_tols(d, s, &tp, &tm, &tv);
	for (int i = 0; i < 4; i++)
		pkb_io_output(io, pn[i], t, tp, nd[i], sh[i]);
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof name, "exp_avg_%s", pn[i]);
		pkb_io_output(io, name, t, tm, nd[i], sh[i]);
	}
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof name, "exp_avg_sq_%s", pn[i]);
		pkb_io_output(io, name, t, tv, nd[i], sh[i]);
	}
	return 0;
}

static int gen_host(const struct pkb_dims *d, int index, uint64_t seed, void *buf, size_t bytes)
{
	(void)seed;
	if (index == 14 && bytes == sizeof(int64_t)) {
		*(int64_t *)buf = 1 + d->trial % 7;
		return 0;
	}
	return -1;
}

/*
 * Every rank must end with rank 0's P parameters and 2P moments, updated: a
 * rank other than 0 receives at least 3P elements, and rank 0 sends each of
 * them at least once (a broadcast of the inputs, or a reduce-scatter with
 * the Adam step on slices and an all-gather of the results: both come to
 * the same (5 - 2/W) P elements). The gradient all-reduce adds 2 (W-1)/W P.
 * At the default, W = 4, bf16: 4.5 * 525,824 B = 2.37 MB per rank.
 * FLOPs: forward 2 chunk (d_in + d_out) hidden, backward dW1, dW2 and dh
 * (dX is not needed) 3 more of the same shape pairs; Adam's ~12 P is noise.
 * HBM: the default (inputs read once, outputs written).
 */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	struct mlp s = mlp_sizes(d);
	double w = d->world, e = (double)pkb_dtype_size(d->dtype), p = (double)s.p;
	c->net_bytes = (3 + 2 * (w - 1) / w) * p * e;
	c->flops = 2.0 * s.chunk * s.hidden * (2.0 * s.d_in + 3.0 * s.d_out);
	c->flop_kind = PKB_FLOPS_TENSOR;
	c->note = "broadcast of params + moments, MLP fwd/bwd, grad all-reduce, Adam";
}

const struct pkb_problem pkb_problem_040 = {
	.id = 40,
	.name = "ddp",
	.title = "DDP step: broadcast params, MLP fwd/bwd, grad all-reduce, Adam",
	.category = "Data Parallel",
	.origin = "PyTorch DDP + Adam (textbook; inferred)",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.gen_host = gen_host,
	.cost = cost,
};
