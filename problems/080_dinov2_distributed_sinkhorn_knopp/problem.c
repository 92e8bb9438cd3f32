/*
 * 080_dinov2_distributed_sinkhorn_knopp -- DINOv2's Sinkhorn-Knopp teacher
 * centering with the batch split across ranks.
 *
 * Rank r holds teacher_output (B, P) fp32 (pinned: fp32 whatever the harness
 * dtype), B = clamp(M, 512, 1024) samples and P = 16384 prototypes, drawn
 * 0.01 * N(0, 1), and n_masked_patches_tensor (1,) int64 = B. With
 * q = exp(teacher_output / 0.07)^T (P x B) and everything fp32:
 *     total_batch = sum_r n_masked_r              (= W*B, all-reduce)
 *     q /= sum_r sum(q_r)                         (all-reduce of one scalar)
 *     3 times: q /= rowsum(q) summed over ranks   (all-reduce of P floats)
 *              q /= P
 *              q /= colsum(q)                     (local: per sample)
 *              q /= total_batch
 *     q *= total_batch; return q^T (B, P)
 * Every column (sample) of the result sums to 1.
 *
 * Sizes are fixed apart from B (M only sets B; N is unused). Per rank:
 * 64 MiB in and 64 MiB out at B = 1024; the exchange is three all-reduces of
 * 64 KiB plus two scalars: a bandwidth-bound element-wise problem.
 */
#include "pkb_problem.h"

#define PROTOTYPES 16384

static int64_t batch_of(const struct pkb_dims *d)
{
	return d->m < 512 ? 512 : d->m > 1024 ? 1024 : d->m;
}

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->m < 1 || d->n < 1)
		return pkb_io_fail(io, "M and N must be >= 1");
	int64_t b = batch_of(d), p = PROTOTYPES;
	pkb_io_input(io, "teacher_output", PKB_FP32, PKB_NORMAL(0, 0.01), PKB_SHAPE(b, p));
	pkb_io_param(io, "teacher_temp", 0.07);
	/* the number of local samples, as the original passes it (gen_host) */
	pkb_io_input(io, "n_masked_patches_tensor", PKB_I64, PKB_HOSTGEN, PKB_SHAPE(1));
	pkb_io_param(io, "n_iterations", 3);

	/*
	 * Outputs are ~1/P = 6e-5 (2.7e-5..1.3e-4): the original's atol = 1e-2
	 * passed anything, so the check is relative only (atol 0). The scale
	 * by the total mass cancels in the first row normalisation; what a
	 * correct reordering moves are the sums: a sum of K positive fp32
	 * terms in another order differs by ~u*sqrt(K)/3 rms relative
	 * (sequential, the worst correct order), ~4x that at the extreme of
	 * 8K-16K sums. Each element carries three row sums (K = W*B, up to
	 * 8192) and three column sums (K = P = 16384), each error shared by a
	 * whole row or column: coherent worst case 3 * 4/3 * u * (sqrt(P) +
	 * sqrt(WB)) = 4u(...); rtol = u*(64 + 6*(sqrt(P) + sqrt(WB))), 8.2e-5
	 * at W = 8, B = 1024. The rms of six such errors is ~sqrt(6)/3 u
	 * (sqrt(P)+sqrt(WB)); l2 = u*(32 + 1.5*(...)), ~2x above it. A row
	 * normalised by its local sum only is off by ~0.14/sqrt(B) = 0.6% rms
	 * (the exp values have a log-std of 0.01/0.07 = 0.14): 70x over rtol.
	 */
	double u = 1.0 / 16777216.0;
	double s = pkb_sqrt_pos((double)p) + pkb_sqrt_pos((double)d->world * b);
	struct pkb_tol tol = { .rtol = u * (64 + 6 * s), .l2 = u * (32 + 1.5 * s) };
	pkb_io_output(io, "Q", PKB_FP32, tol, PKB_SHAPE(b, p));
	return 0;
}

static int gen_host(const struct pkb_dims *d, int index, uint64_t seed, void *buf, size_t bytes)
{
	(void)seed;
	if (index != 1 || bytes != sizeof(int64_t))
		return -1;
	*(int64_t *)buf = batch_of(d);
	return 0;
}

/* The P row sums must cross: three all-reduces of P floats, 2 (W-1)/W * 4P
 * bytes each (a ring), plus two scalars (ignored). Per element: the exp and
 * its scale, then per iteration an add to each of the two sums and the
 * divisions (folded into one multiply by a row and a column factor): ~10
 * FLOPs. HBM: the default -- the input read once and the output written once;
 * the B x P matrix (64 MiB at B = 1024) does not fit in L2, so a real
 * implementation re-reads it per pass, which the bound does not demand. */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double w = d->world;
	c->net_bytes = 3 * 2 * (w - 1) / w * 4.0 * PROTOTYPES;
	c->flops = 10.0 * PROTOTYPES * batch_of(d);
	c->flop_kind = PKB_FLOPS_VECTOR;
	c->note = "exp, then 3 x (all-reduced row sums, local column sums)";
}

const struct pkb_problem pkb_problem_080 = {
	.id = 80,
	.name = "dinov2_distributed_sinkhorn_knopp",
	.title = "Distributed Sinkhorn-Knopp centering",
	.category = "Data Parallel",
	.origin = "DINOv2 SinkhornKnoppTeacher, distributed (inferred)",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.gen_host = gen_host,
	.cost = cost,
};
