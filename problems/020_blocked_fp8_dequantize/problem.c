/*
 * 020_blocked_fp8_dequantize -- blocked dequantization x = y * s, then an
 * all-to-all of the fp32 result.
 *
 * Rank r holds local_y (W, M, N) and local_s (W, M*N/128), both in the
 * harness dtype (random normals: the original never stores real fp8 codes).
 * Over the flat (row-major) local_y, element i belongs to block i / 128 and
 * x[i] = float(y[i]) * float(s[i / 128]) in fp32. Chunk j = x[j] (M, N) goes
 * to rank j: rank r returns out (W, M, N) fp32 with out[j] = rank j's x[r]
 * (all_to_all_single with equal splits along dim 0).
 *
 * Minimum traffic per rank: the smaller of (W-1) * M*N * 4 bytes received as
 * fp32 (12 MiB at M = N = 1024, W = 4) and (W-1) * M*N * (e + e/128) bytes
 * for a candidate that ships y and s and multiplies on arrival (6.05 MiB at
 * bf16; the product is the same either way: see the tolerance).
 */
#include "pkb_problem.h"

#define BLOCK_SIZE 128

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->dtype != PKB_BF16 && d->dtype != PKB_FP16 && d->dtype != PKB_FP32)
		return pkb_io_fail(io, "dtype must be bf16, fp16 or fp32");
	if ((d->m * d->n) % BLOCK_SIZE)
		return pkb_io_fail(io, "M*N = %lld is not a multiple of block_size %d",
				   (long long)(d->m * d->n), BLOCK_SIZE);
	pkb_io_input(io, "local_y", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(d->world, d->m, d->n));
	pkb_io_input(io, "local_s", d->dtype, PKB_NORMAL(0, 1),
		     PKB_SHAPE(d->world, d->m * d->n / BLOCK_SIZE));
	pkb_io_param(io, "block_size", BLOCK_SIZE);
	/*
	 * Exact. A bf16 x bf16 product has at most 16 significant bits and an
	 * fp16 x fp16 product 22, so both are exact in fp32; an fp32 x fp32
	 * product is one IEEE rounding, the same on every correct candidate.
	 * Shipping x in a narrower type, or multiplying in one, is wrong.
	 */
	pkb_io_output(io, "out", PKB_FP32, PKB_TOL_EXACT, PKB_SHAPE(d->world, d->m, d->n));
	return 0;
}

/* Every chunk but the rank's own must arrive: as fp32 x (4 bytes an
 * element) or as y and its scale in the input dtype (e + e/128), whichever
 * is smaller -- the raw y and s at bf16/fp16, x at fp32. One fp32 multiply
 * per element of its W*M*N (before sending or on arrival). HBM: read y and
 * s, write out. */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double w = d->world, e = pkb_dtype_size(d->dtype), mn = (double)d->m * d->n;
	double raw = e + e / BLOCK_SIZE;
	c->net_bytes = (w - 1) * mn * (raw < 4 ? raw : 4);
	c->flops = w * mn;
	c->flop_kind = PKB_FLOPS_VECTOR;
	c->note = d->dtype == PKB_FP32 ? "dequantize + all-to-all of fp32 x"
				       : "all-to-all of raw y and s, multiply on arrival";
}

const struct pkb_problem pkb_problem_020 = {
	.id = 20,
	.name = "blocked_fp8_dequantize",
	.title = "Blocked dequantize (x = y*s) + all-to-all",
	.category = "Tensor Parallel",
	.origin = "DeepSeek-V3 style block dequantization (Triton kernel) + all_to_all_single",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.cost = cost,
};
