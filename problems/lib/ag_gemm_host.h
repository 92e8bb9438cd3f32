/*
 * ag_gemm_host.h -- the host side that 011 and 012 share: the same
 * all-gather + GEMM (011 gathers A's shards as transposes, 012 as they
 * are), so the same inputs, tolerance and cost. Included by the two
 * problem.c files, whose descriptors point at ag_gemm_describe and whose
 * cost() calls ag_gemm_cost and names the algorithm.
 */
#ifndef PKB_AG_GEMM_HOST_H
#define PKB_AG_GEMM_HOST_H

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
static inline struct pkb_tol gemm_tol(pkb_dtype t)
{
	return (struct pkb_tol){ .terms = 1.0 + K_DIM * 0x1p-24 / pkb_dtype_unit_roundoff(t) };
}

/* A_local (M, K/W), this rank's B (K, N), C (M, N) */
static inline int ag_gemm_describe(const struct pkb_dims *d, struct pkb_io *io)
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

/* From each other rank s, C needs A_s @ B[s's rows]: either receive the
 * shard A_s (M, K/W), or the partial product (M, N) that s computes from the
 * K/W rows of B it received (the same FLOPs either way): the cheaper of the
 * two. The GEMM on the tensor cores; HBM: the harness's default (inputs and
 * C; a fused kernel need not write the gathered A). 1 when gathering A is
 * the cheaper (or as cheap). */
static inline int ag_gemm_cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double w = d->world, e = pkb_dtype_size(d->dtype), m = d->m, n = d->n;
	double shard = m * (K_DIM / w), partial = n * (m + K_DIM / w);
	c->net_bytes = (w - 1) * (shard < partial ? shard : partial) * e;
	c->flops = 2.0 * d->m * K_DIM * d->n;
	c->flop_kind = PKB_FLOPS_TENSOR;
	return shard <= partial;
}

#endif /* PKB_AG_GEMM_HOST_H */
