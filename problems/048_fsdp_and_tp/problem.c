/*
 * 048_fsdp_and_tp -- forward of a SwiGLU-style MLP on a 2D mesh: FSDP
 * shards the weights (all-gathered before use), tensor parallelism splits
 * the hidden dimension (a sum all-reduce of the output).
 *
 * W = n_tp * n_fsdp with n_tp the smallest factor >= 2 whose cofactor is
 * >= 2 (W = 4: 2 x 2, 8: 2 x 4, 6: 2 x 3, 9: 3 x 3), else n_tp = 1 (prime W,
 * W = 2: no TP). tp = rank % n_tp, f = rank / n_tp; the TP group is the
 * n_tp consecutive ranks f*n_tp + t, the FSDP group the ranks with the same
 * tp. Sizes as the original: D = roundup(clamp(N, 32, 256), lcm(n_tp,
 * n_fsdp)), D_ff = roundup(max(64, M), n_tp), B = roundup(max(2M, 2W),
 * n_fsdp); Bf = B/n_fsdp, Dl = D/n_fsdp, Fl = D_ff/n_tp.
 *
 * Global x (B, D), W1, W2 (D, D_ff), W3 (D_ff, D). Rank (f, tp) holds x's
 * row block f (Bf, D) -- the same on the ranks of a TP group -- and the
 * tiles W1[f, tp], W2[f, tp] (Dl, Fl) and W3[tp, f] (Fl, Dl). It gathers
 * over its FSDP group W1[:, tp], W2[:, tp] (D, Fl; the tiles stacked by
 * rows) and W3[tp, :] (Fl, D; stacked by columns), computes
 *     y_tp = (silu(x W1[:, tp]) * (x W2[:, tp])) W3[tp, :]
 * (each product and op rounded to T) and returns y = sum over its TP group
 * of y_tp, (Bf, D).
 *
 * Minimum traffic per rank: the (n_fsdp-1) other tiles of the three
 * weights, 3 (n_fsdp-1) Dl Fl e, plus the TP all-reduce of y, 2 (n_tp-1)/
 * n_tp Bf D e (at W = 4, bf16: 384 KiB + 512 KiB).
 */
#include <math.h>
#include "pkb_problem.h"

struct dims48 {
	int64_t n_tp, n_fsdp, d, d_ff, b, bf, dl, fl;
};

static int64_t roundup(int64_t a, int64_t b)
{
	return (a + b - 1) / b * b;
}

