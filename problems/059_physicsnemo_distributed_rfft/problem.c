/*
 * 059_physicsnemo_distributed_rfft -- PhysicsNeMo's distributed 2D real FFT
 * (pencil decomposition): a global real field (B, H, Wd), split by columns,
 * transformed along H, transposed across ranks by an all-to-all, then
 * transformed along Wd and truncated to the non-negative frequencies.
 *
 * Rank r holds x (B, H, Wd/W) fp32 (pinned: fp32 whatever the harness
 * dtype): columns [r Wd/W, (r+1) Wd/W) of the global field. With 'ortho'
 * normalisation (1/sqrt(n) per transform):
 *     y = fft(x, n=H, dim=1)                       (B, H, Wd/W) complex
 *     all-to-all: y's row block j goes to rank j; the pieces received are
 *     concatenated along dim 2 in rank order       (B, H/W, Wd)
 *     z = fft(., n=Wd, dim=2)[..., :Wd/2+1]        (B, H/W, Wd/2+1) complex64
 * = rank r's row block of rfft2(x_global, norm='ortho').
 *
 * B = max(1, M/64), H = roundup(max(16, M), W), Wd = roundup(max(16, N), W)
 * (the original's sizing). The original draws the global field with rank
 * 0's seed and slices it; columns drawn independently per rank are the same
 * distribution. Per rank at M = N = 1024, W = 4: 16 MiB in, 16.8 MB out, an
 * all-to-all of 32 MiB of complex64 ((W-1)/W of it crosses: 24 MiB).
 */
#include "pkb_problem.h"

static int64_t round_up(int64_t a, int64_t b)
{
	return (a + b - 1) / b * b;
}

struct dims059 {
	int64_t b, h, wd;
};

static struct dims059 dims_of(const struct pkb_dims *d)
{
	struct dims059 g = {
		.b = d->m / 64 > 1 ? d->m / 64 : 1,
		.h = round_up(d->m > 16 ? d->m : 16, d->world),
		.wd = round_up(d->n > 16 ? d->n : 16, d->world),
	};
	return g;
}

static double log2_of(double v)
{
	double l = 0;
	while (v >= 2) {
		v /= 2;
		l++;
	}
	return l + (v - 1);   /* linear between powers of two: close enough here */
}

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->m < 1 || d->n < 1)
		return pkb_io_fail(io, "M and N must be >= 1");
	struct dims059 g = dims_of(d);
	if (g.b * g.h * g.wd > ((int64_t)1 << 31))
		return pkb_io_fail(io, "B*H*Wd = %lld: at most 2^31 points",
				   (long long)(g.b * g.h * g.wd));
	pkb_io_input(io, "x", PKB_FP32, PKB_NORMAL(0, 1), PKB_SHAPE(g.b, g.h, g.wd / d->world));
	/* the original's s = (H, Wd), dim = (1, 2), norm = "ortho" */
	pkb_io_param(io, "s_0", (double)g.h);
	pkb_io_param(io, "s_1", (double)g.wd);
	pkb_io_param(io, "dim_0", 1);
	pkb_io_param(io, "dim_1", 2);
	pkb_io_param(io, "norm_ortho", 1);

	/*
	 * Complex64, both components compared (the original's .float() kept
	 * the real part only). Outputs are ~CN(0, 1): each component N(0, 1/2),
	 * amax ~3.8 at the default size. An fp32 FFT of length n rounds in
	 * log2 n butterfly stages, each adding ~u of the transform's scale to
	 * every output; two correct algorithms (cuFFT's R2C vs C2C plans,
	 * another radix, the scale applied once at the end) differ by a few u
	 * of the output's scale, spread over all elements -- not relative to
	 * each element. So terms = 2 (log2 H + log2 Wd) (40 at 1024 x 1024) in
	 * units of u * amax. Simulated on the host (B = 2, 1024 x 1024): a
	 * radix-2 fp32 FFT with fp32 twiddles, scale folded at the end, against
	 * fp32 pocketfft in the original's order: worst element 0.084 of its
	 * bound, l2 2.8u (limit 2u sqrt(41) = 12.8u); a four-step FFT (32 x
	 * 32) of naive fp32 DFT products, worse than any library: 0.11, 3.7u.
	 * The intermediate
	 * exchanged as fp16 (half the bytes): l2 3500u, worst element 94x its
	 * bound; bf16: 28000u.
	 */
	struct pkb_tol tol = { .terms = 2 * (log2_of((double)g.h) + log2_of((double)g.wd)) };
	pkb_io_output(io, "out", PKB_C64, tol, PKB_SHAPE(g.b, g.h / d->world, g.wd / 2 + 1));
	return 0;
}

/*
 * The pencil algorithm's all-to-all of the H-transformed columns: rank r
 * receives a (B, H/W, Wd/W) complex block from each of the W-1 others and
 * sends as many. Whatever the algorithm, r's output block (B, H/W,
 * Wd/2+1) is a linear image of the peers' data, of rank at most its own
 * size, so no more than that needs to arrive: less than the all-to-all
 * from W = 3 on. net_bytes is the smaller of the two (a lower bound either
 * way). FLOPs: 5 n log2 n per complex transform (2.5 n log2 n for the real
 * first one), on the CUDA cores. HBM: the default (input read, output
 * written).
 */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	struct dims059 g = dims_of(d);
	double w = d->world, hl = (double)g.h / w, wl = (double)g.wd / w;
	double a2a = (w - 1) * g.b * hl * wl * 8, blk = g.b * hl * (g.wd / 2 + 1) * 8.0;
	c->net_bytes = a2a < blk ? a2a : blk;
	c->flops = g.b * wl * 2.5 * g.h * log2_of((double)g.h) +
		   g.b * hl * 5.0 * g.wd * log2_of((double)g.wd);
	c->flop_kind = PKB_FLOPS_VECTOR;
	c->note = a2a < blk ? "FFT along H, all-to-all transpose, FFT along Wd"
			    : "FFT along H, all-to-all, FFT along Wd; bytes: the output block";
}

const struct pkb_problem pkb_problem_059 = {
	.id = 59,
	.name = "physicsnemo_distributed_rfft",
	.title = "Distributed 2D real FFT (pencil transpose)",
	.category = "Geometric / Spatial",
	.origin = "PhysicsNeMo distributed rfft2 (DistributedRFFT2, inferred)",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.cost = cost,
};
