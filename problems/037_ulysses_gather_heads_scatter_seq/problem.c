/*
 * 037_ulysses_gather_heads_scatter_seq -- the Ulysses all-to-all after
 * attention (DeepSpeed-Ulysses / VeOmni gather_heads_scatter_seq): from the
 * whole sequence with a group of heads back to sequence shards with every
 * head; 036's inverse in shape.
 *
 * B = max(1, M/64) sequences, T = max(1, N/64) positions, 8 heads of 64 a
 * rank. When W does not divide T the sequence is zero-padded at its end to
 * Tp = W*S, S = ceil(T/W). Rank s holds x_s (B, T, 8, 64); its padded
 * sequence is cut into W chunks of S (torch.tensor_split along seq_dim 1),
 * chunk d goes to rank d, and rank r concatenates what it receives along
 * head_dim 2:
 *     out_r[b, t, 8j + h, :] = x_j[b, r*S + t, h, :]  if r*S + t < T, else 0
 *     out_r (B, S, 8W, 64)
 * The original's `group` (None: the world) is no parameter. Pure data
 * movement: compared exactly.
 *
 * Minimum traffic per rank: the real (unpadded) positions only -- a
 * receiver can write the padding's zeros itself. With R_r = clamp(T - r*S,
 * 0, S) real positions in chunk r, rank r receives (W-1) * B*R_r*512*e
 * bytes and sends B*(T - R_r)*512*e: 192 KiB each at M = N = 1024, bf16,
 * W = 4.
 */
#include "pkb_problem.h"
#include "heads_host.h"   /* defines: heads_check, heads_batch, heads_tokens */

#define HEADS 8
#define HDIM 64

struct dims {
	int64_t b, t, s;   /* sequences, positions, positions a chunk */
};

static struct dims dims_of(const struct pkb_dims *d)
{
	struct dims g;
	g.b = heads_batch(d);
	g.t = heads_tokens(d);
	g.s = (g.t + d->world - 1) / d->world;
	return g;
}

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (heads_check(d, io) < 0)
		return -1;
	struct dims g = dims_of(d);
	pkb_io_input(io, "x", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(g.b, g.t, HEADS, HDIM));
	pkb_io_param(io, "seq_dim", 1);
	pkb_io_param(io, "head_dim", 2);
	/* a copy: every element equal, as a number (docs/TOLERANCE.md) */
	pkb_io_output(io, "out", d->dtype, PKB_TOL_EXACT,
		      PKB_SHAPE(g.b, g.s, HEADS * d->world, HDIM));
	return 0;
}

/* Head group j of rank r's output comes from rank j alone: its real
 * positions must arrive, the padding need not (zeros can be written here).
 * The busier direction of receiving (W-1) * R_r positions and sending the
 * T - R_r that belong to the peers, B*512*e bytes each. HBM: read the
 * input, write the output (the default). No arithmetic. */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	struct dims g = dims_of(d);
	int64_t real = g.t - d->rank * g.s;
	real = real < 0 ? 0 : real > g.s ? g.s : real;
	double pos = (double)g.b * HEADS * HDIM * pkb_dtype_size(d->dtype);
	double recv = (double)(d->world - 1) * real * pos, send = (double)(g.t - real) * pos;
	c->net_bytes = recv > send ? recv : send;
	c->note = "direct exchange of the unpadded positions";
}

const struct pkb_problem pkb_problem_037 = {
	.id = 37,
	.name = "ulysses_gather_heads_scatter_seq",
	.title = "Ulysses gather-heads / scatter-sequence all-to-all",
	.category = "Context Parallel",
	.origin = "DeepSpeed-Ulysses / VeOmni gather_heads_scatter_seq (inferred)",
	.worlds = PKB_WORLD(2) | PKB_WORLD(4) | PKB_WORLD(8),
	.describe = describe,
	.cost = cost,
};
