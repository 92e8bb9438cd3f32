/*
 * 070_torchrec_kjt_all2all -- torchrec's KeyedJaggedTensor all-to-all: the
 * sparse features of a recommendation model, sharded by feature.
 *
 * F = sum of key_splits features, key_splits[d] = 1 + d % 3 of them owned
 * by rank d (the features off_d .. off_d + ks_d - 1, off_d = sum of
 * key_splits[< d]). Every rank holds a jagged batch of bs samples: lengths
 * (F, bs) feature-major, and the ids of row (g, b) as the next lengths[g, b]
 * entries of values. Rank s sends to rank d the rows of d's features and
 * their ids; rank r returns them re-ordered from (source s, feature f) to
 * (feature f, source s) (torchrec's "recat"):
 *     lengths_out[(f*W + s)*bs + b] = lengths_s[(off_r + f)*bs + b]
 *     values_out = the ids of row (off_r + f) of source s, for f, then s
 *     stride = W*bs, stride_per_rank = [bs] * W.
 * bs = clamp(M/W, 512, 1024) as the original; lengths in [5, 20].
 *
 * The total of the lengths varies per rank and trial, and shapes cannot:
 * values is (F*bs*20,) (the most 20-long rows fill), its first sum(lengths)
 * entries count and the rest are to be ignored; the returned values is
 * (ks_r*W*bs*20,), the received ids then zeros.
 *
 * Minimum traffic per rank: receive ks_r*bs lengths and their ids from each
 * of the W-1 peers, send (F - ks_r)*bs rows: 13.5 int64 a row on average.
 */
#include "pkb_problem.h"

#define MAX_LEN 20   /* lengths are drawn in [5, 21) */

static int key_split(int d)
{
	return 1 + d % 3;
}

static int64_t batch(const struct pkb_dims *d)
{
	int64_t b = d->m / d->world;
	return b < 512 ? 512 : b > 1024 ? 1024 : b;
}

static int64_t features(int world)
{
	int64_t f = 0;
	for (int d = 0; d < world; d++)
		f += key_split(d);
	return f;
}

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->m < 1)
		return pkb_io_fail(io, "M must be >= 1");
	int64_t bs = batch(d), f = features(d->world), ks = key_split(d->rank);
	int64_t w = d->world;
	/* a structured input: drawn on the host (gen_host) */
	pkb_io_input(io, "lengths", PKB_I64, PKB_HOSTGEN, PKB_SHAPE(f * bs));
	/* ids as the original, torch.randint(0, 1000000) */
	pkb_io_input(io, "values", PKB_I64, PKB_RANDINT(0, 1000000),
		     PKB_SHAPE(f * bs * MAX_LEN));
	pkb_io_param(io, "batch_size", (double)bs);
	/* integers moved, never computed: exact */
	pkb_io_output(io, "lengths", PKB_I64, PKB_TOL_EXACT, PKB_SHAPE(ks * w * bs));
	pkb_io_output(io, "values", PKB_I64, PKB_TOL_EXACT, PKB_SHAPE(ks * w * bs * MAX_LEN));
	pkb_io_output(io, "stride", PKB_I64, PKB_TOL_EXACT, 0, (int64_t[]){ 0 });
	pkb_io_output(io, "stride_per_rank", PKB_I64, PKB_TOL_EXACT, PKB_SHAPE(w));
	return 0;
}

/* lengths: uniform integers in [5, 20], as the original's randint(5, 21) */
static int gen_host(const struct pkb_dims *d, int index, uint64_t seed, void *buf, size_t bytes)
{
	int64_t n = features(d->world) * batch(d);
	if (index != 0 || bytes != (size_t)n * sizeof(int64_t))
		return -1;
	uint64_t s = seed;
	for (int64_t i = 0; i < n; i++)
		((int64_t *)buf)[i] = 5 + (int64_t)(pkb_rng_next(&s) % (MAX_LEN - 4));
	return 0;
}

/*
 * Rows carry 12.5 ids on average (lengths uniform in [5, 20]), so a row
 * moves 13.5 int64 with its length. Receive ks_r*bs rows from each peer,
 * send (F - ks_r)*bs: the busier direction. HBM: the lengths and the ids
 * that count (not the whole padded values input) read once; the outputs
 * are left out (they may sit in L2). No arithmetic.
 */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double bs = (double)batch(d), f = (double)features(d->world), ks = key_split(d->rank);
	double row = (1 + 12.5) * 8, recv = (d->world - 1) * ks * bs * row;
	double send = (f - ks) * bs * row;
	c->net_bytes = recv > send ? recv : send;
	c->hbm_bytes = f * bs * row;
	c->flops = 0;
	c->flop_kind = PKB_FLOPS_VECTOR;
	c->note = "each row and its ids to its feature's owner, once";
}

const struct pkb_problem pkb_problem_070 = {
	.id = 70,
	.name = "torchrec_kjt_all2all",
	.title = "KeyedJaggedTensor all-to-all (feature-sharded sparse inputs)",
	.category = "Other",
	.origin = "torchrec KJTAllToAll",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.gen_host = gen_host,
	.cost = cost,
};
