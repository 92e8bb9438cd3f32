/*
 * 071_hyena_conv1d_boundary_exchange -- Hyena's short causal depthwise
 * conv1d under zigzag context parallelism (Savanna / Evo 2 style,
 * inferred): the sequence is cut into 2W chunks and rank r holds chunks r
 * and 2W-1-r, so each of its halves needs the K-1 samples before it from
 * another rank.
 *
 * Fixed sizes (M and N are unused): C = 1024 channels, chunk = 1024, K = 7
 * taps, halo = K-1 = 6. Rank r holds x (1, C, 2 chunk) = [chunk r | chunk
 * 2W-1-r] and weight (C, 1, K) in the harness dtype, N(0, 1), different on
 * every rank (the original's per-rank seed). With a = the first half, b =
 * the second:
 *     pad_a = the last 6 samples of rank r-1's a (zeros on rank 0)
 *     pad_b = the last 6 samples of rank r+1's b; on rank W-1 its own a's
 *             (chunk W-1 precedes chunk W, both on rank W-1)
 *     y[c][t] = sum_j<K weight[c][0][j] * [pad_h | half h][c][t + j]
 * per half h (cross-correlation, groups = C, no bias): (1, C, 2 chunk).
 *
 * Per rank: 4 MiB in and out at bf16, 29 MFLOP; the halos are 2 x C x 6
 * elements (24 KiB at bf16) each way: a latency-bound exchange.
 */
#include "pkb_problem.h"

#define CH 1024
#define CHUNK 1024
#define TAPS 7

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->dtype != PKB_BF16 && d->dtype != PKB_FP16 && d->dtype != PKB_FP32)
		return pkb_io_fail(io, "dtype must be bf16, fp16 or fp32");
	if (d->m < 1 || d->n < 1)
		return pkb_io_fail(io, "M and N must be >= 1");
	pkb_io_input(io, "x", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(1, CH, 2 * CHUNK));
	pkb_io_input(io, "weight", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(CH, 1, TAPS));

	/*
	 * One rounding of an fp32 sum of K = 7 products: the default (rtol 2u,
	 * terms 1), plus K 2^-24 / u for the fp32 sum in another order (7 at
	 * fp32). Simulated on the host (1024 x 1024 outputs): the taps summed
	 * in reverse, or exactly then rounded, vs in order: worst element
	 * 0.02 (bf16), 0.3 (fp16), 0.2 (fp32) of its bound. Zero halos: the
	 * first 6 outputs of a half fail, 68x (bf16) to 1e6x (fp32) the bound.
	 */
	struct pkb_tol tol = { .terms = 1 + TAPS * 0x1p-24 / pkb_dtype_unit_roundoff(d->dtype) };
	pkb_io_output(io, "y", d->dtype, tol, PKB_SHAPE(1, CH, 2 * CHUNK));
	return 0;
}

/* Two halos of C x 6 elements in and two out (one each for the end ranks;
 * rank W-1's second halo is its own). 2 K FLOPs per output on the CUDA
 * cores. HBM: the default (x in, y out). */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double e = pkb_dtype_size(d->dtype);
	int nbrs = (d->rank > 0) + (d->rank < d->world - 1);
	c->net_bytes = nbrs * CH * (TAPS - 1) * e;
	c->flops = 2.0 * TAPS * CH * 2 * CHUNK;
	c->flop_kind = PKB_FLOPS_VECTOR;
	c->note = "halo exchange with the two chain neighbours, depthwise conv";
}

const struct pkb_problem pkb_problem_071 = {
	.id = 71,
	.name = "hyena_conv1d_boundary_exchange",
	.title = "Zigzag context-parallel causal depthwise conv1d (halo exchange)",
	.category = "Sequence Parallel",
	.origin = "Hyena short conv with zigzag context parallelism (Savanna / Evo 2, inferred)",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.cost = cost,
};
