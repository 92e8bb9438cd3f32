/*
 * 062_torchharmonics_spherical_convolution -- torch-harmonics' distributed
 * DISCO convolution on the sphere: a (lat, lon) grid split over a 2-D grid
 * of ranks, a sparse filter contraction, a polar reduction, two azimuth
 * transposes and a channel mix.
 *
 * Ranks form az x pol (az = 2 if W is even, else 1; pol = W/az), rank
 * r = p*az + a. The grid is nlat = roundup(128, pol) latitudes by
 * nlon = 2*nlat longitudes; rank (p, a) holds latitudes [p*L, (p+1)*L) and
 * longitudes [a*nl, (a+1)*nl), L = nlat/pol, nl = nlon/az, of
 *     x (32, 8, L, nl) fp32                        N(0, 1), its own draw
 *     psi: a sparse (3, nlat, L*nlon) COO matrix, coalesced (sorted by
 *          (k, o, col), no duplicates), as psi_indices (3, nnz) int64 and
 *          psi_values (nnz,) fp32 N(0, 0.05); nnz = 12*nlat; row (k, o)
 *          has the 4 entries col = ((o - p*L) mod L)*nlon + (o + e(k+1))
 *          mod nlon, e = 0..3 (the original's pattern)
 *     weight (8, 8, 3) fp32, bias (8,) fp32       N(0, 1), its own draws
 * and returns out (32, 8, L, nl) fp32:
 *     X_a(b, c, lat, lon): the full-longitude x of polar row q for the
 *         channels c of azimuth rank a (c in [4a, 4a+4) when az = 2), from
 *         ranks (q, 0..az-1) (the first azimuth transpose);
 *     Y(b, c, k, o, P) = sum_q sum_{(k, o, col, v) in psi of rank (q, c/(8/az))}
 *         v * X(b, c, col / nlon, (col % nlon + P) mod nlon)
 *         (the contraction on rank (q, a) with its own psi, summed over the
 *         polar group -- all-reduce, then rows [p*L, (p+1)*L) kept);
 *     out(b, o', i, l) = bias[o'] + sum_{c, k} weight[o', c, k] *
 *         Y(b, c, k, p*L + i, a*nl + l)   (after the reverse transpose).
 * psi's structure is the original's (fixed by the rank); its values, x,
 * weight and bias are random. Sizes are the original's: M, N unused.
 */
#include "pkb_problem.h"

#define BATCH 32
#define CHANS 8
#define KSIZE 3
#define ENTRIES 4

struct grid {
	int az, pol, p, a;
	int64_t nlat, nlon, l, nl;
};

static struct grid grid_of(const struct pkb_dims *d)
{
	struct grid g;
	g.az = d->world % 2 == 0 ? 2 : 1;
	g.pol = d->world / g.az;
	g.p = d->rank / g.az;
	g.a = d->rank % g.az;
	g.nlat = (128 + g.pol - 1) / g.pol * g.pol;
	g.nlon = 2 * g.nlat;
	g.l = g.nlat / g.pol;
	g.nl = g.nlon / g.az;
	return g;
}

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	struct grid g = grid_of(d);
	int64_t nnz = KSIZE * g.nlat * ENTRIES;
	pkb_io_input(io, "x", PKB_FP32, PKB_NORMAL(0, 1), PKB_SHAPE(BATCH, CHANS, g.l, g.nl));
	pkb_io_input(io, "psi_indices", PKB_I64, PKB_HOSTGEN, PKB_SHAPE(3, nnz));
	pkb_io_input(io, "psi_values", PKB_FP32, PKB_NORMAL(0, 0.05), PKB_SHAPE(nnz));
	pkb_io_input(io, "weight", PKB_FP32, PKB_NORMAL(0, 1), PKB_SHAPE(CHANS, CHANS, KSIZE));
	pkb_io_param(io, "groups", 1);
	pkb_io_param(io, "nlon_out", (double)g.nlon);
	pkb_io_param(io, "nlon_in", (double)g.nlon);
	pkb_io_param(io, "azimuth_size", g.az);
	pkb_io_param(io, "polar_size", g.pol);
	pkb_io_input(io, "bias", PKB_FP32, PKB_NORMAL(0, 1), PKB_SHAPE(CHANS));
	/*
	 * fp32 throughout. out is bias plus 24 products weight*Y: a sum of 25
	 * rounded terms; each Y is a sum of 4*pol products (4 entries per
	 * polar rank), |Y| ~0.1-0.5, below amax(out) ~4-6 once weighted:
	 * another order of either sum moves out by at most (25 + 4*pol) u*amax.
	 * PKB_TOL_SUM(25 + 4*pol): 29-41 u*amax, ~1.5e-5 absolute. Host
	 * simulation (numpy, the original's transposes, dense contraction with
	 * rolls, polar sum and einsum, batch 4, W = 2, 3, 4, 6, 8): this
	 * problem's per-output fp32 order differs from it by at most 6.9
	 * u*amax, fp64 by at most 2.4 u*amax. Without the polar reduction, with
	 * the rank's own filter for every channel, or with local data only, out
	 * is off by ~1e7 u*amax on every element.
	 */
	pkb_io_output(io, "out", PKB_FP32, PKB_TOL_SUM(25 + 4 * g.pol),
		      PKB_SHAPE(BATCH, CHANS, g.l, g.nl));
	return 0;
}

