/*
 * 027_moe_all2all_primitive -- the all-to-all of expert parallelism with
 * explicit split lists (torch all_to_all_single with input_split_sizes and
 * output_split_sizes; the Megatron / VeOmni EP helper, inferred).
 *
 * Rank r holds local_tensor (M, N) and two split lists: input_split_sizes
 * (W,), the rows it sends to each rank (consecutive segments of its input,
 * segment d to rank d), and output_split_sizes (W,), the rows it receives
 * from each. With S[j][d] = input_split_sizes of rank j at d, rank r's
 * output_split_sizes[j] = S[j][r], and its output (M, N) is the segments
 * S[j][r] rows long that every rank j sends it, in rank order:
 *     output_r = cat_j( local_tensor_j[sum_{d<r} S[j][d] : ... + S[j][r]] )
 *
 * The original passes [M/W]*W on every rank (the remainder on the last,
 * which breaks unless W | M). Here S is drawn per trial by gen_host, the
 * same matrix on every rank (a function of the trial, W and M only), with
 * every row and column summing to M (so the shapes stay (M, N)): splits
 * vary per rank and per trial from 0 up to a capacity
 * C = min(M, 2 ceil(M/W)), and the rows a rank keeps, S[r][r], are at most
 * ceil(M/W).
 *
 * Minimum traffic per rank: the M - S[r][r] rows it does not keep, both
 * ways: at least (M - ceil(M/W)) * N * e bytes (1.5 MiB at M = N = 1024,
 * bf16, W = 4).
 */
#include "pkb_problem.h"

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* ceil(M/W): the most rows a rank keeps */
static int64_t keep_cap(const struct pkb_dims *d) { return (d->m + d->world - 1) / d->world; }

/* C: the most rows one rank sends another (a capacity factor of 2) */
static int64_t capacity(const struct pkb_dims *d) { return min64(d->m, 2 * keep_cap(d)); }

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->m < 1 || d->n < 1)
		return pkb_io_fail(io, "M and N must be >= 1");
	if (d->world > 64)
		return pkb_io_fail(io, "W = %d: at most 64 ranks", d->world);
	pkb_io_input(io, "local_tensor", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(d->m, d->n));
	pkb_io_input(io, "input_split_sizes", PKB_I64, PKB_HOSTGEN, PKB_SHAPE(d->world));
	pkb_io_input(io, "output_split_sizes", PKB_I64, PKB_HOSTGEN, PKB_SHAPE(d->world));
	/* rows moved, not computed: every element equal, as a number */
	pkb_io_output(io, "output", d->dtype, PKB_TOL_EXACT, PKB_SHAPE(d->m, d->n));
	return 0;
}

/*
 * S (W x W, row-major) of this trial. Start from the even split (M/W each,
 * the remainder spread one row apart so that rows and columns both sum to
 * M), then 16 W^2 random exchanges: +t at (a, b) and (c, e), -t at (a, e)
 * and (c, b), which keep every row and column sum, with t drawn up to what
 * keeps the entries in [0, C] (the diagonal in [0, ceil(M/W)]). Splits
 * spread from 0 to C (W = 4, M = 1024: ~0.4% of them empty, 1.6% at
 * C = 512). A function of the trial, W and M only, not of the seed: every
 * rank draws the same S, as it must agree with its peers' splits.
 */
static void split_matrix(const struct pkb_dims *d, int64_t *s)
{
	int w = d->world;
	int64_t q = d->m / w, rem = d->m % w, kc = keep_cap(d), cap = capacity(d);
	for (int j = 0; j < w; j++)
		for (int k = 0; k < w; k++)
			s[j * w + k] = q + ((k - j + w) % w < rem);
	uint64_t st = 0x27a11ull ^ ((uint64_t)(uint32_t)d->trial << 24) ^ ((uint64_t)w << 16);
	st = pkb_rng_next(&st) ^ (uint64_t)d->m;
	for (int i = 0; i < 16 * w * w; i++) {
		int a = (int)(pkb_rng_next(&st) % w), c = (int)(pkb_rng_next(&st) % (w - 1));
		int b = (int)(pkb_rng_next(&st) % w), e = (int)(pkb_rng_next(&st) % (w - 1));
		c += c >= a;
		e += e >= b;
		int64_t up = min64((a == b ? kc : cap) - s[a * w + b], (c == e ? kc : cap) - s[c * w + e]);
		int64_t t = min64(up, min64(s[a * w + e], s[c * w + b]));
		if (t < 1)
			continue;
		t = 1 + (int64_t)(pkb_rng_next(&st) % (uint64_t)t);
		s[a * w + b] += t;
		s[c * w + e] += t;
		s[a * w + e] -= t;
		s[c * w + b] -= t;
	}
}

/* input_split_sizes: row `rank` of S; output_split_sizes: column `rank` */
static int gen_host(const struct pkb_dims *d, int index, uint64_t seed, void *buf, size_t bytes)
{
	(void)seed;
	int w = d->world;
	if ((index != 1 && index != 2) || bytes != (size_t)w * sizeof(int64_t) || w > 64)
		return -1;
	int64_t s[64 * 64], *out = (int64_t *)buf;
	split_matrix(d, s);
	for (int k = 0; k < w; k++)
		out[k] = index == 1 ? s[d->rank * w + k] : s[k * w + d->rank];
	return 0;
}

/* The rows a rank does not keep, sent and received: at least
 * M - ceil(M/W) of them whatever the trial (cost() cannot know the
 * trial's S: the bound holds for all). HBM: the default, the input read
 * and the output written. No arithmetic. */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	c->net_bytes = (double)(d->m - keep_cap(d)) * d->n * pkb_dtype_size(d->dtype);
	c->note = "direct exchange of the rows a rank does not keep";
}

const struct pkb_problem pkb_problem_027 = {
	.id = 27,
	.name = "moe_all2all_primitive",
	.title = "MoE all-to-all with explicit split lists",
	.category = "Expert Parallel",
	.origin = "Megatron-LM / VeOmni EP all_to_all helper (inferred)",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.gen_host = gen_host,
	.cost = cost,
};
