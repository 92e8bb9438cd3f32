/*
 * 012_allgather_gemm -- all-gather a K-sharded A, then
 * C = A @ B with each rank's own B.
 *
 * K = 512 is fixed. A (M, K) is split along K: rank r holds the column slice
 * A_local = A[:, r*K/W : (r+1)*K/W], shape (M, K/W). Every rank also holds a
 * full B (K, N), but its own: the original seeds every input per rank, so B
 * differs per rank and rank r returns C = A @ B_r, a different (M, N) on every
 * rank. The original all-gathers the shards (list API), concatenates them
 * along columns into A (M, K) and returns A @ B_r: the same values as 011,
 * which gathers transposes instead.
 *
 * Minimum traffic per rank: receive the other W-1 shards of A,
 * (W-1) * M*K/W*e bytes: 768 KiB at M = 1024, bf16, W = 4. GEMM: 2*M*K*N
 * FLOPs per rank (1.07 GFLOP at M = N = 1024).
 */
#include "pkb_problem.h"

#define K_DIM 512

/*
 * C is one rounding of an fp32-accumulated dot product of length K: the
 * default terms = 1, plus the accumulation itself. That rounds K times at
 * 2^-24 of a partial sum no larger than amax(C), i.e. K * 2^-24 / u terms in
 * the output's units: 0.008 for bf16, 0.06 for fp16 (invisible), but 512 for
 * fp32, where a candidate that accumulates in another order than cuBLAS must
 * pass (a reversed sequential fp32 sum of 512 products lands up to ~17 u*amax
 * away, simulated on the host). TF32 (relative error ~4e-4) still fails the
 * l2 bound (2.7e-6) by ~150x. A split-K GEMM whose split partials are rounded
 * to bf16 before their sum (cuBLAS's reduced-precision reduction, allowed by
 * torch's defaults) lands at most 0.44 terms away (simulated, 2-16 splits).
 */
static struct pkb_tol gemm_tol(pkb_dtype t)
{
	return (struct pkb_tol){ .terms = 1.0 + K_DIM * 0x1p-24 / pkb_dtype_unit_roundoff(t) };
}

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	int64_t w = d->world, m = d->m, n = d->n;

	if (d->dtype != PKB_BF16 && d->dtype != PKB_FP16 && d->dtype != PKB_FP32)
		return pkb_io_fail(io, "dtype must be bf16, fp16 or fp32");
	if (K_DIM % w)
		return pkb_io_fail(io, "W = %d must divide K = %d", d->world, K_DIM);
	pkb_io_input(io, "A_local", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(m, K_DIM / w));
	pkb_io_input(io, "B", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(K_DIM, n));
	pkb_io_output(io, "C", d->dtype, gemm_tol(d->dtype), PKB_SHAPE(m, n));
	return 0;
}

/* Receive the other W-1 shards of A -- or, when N is tiny, the peers' K/W
 * rows of this rank's B plus their (M, N) partial products, whichever is
 * less (as 011). The GEMM on the tensor cores; HBM: at least its inputs and
 * C (a fused kernel need not write the gathered A). */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double w = d->world, e = pkb_dtype_size(d->dtype), kl = K_DIM / w;
	double gather = d->m * kl, partials = d->n * (d->m + kl);
	c->net_bytes = (w - 1) * (gather < partials ? gather : partials) * e;
	c->flops = 2.0 * d->m * K_DIM * d->n;
	c->flop_kind = PKB_FLOPS_TENSOR;
	c->note = "all-gather of A + one GEMM";
}

const struct pkb_problem pkb_problem_012 = {
	.id = 12,
	.name = "allgather_gemm",
	.title = "All-gather + GEMM",
	.category = "Tensor Parallel",
	.origin = "all_gather of A shards + cat + matmul (AG+GEMM)",
	.worlds = PKB_WORLD(2) | PKB_WORLD(4) | PKB_WORLD(8) | PKB_WORLD(16) | PKB_WORLD(32),
	.describe = describe,
	.cost = cost,
};