static int64_t gcd64(int64_t a, int64_t b)
{
	while (b) {
		int64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/* the original's _factor_tp_fsdp and input sizes */
static void mesh_dims(const struct pkb_dims *d, struct dims48 *o)
{
	int64_t w = d->world, base = d->n < 32 ? 32 : d->n > 256 ? 256 : d->n;
	o->n_tp = 1;
	for (int64_t t = 2; t < w; t++)
		if (w % t == 0 && w / t >= 2) {
			o->n_tp = t;
			break;
		}
	o->n_fsdp = w / o->n_tp;
	int64_t lcm = o->n_tp / gcd64(o->n_tp, o->n_fsdp) * o->n_fsdp;
	o->d = roundup(base, lcm);
	o->d_ff = roundup(d->m > 64 ? d->m : 64, o->n_tp);
	o->b = roundup(2 * d->m > 2 * w ? 2 * d->m : 2 * w, o->n_fsdp);
	o->bf = o->b / o->n_fsdp;
	o->dl = o->d / o->n_fsdp;
	o->fl = o->d_ff / o->n_tp;
}

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	struct dims48 g;
	if (d->dtype != PKB_BF16 && d->dtype != PKB_FP16 && d->dtype != PKB_FP32)
		return pkb_io_fail(io, "dtype must be bf16, fp16 or fp32");
	if (d->m < 1 || d->n < 1)
		return pkb_io_fail(io, "M and N must be >= 1");
	mesh_dims(d, &g);
	/* x: row block f of one global x, drawn from a key every rank shares
	 * (gen_host), so that the ranks of a TP group hold the same rows */
	pkb_io_input(io, "x_local", d->dtype, PKB_HOSTGEN, PKB_SHAPE(g.bf, g.d))
		->same_on_all_ranks = 1;
	/* each rank's tiles are its own: distributed as tiles of one randn */
	pkb_io_input(io, "W1_shard", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(g.dl, g.fl));
	pkb_io_input(io, "W2_shard", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(g.dl, g.fl));
	pkb_io_input(io, "W3_shard", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(g.fl, g.dl));
	pkb_io_param(io, "n_tp", (double)g.n_tp);
	pkb_io_param(io, "n_fsdp", (double)g.n_fsdp);

	/*
	 * y is a sum over the n_tp ranks of rounded partials (the reference
	 * adds them in NCCL's order, rounding after each add; n_tp = 2 is
	 * order-free), each partial the end of four rounded intermediates
	 * (x W1, x W2, silu, the product) that a fused candidate keeps in
	 * fp32: terms = n_tp + 4, plus the two fp32 GEMM accumulations of every
	 * partial (K = D and Fl), n_tp (D + Fl) 2^-24/u terms: 0.05 in bf16
	 * at the default, 1536 in fp32 (013's argument). Host simulation
	 * (bf16, fp16, fp32; W = 2, 4, 8, 9; the default shape): fp32 partials
	 * summed once need at most 0.65 terms, the whole chain in fp32 0.88,
	 * the reversed order at n_tp = 3 0.47; skipping the TP all-reduce
	 * needs >= 170, a W3 gathered as a flat concatenation >= 350.
	 */
	double u = pkb_dtype_unit_roundoff(d->dtype);
	double terms = g.n_tp + 4 + g.n_tp * (double)(g.d + g.fl) * 0x1p-24 / u;
	pkb_io_output(io, "y", d->dtype, PKB_TOL_SUM(terms), PKB_SHAPE(g.bf, g.d));
	return 0;
}

/* x_local: element (i, j) of the global x (B, D) is N(0, 1) by Box-Muller
 * on the hash of (seed, i*D + j); seed is the same on every rank (the input
 * is same_on_all_ranks), so rank (f, tp) draws the rows of block f */
static int gen_host(const struct pkb_dims *d, int index, uint64_t seed, void *buf, size_t bytes)
{
	struct dims48 g;
	mesh_dims(d, &g);
	size_t e = pkb_dtype_size(d->dtype), n = (size_t)(g.bf * g.d);
	if (index != 0 || bytes != n * e)
		return -1;
	uint64_t first = (uint64_t)(d->rank / g.n_tp) * n;
	for (size_t k = 0; k < n; k++) {
		uint64_t r = pkb_rng_mix(seed ^ pkb_rng_mix(first + k));
		double u1 = ((double)(r >> 40) + 0.5) * 0x1p-24, u2 = (double)(r & 0xffffffu) * 0x1p-24;
		float v = (float)pkb_rng_box_muller(u1, u2);
		pkb_dtype_store(d->dtype, buf, (int64_t)k, v);
	}
	return 0;
}

/* Receive the (n_fsdp - 1) other tiles of W1, W2, W3 and the TP
 * all-reduce's 2 (n_tp - 1)/n_tp of y (reduce-scatter + all-gather), or,
 * where less, every other rank's tiles (3 (W-1) Dl Fl e: the whole MLP
 * computed locally, no all-reduce; more at the default, 1.13 MiB against
 * 896 KiB at W = 4, bf16). FLOPs: 2 Bf D Fl for each of x W1, x W2 and
 * z W3, this rank's share. HBM: the default. */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	struct dims48 g;
	mesh_dims(d, &g);
	double e = pkb_dtype_size(d->dtype), tile = (double)g.dl * g.fl;
	double mesh = 3.0 * (g.n_fsdp - 1) * tile + 2.0 * (g.n_tp - 1) / g.n_tp * g.bf * g.d;
	double all = 3.0 * (d->world - 1) * tile;
	c->net_bytes = (mesh < all ? mesh : all) * e;
	c->flops = 6.0 * g.bf * g.d * g.fl;
	c->flop_kind = PKB_FLOPS_TENSOR;
	c->note = mesh <= all ? "FSDP all-gather of 3 weight tiles + 3 GEMMs + TP all-reduce"
			      : "all-gather of every weight tile + 3 GEMMs, no all-reduce";
}

const struct pkb_problem pkb_problem_048 = {
	.id = 48,
	.name = "fsdp_and_tp",
	.title = "2D FSDP x TP SwiGLU MLP forward",
	.category = "FSDP / ZeRO",
	.origin = "torchtitan-style 2D (FSDP + TP) parallel MLP (inferred)",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.gen_host = gen_host,
	.cost = cost,
};