/* psi_indices: the original's pattern for this rank's polar row, in
 * coalesced order (k, o, col ascending) */
static int gen_host(const struct pkb_dims *d, int index, uint64_t seed, void *buf, size_t bytes)
{
	(void)seed;
	struct grid g = grid_of(d);
	int64_t nnz = KSIZE * g.nlat * ENTRIES, *idx = (int64_t *)buf;
	if (index != 1 || bytes != (size_t)(3 * nnz) * sizeof(int64_t))
		return -1;
	int64_t n = 0;
	for (int k = 0; k < KSIZE; k++)
		for (int64_t o = 0; o < g.nlat; o++) {
			int64_t lat = ((o - g.p * g.l) % g.l + g.l) % g.l, lon[ENTRIES];
			for (int e = 0; e < ENTRIES; e++)
				lon[e] = (o + e * (k + 1)) % g.nlon;
			for (int e = 1; e < ENTRIES; e++)   /* insertion sort */
				for (int j = e; j > 0 && lon[j - 1] > lon[j]; j--) {
					int64_t t = lon[j];
					lon[j] = lon[j - 1];
					lon[j - 1] = t;
				}
			for (int e = 0; e < ENTRIES; e++, n++) {
				idx[n] = k;
				idx[nnz + n] = o;
				idx[2 * nnz + n] = lat * g.nlon + lon[e];
			}
		}
	return 0;
}

/*
 * Rank (p, a)'s outputs read, for every polar row q, the x of latitudes
 * [q*L, (q+1)*L) (all of them: (o - q*L) mod L covers the tile) at
 * longitudes (o + s + P) mod nlon, s in {0, 1, 2, 3, 4, 6, 9}, o over its L
 * rows, P over its nl columns: nl + L + 9 longitudes at most. From each
 * other rank it needs those x values (all 8 channels) or a partial output
 * block (B*8*L*nl, the rank's share summed there), the smaller. Sending is
 * symmetric. The contraction: 24 products per output of each of 4*pol
 * entries, and the channel mix: 24 multiply-adds per output.
 */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	struct grid g = grid_of(d);
	int64_t want = g.nl + g.l + 9 < g.nlon ? g.nl + g.l + 9 : g.nlon;
	double recv = 0;
	for (int s = 0; s < d->world; s++) {
		if (s == d->rank)
			continue;
		int sa = s % g.az;
		/* longitudes of rank s's chunk among the wanted window
		 * [a*nl, a*nl + want) mod nlon */
		int64_t n = 0;
		for (int64_t j = 0; j < want; j++) {
			int64_t lon = (g.a * g.nl + j) % g.nlon;
			n += lon / g.nl == sa;
		}
		double raw = (double)BATCH * CHANS * g.l * n * 4;
		double part = (double)BATCH * CHANS * g.l * g.nl * 4;
		recv += raw < part ? raw : part;
	}
	double outs = (double)BATCH * CHANS * g.l * g.nl;
	c->net_bytes = recv;
	c->flops = outs * 2 * CHANS * KSIZE * (1 + ENTRIES * g.pol);
	c->flop_kind = PKB_FLOPS_VECTOR;
	c->note = "gather the x each output reads (or partial outputs), contract locally";
}

const struct pkb_problem pkb_problem_062 = {
	.id = 62,
	.name = "torchharmonics_spherical_convolution",
	.title = "Distributed DISCO spherical convolution (2D lat/lon grid)",
	.category = "Geometric / Spatial",
	.origin = "torch-harmonics DistributedDiscreteContinuousConvS2 (inferred)",
	.worlds = PKB_WORLDS_ANY & ((1ull << 17) - 1),
	.describe = describe,
	.gen_host = gen_host,
	.cost = cost,
};
