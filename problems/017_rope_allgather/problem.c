/*
 * 017_rope_allgather -- rotary embedding on sequence shards, then an
 * all-gather along the sequence.
 *
 * B = max(1, M/64) sequences, T = max(1, N/64) positions, 8 heads of 64,
 * S = max(1, T/W) positions per rank. Rank r holds q, k (B, S, 8, 64) and
 * cos, sin (B, S, 64) for its positions and returns, identical on every rank,
 *     q_embed_global[b, r'*S + s, h, :] = rope(q_{r'}[b, s, h, :])   (same for k)
 * with rope(x) = x*cos + rotate_half(x)*sin, rotate_half([x1, x2]) = [-x2, x1]
 * (halves of the 64-wide head), cos/sin broadcast over heads. The gathered
 * blocks interleave per sequence b (concatenation along dim 1), so a rank's
 * block is not contiguous in the output unless B = 1.
 *
 * Minimum traffic per rank: the other ranks' embedded q and k,
 * 2 (W-1) * B*S*512*e bytes received (384 KiB at M = N = 1024, bf16, W = 4).
 */
#include "pkb_problem.h"
#include "heads_host.h"   /* defines: heads_check, heads_batch, heads_tokens */

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (heads_check(d, io) < 0)
		return -1;
	int64_t b = heads_batch(d), t = heads_tokens(d);
	int64_t s = t / d->world > 1 ? t / d->world : 1;
	int64_t w = d->world;

	pkb_io_input(io, "q_local", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(b, s, 8, 64));
	pkb_io_input(io, "k_local", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(b, s, 8, 64));
	/* the original draws cos and sin as randn too, not as real tables */
	pkb_io_input(io, "cos_local", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(b, s, 64));
	pkb_io_input(io, "sin_local", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(b, s, 64));

	/*
	 * The original rounds x*cos and rotate_half(x)*sin to the dtype before
	 * adding them; a candidate that evaluates x*cos + rot*sin in fp32 and
	 * rounds once differs by those two roundings: terms = 2.
	 */
	struct pkb_tol tol = { .terms = 2 };
	pkb_io_output(io, "q_embed_global", d->dtype, tol, PKB_SHAPE(b, w * s, 8, 64));
	pkb_io_output(io, "k_embed_global", d->dtype, tol, PKB_SHAPE(b, w * s, 8, 64));
	return 0;
}

/* Every rank returns all W shards of embedded q and k: it receives the W-1
 * others, already embedded (the raw shards plus cos and sin would be more).
 * Element-wise work: x*cos + rot(x)*sin, 3 ops per element of its own q and
 * k. HBM: the default, inputs read once and both gathered outputs written. */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	int64_t b = heads_batch(d), t = heads_tokens(d);
	int64_t s = t / d->world > 1 ? t / d->world : 1;
	double shard = (double)b * s * 8 * 64;   /* elements of q_local */
	c->net_bytes = 2.0 * (d->world - 1) * shard * pkb_dtype_size(d->dtype);
	c->flops = 3.0 * 2 * shard;
	c->flop_kind = PKB_FLOPS_VECTOR;
	c->note = "RoPE on own shard + all-gather of q and k";
}

const struct pkb_problem pkb_problem_017 = {
	.id = 17,
	.name = "rope_allgather",
	.title = "RoPE on sequence shards + all-gather",
	.category = "Tensor Parallel",
	.origin = "sequence-sharded rotary embedding followed by a sequence all-gather (inferred)",
	.worlds = PKB_WORLD(2) | PKB_WORLD(4) | PKB_WORLD(8),
	.describe = describe,
	.cost = cost,
};
