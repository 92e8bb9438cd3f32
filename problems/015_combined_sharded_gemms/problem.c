/*
 * 015_combined_sharded_gemms -- all-gather -> GEMM + SiLU -> GEMM ->
 * reduce-scatter, the sharded MLP block the original composes.
 *
 * Sizes: Mr = roundup(M, W) rows, H = roundup(256, W) hidden, F = 512,
 * Ml = Mr/W, Hl = H/W. Rank r holds x_local (Mr, Hl), its column slice of
 * x_full (Mr, H) = [x_local_0 | ... | x_local_{W-1}], and its own W1 (H, F)
 * and W2 (F, H) (seeded per rank, so different on every rank). The original
 * gathers x_full, computes a = silu(x_full @ W1) for all Mr rows, keeps this
 * rank's rows a[r*Ml : (r+1)*Ml], multiplies by W2 into an otherwise zero
 * (Mr, H) buffer at those rows, and sum-reduce-scatters the buffers by rows.
 * Every other rank contributes zeros to rank r's rows, so the output is
 *   y_local = silu(x_full[r*Ml : (r+1)*Ml] @ W1_r) @ W2_r,  (Ml, H),
 * with h = x @ W1 and a = silu(h) rounded to the working dtype in between.
 *
 * Minimum traffic per rank: rank r needs only rows r*Ml .. of the other
 * ranks' x_local: (W-1) * Ml*Hl*e bytes received (96 KiB at M = 1024, bf16,
 * W = 4); the reduce-scatter needs no bytes at all. FLOPs (minimum):
 * 2*Ml*H*F * 2 per rank (134 MFLOP at M = 1024, W = 4).
 */
#include "pkb_problem.h"

#define H_BASE 256
#define F_DIM 512

static int64_t roundup(int64_t a, int64_t b)
{
	return (a + b - 1) / b * b;
}

/*
 * y goes through two roundings of intermediates, h and a = silu(h), each
 * propagated through the second GEMM, then its own: terms = 2
 * (docs/TOLERANCE.md). A candidate that keeps h and a in fp32 (fused
 * epilogue) must pass: simulated on the host (Ml = H = 256, F = 512) it
 * lands at most 0.33 terms (bf16) / 0.45 (fp16) from the rounded chain.
 * Plus both GEMMs' fp32 accumulations, (H + F) * 2^-24 / u terms in the
 * output's units: 0.012 at bf16 (invisible), 768 at fp32, where another
 * accumulation order than cuBLAS's must pass (~17 u*amax for a reversed
 * length-512 fp32 dot product). The zeros of the reduce-scatter add nothing.
 */
static struct pkb_tol mlp_tol(pkb_dtype t, int64_t h)
{
	return (struct pkb_tol){ .terms = 2.0 + (h + F_DIM) * 0x1p-24 / pkb_dtype_unit_roundoff(t) };
}

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	int64_t w = d->world, mr = roundup(d->m, w), h = roundup(H_BASE, w);

	if (d->dtype != PKB_BF16 && d->dtype != PKB_FP16 && d->dtype != PKB_FP32)
		return pkb_io_fail(io, "dtype must be bf16, fp16 or fp32");
	pkb_io_input(io, "x_local", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(mr, h / w));
	pkb_io_input(io, "W1", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(h, F_DIM));
	pkb_io_input(io, "W2", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(F_DIM, h));
	pkb_io_output(io, "y_local", d->dtype, mlp_tol(d->dtype, h), PKB_SHAPE(mr / w, h));
	return 0;
}

/* Only X's Ml rows matter: receive their Hl columns from each peer (sending
 * W1's rows out and partial (Ml, F) products back would move more, F > Hl);
 * the reduce-scatter adds zeros and needs nothing. Two GEMMs of Ml rows on
 * the tensor cores (SiLU is noise). HBM: the default; every row block of
 * x_local is read by the one rank that needs it. */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	int64_t w = d->world, ml = roundup(d->m, w) / w, h = roundup(H_BASE, w);
	double e = pkb_dtype_size(d->dtype);
	c->net_bytes = (double)(w - 1) * ml * (h / w) * e;
	c->flops = 2.0 * 2.0 * ml * h * F_DIM;
	c->flop_kind = PKB_FLOPS_TENSOR;
	c->note = "gather own rows of x + two GEMMs, no reduce-scatter";
}

const struct pkb_problem pkb_problem_015 = {
	.id = 15,
	.name = "combined_sharded_gemms",
	.title = "All-gather -> GEMM+SiLU -> GEMM -> reduce-scatter",
	.category = "Tensor Parallel",
	.origin = "all_gather + matmul + silu + matmul + reduce_scatter_tensor (sharded MLP)",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.cost = cost,
};
