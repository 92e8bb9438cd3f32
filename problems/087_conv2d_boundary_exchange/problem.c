/*
 * 087_conv2d_boundary_exchange -- a height-sharded 3x3 Conv2d with a halo
 * exchange (DistriFusion-style patch parallelism of a UNet conv, inferred):
 * the ranks form one chain along H, each holding local_h rows of the image;
 * every rank needs its neighbours' adjacent rows to convolve its own.
 *
 * Rank r holds x (1, C, local_h, 128), weight (C, C, 3, 3) and bias (C,) in
 * the harness dtype, all N(0, 1) and different on every rank (the
 * original's per-rank seed: every rank convolves with its own weight).
 *     xp = [row local_h-1 of rank r-1 (zeros on rank 0) | x | row 0 of rank
 *           r+1 (zeros on rank W-1)]                  (1, C, local_h+2, 128)
 *     y  = conv2d(xp, weight, bias, stride 1, padding (0, 1))
 *        (1, C, local_h, 128): y[co][h][w] = bias[co] + sum over ci, kh, kw
 *        of weight[co][ci][kh][kw] * xp[ci][h+kh][w+kw-1] (0 outside w)
 *
 * C = (320, 640, 1280)[min(N/512, 2)] (1280 at N = 1024), local_h = max(3,
 * 128 / max(1, W/2)): 128 at W = 2, 3; 64 at W = 4, 5; 32 at W = 8. The
 * chain covers W local_h rows (256 at W = 4), not the 128-row latent the
 * sizing suggests. The original all-gathers every rank's first and last
 * rows ((W-1) 2 C 128 e bytes received) and uses two of them.
 *
 * Per rank at W = 4, bf16: 2 C^2 9 64 128 = 242 GFLOP (an implicit GEMM of
 * 8192 x 11520 x 1280); 29.5 MB of weight; the halo is two rows, 640 KiB.
 */
#include "pkb_problem.h"

static int64_t channels_of(const struct pkb_dims *d)
{
	int64_t i = d->n / 512 < 2 ? d->n / 512 : 2;
	return i == 0 ? 320 : i == 1 ? 640 : 1280;
}

static int64_t rows_of(const struct pkb_dims *d)
{
	int64_t per = d->world / 2 > 1 ? d->world / 2 : 1, h = 128 / per;
	return h > 3 ? h : 3;
}

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->dtype != PKB_BF16 && d->dtype != PKB_FP16 && d->dtype != PKB_FP32)
		return pkb_io_fail(io, "dtype must be bf16, fp16 or fp32");
	if (d->m < 1 || d->n < 1)
		return pkb_io_fail(io, "M and N must be >= 1");
	int64_t c = channels_of(d), lh = rows_of(d);
	pkb_io_input(io, "x", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(1, c, lh, 128));
	pkb_io_input(io, "weight", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(c, c, 3, 3));
	pkb_io_input(io, "bias", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(c));
	pkb_io_param(io, "stride", 1);
	pkb_io_param(io, "padding", 1);

	/*
	 * The original (PyTorch on cuDNN) rounds the conv, an fp32 sum of 9C
	 * products, to the dtype, then adds the bias and rounds again. A
	 * candidate that adds the bias in fp32 and rounds once differs by up
	 * to u |conv| + an ulp of the result: the default rtol (2u) plus
	 * terms = 1 (u * amax). Plus the fp32 accumulation over K = 9C in
	 * another order, K * 2^-24 / u in the output's units: 0.18 at bf16
	 * and C = 1280, but 11520 at fp32, where a true-fp32 conv summed in
	 * another order must pass. Outputs are ~N(0, 9C) (std 107), amax
	 * ~520. Simulated on the host (C = 1280, 4 rows): 9 tap GEMMs
	 * accumulated in fp32 + bias, one rounding, vs the reference's order
	 * and two roundings: worst element 0.62 of its bound at bf16 (the
	 * structural worst is ~0.95: two ulps at the bottom of a binade),
	 * 0.29 at fp16, 0.001 at fp32; l2 within 0.25 of its limit. Zeros for
	 * the halo rows: 90x (bf16) to 800x (fp32) on the boundary rows. The
	 * bias dropped (N(0, 1), below an ulp of most outputs): 0.5% of the
	 * elements fail at bf16 (the channels with |bias| > 2.7), half at
	 * fp16 and fp32. TF32 at fp32: l2 23x its limit.
	 */
	struct pkb_tol tol = { .terms = 1 + 9.0 * c * 0x1p-24 / pkb_dtype_unit_roundoff(d->dtype) };
	pkb_io_output(io, "y", d->dtype, tol, PKB_SHAPE(1, c, lh, 128));
	return 0;
}

/* One row from each neighbour (the original gathers 2 (W-1) rows and uses
 * two): the rank receives, and sends, a row of C x 128 to each neighbour it
 * has. FLOPs: the conv as an implicit GEMM on the tensor cores. HBM: the
 * default (x, weight, bias, and y beyond one L2). */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double ch = (double)channels_of(d), e = pkb_dtype_size(d->dtype);
	int nbrs = (d->rank > 0) + (d->rank < d->world - 1);
	c->net_bytes = nbrs * ch * 128 * e;
	c->flops = 2 * ch * ch * 9 * (double)rows_of(d) * 128;
	c->flop_kind = PKB_FLOPS_TENSOR;
	c->note = "halo rows from the two neighbours, conv as an implicit GEMM";
}

const struct pkb_problem pkb_problem_087 = {
	.id = 87,
	.name = "conv2d_boundary_exchange",
	.title = "Height-sharded Conv2d 3x3 with halo exchange",
	.category = "Geometric / Spatial",
	.origin = "DistriFusion-style patch-parallel UNet conv (inferred)",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.cost = cost,
};
