/*
 * 023_grad_acc_loss -- token-weighted loss all-reduce and its backward
 * (gradient-accumulation loss normalisation, VeOmni / NeMo style).
 *
 * Every input and output is a 0-dim scalar. Rank r holds its mean loss over
 * its valid tokens, its count of valid tokens n_r and the global count G:
 *     loss_sum        = sum_r T(loss_r * T(n_r))            (all-reduce in T)
 *     normalized_loss = T(loss_sum / T(G))
 *     grad_loss       = T( T(T(g_norm * T(n_r)) / T(G)) + T(g_sum * T(n_r)) )
 * (T = the dtype; a NaN loss is replaced by 0 first when n_r == 0).
 *
 * The original passes n_r = M*N and G = W*M*N on every rank; here n_r
 * varies per rank and trial in [1, M*N] and G = sum_r n_r (so a
 * candidate that assumes equal counts, or divides by W, is caught), and the
 * two upstream gradients are random where the original passes 1 and 0.
 */
#include "pkb_problem.h"

/* rank r's valid tokens at this trial: in [1, MN], a function of the dims
 * only, so describe() and every rank's gen_host agree on G. The spread is
 * wide (std 0.29 MN) so that a sum weighted wrongly is far off. */
static int64_t tokens(const struct pkb_dims *d, int r)
{
	int64_t mn = d->m * d->n;
	uint64_t h = pkb_rng_mix(pkb_rng_mix(0x23ull ^ ((uint64_t)(uint32_t)d->trial << 8)) ^ (uint64_t)r);
	return 1 + (int64_t)(h % (uint64_t)mn);
}

static int64_t total_tokens(const struct pkb_dims *d)
{
	int64_t g = 0;
	for (int r = 0; r < d->world; r++)
		g += tokens(d, r);
	return g;
}

static double unit_roundoff(pkb_dtype t)
{
	return t == PKB_BF16 ? 1.0 / 256 : t == PKB_FP16 ? 1.0 / 2048 : 1.0 / 16777216.0;
}

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->m < 1 || d->n < 1)
		return pkb_io_fail(io, "M and N must be >= 1");
	if ((double)d->m * d->n * d->world > 4e18)
		return pkb_io_fail(io, "W*M*N overflows int64");
	pkb_io_input(io, "loss", d->dtype, PKB_NORMAL(0, 1), 0, (int64_t[]){ 0 });
	pkb_io_input(io, "local_valid_tokens", PKB_I64, PKB_HOSTGEN, 0, (int64_t[]){ 0 });
	pkb_io_input(io, "global_valid_tokens", PKB_I64, PKB_HOSTGEN, 0, (int64_t[]){ 0 });
	pkb_io_input(io, "grad_normalized_loss", d->dtype, PKB_NORMAL(0, 1), 0, (int64_t[]){ 0 });
	/* scaled so that g_sum * n_r (~1) is comparable with g_norm * n_r / G
	 * (~1/W); at unit scale it would bury the first term below T's ulp */
	pkb_io_input(io, "grad_loss_sum", d->dtype, PKB_NORMAL(0, 1.0 / ((double)d->m * d->n)),
		     0, (int64_t[]){ 0 });

	/*
	 * loss_sum is a sum of W terms in T, added in an unknown order (NCCL's
	 * ring rounds every partial sum to T). With cancellation the partial
	 * sums exceed the result, so the bound cannot be relative to it: each of
	 * the W-1 roundings errs by at most u * |partial| <= u * sum_r |loss_r|
	 * n_r, which is <= 3u*G unless the losses are beyond 3 sigma together:
	 * atol = 3*W*u*G. normalized_loss carries that error divided by G:
	 * atol = 3*W*u (0.047 in bf16 at W = 4). normalized_loss has std ~0.5
	 * there; a sum missing the other ranks is ~0.5 off, one weighted by 1/W
	 * instead of n_r/G ~0.3 off (each caught on ~90% of draws, so on every
	 * run over ranks and trials).
	 * grad_loss is local: four roundings to T (terms = 4). The harness
	 * describes an eval once, at its first trial, while G changes with the
	 * trial, so loss_sum's atol takes G's largest value, W*M*N (about 2x
	 * the typical G; normalized_loss, whose bound needs no G, stays tight).
	 */
	double u = unit_roundoff(d->dtype), g = (double)d->world * d->m * d->n;
	struct pkb_tol ts = { .atol = 3.0 * d->world * u * g, .terms = 1 };
	struct pkb_tol tn = { .atol = 3.0 * d->world * u, .terms = 1 };
	pkb_io_output(io, "normalized_loss", d->dtype, tn, 0, (int64_t[]){ 0 });
	pkb_io_output(io, "loss_sum", d->dtype, ts, 0, (int64_t[]){ 0 });
	pkb_io_output(io, "grad_loss", d->dtype, PKB_TOL_SUM(4), 0, (int64_t[]){ 0 });
	return 0;
}

static int gen_host(const struct pkb_dims *d, int index, uint64_t seed, void *buf, size_t bytes)
{
	(void)seed;
	if (bytes != sizeof(int64_t))
		return -1;
	int64_t v;
	if (index == 1)
		v = tokens(d, d->rank);
	else if (index == 2)
		v = total_tokens(d);
	else
		return -1;
	*(int64_t *)buf = v;
	return 0;
}

/* One T scalar all-reduced: 2 (W-1)/W * 2 bytes in bf16 -- pure latency
 * (a few us), the whole cost of the problem. A dozen scalar flops. */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double w = d->world;
	c->net_bytes = 2 * (w - 1) / w * pkb_dtype_size(d->dtype);
	c->flops = 10;
	c->flop_kind = PKB_FLOPS_VECTOR;
	c->note = "all-reduce of one scalar + scalar arithmetic";
}

const struct pkb_problem pkb_problem_023 = {
	.id = 23,
	.name = "grad_acc_loss",
	.title = "Token-weighted loss all-reduce + its backward",
	.category = "Data Parallel",
	.origin = "gradient-accumulation loss normalisation (VeOmni / NeMo style; inferred)",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.gen_host = gen_host,
	.cost = cost,
};
