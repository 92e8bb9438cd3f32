/*
 * 085_distributed_sample_sort -- a distributed sort with exact rebalancing:
 * rank r returns slice r of the globally sorted values, every rank the same
 * share (the first total % W ranks one more).
 *
 * Rank r holds n_r values (local_shard, dtype T). With total = sum of n_r,
 * base = total / W and extra = total % W, rank r returns the sorted values
 * at global positions [r*base + min(r, extra), ... + base + (r < extra)).
 * The original runs a sample sort (local sort, regular samples, splitters,
 * a variable all-to-all, a merge, then a second all-to-all that rebalances
 * to exact shares); its result is this slice, whatever the splitters. Ties
 * are equal values, so the slice is unique as a list of numbers.
 *
 * Sizes as the original: L = max(4W, min(M/W, 4096)); n_r = L, except on
 * odd ranks when trial % 4 == 3, where n_r = 0 (empty shards). Shapes may
 * not change with the trial, so local_shard is (L,) and an int64 0-dim
 * input local_n says how many of its values count (the rest are to be
 * ignored); the output is (L,), the slice first, +inf after it (a slice is
 * at most ceil(total/W) <= L long).
 *
 * Values: T(u - r*max(1, n_r)) with u a random integer, as the original,
 * but u in [-K, K) with K = max(50, n_r), where the original draws u in
 * [-50, 50): at L >= 100 its bands never overlap, and concatenating the
 * shards in reverse rank order is the sort. Here each band overlaps its
 * neighbours' by half. Rounding to bf16 (spacing 2..128 above 256) keeps the
 * original's many duplicates.
 */
#include "pkb_problem.h"

static int64_t shard_len(const struct pkb_dims *d)
{
	int64_t w = d->world, l = d->m / w;
	l = l < 4096 ? l : 4096;
	return l > 4 * w ? l : 4 * w;
}

/* the count of rank d->rank at trial d->trial */
static int64_t valid_len(const struct pkb_dims *d)
{
	return d->trial % 4 == 3 && d->rank % 2 == 1 ? 0 : shard_len(d);
}

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->dtype != PKB_BF16 && d->dtype != PKB_FP16 && d->dtype != PKB_FP32)
		return pkb_io_fail(io, "dtype must be bf16, fp16 or fp32");
	if (d->m < 1)
		return pkb_io_fail(io, "M must be >= 1");
	int64_t l = shard_len(d);
	/* the most negative value, -K - (W-1) L, must stay finite in fp16 */
	if (d->dtype == PKB_FP16 && (double)d->world * l + 64 > 65504)
		return pkb_io_fail(io, "fp16 needs W*L < 65440 (L = %lld)", (long long)l);
	pkb_io_input(io, "local_shard", d->dtype, PKB_HOSTGEN, PKB_SHAPE(l));
	pkb_io_input(io, "local_n", PKB_I64, PKB_HOSTGEN, 0, (int64_t[]){ 0 });
	/* values moved and reordered, never computed: exact */
	pkb_io_output(io, "sorted_slice", d->dtype, PKB_TOL_EXACT, PKB_SHAPE(l));
	return 0;
}

/* local_shard: L values T(u - r*max(1, n)), u uniform in [-K, K); the
 * values past n are drawn too, and must be ignored. local_n: n. */
static int gen_host(const struct pkb_dims *d, int index, uint64_t seed, void *buf, size_t bytes)
{
	int64_t l = shard_len(d), n = valid_len(d);
	if (index == 1 && bytes == sizeof(int64_t)) {
		*(int64_t *)buf = n;
		return 0;
	}
	size_t e = pkb_dtype_size(d->dtype);
	if (index != 0 || bytes != (size_t)l * e)
		return -1;
	int64_t k = n > 50 ? n : 50, shift = (int64_t)d->rank * (n > 1 ? n : 1);
	uint64_t s = seed;
	for (int64_t i = 0; i < l; i++) {
		int64_t u = (int64_t)(pkb_rng_next(&s) % (uint64_t)(2 * k)) - k;
		float v = (float)(u - shift);   /* exact: |v| < 2^24 */
		pkb_dtype_store(d->dtype, buf, i, v);
	}
	return 0;
}

/*
 * Band r is centred on -r*L, so the sorted order runs from rank W-1's band
 * to rank 0's and rank r's slice is mostly rank W-1-r's values, half of
 * them overlapping its neighbours': with every rank active only the middle
 * rank of an odd W may keep most of its own. With the odd ranks empty
 * (trial % 4 == 3) every slice is about L/2 values. Some rank must receive
 * at least ~L/2 values in either layout: the bound. HBM: the default (the
 * shard read, the slice written). Compares only: no flops.
 */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	c->net_bytes = (double)(shard_len(d) / 2) * pkb_dtype_size(d->dtype);
	c->flops = 0;
	c->flop_kind = PKB_FLOPS_VECTOR;
	c->note = "each slice is mostly another rank's band: ~L/2 values cross";
}

const struct pkb_problem pkb_problem_085 = {
	.id = 85,
	.name = "distributed_sample_sort",
	.title = "Distributed sample sort with exact rebalancing",
	.category = "Other",
	.origin = "classic parallel sample sort (inferred)",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.gen_host = gen_host,
	.cost = cost,
};
