/*
 * 046_gemv_decode -- vocab-parallel LM head at decode time: a GEMV per rank,
 * then an all-gather of the logits along the vocabulary.
 *
 * tokens = clamp(M / 1024, 1, 8), hidden = clamp(N, 128, 4096),
 * vocab = roundup(max(M, 1024 W), W), Vl = vocab / W. Every rank holds the
 * same hidden_states h (tokens, hidden) and its rows [r Vl, (r+1) Vl) of the
 * weight (Vl, hidden) and bias (Vl,). local_r = round(round(h W_r^T) + b_r)
 * (the GEMV rounds to the dtype, the bias add rounds again); every rank
 * returns logits (tokens, vocab) with columns [r Vl, (r+1) Vl) = local_r.
 *
 * Minimum traffic per rank: (W-1) * tokens * Vl * e bytes received, 6 KiB at
 * M = N = 1024, W = 4: pure latency. The GEMV itself streams Vl*hidden*e
 * bytes of weight (2 MiB), about 0.5 us of HBM.
 */
#include "pkb_problem.h"

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

struct shape {
	int64_t tokens, hidden, vocab, vl;
};

static struct shape shape_of(const struct pkb_dims *d)
{
	struct shape s;
	s.tokens = clamp64(d->m / 1024, 1, 8);
	s.hidden = clamp64(d->n, 128, 4096);
	s.vocab = d->m > 1024 * (int64_t)d->world ? d->m : 1024 * (int64_t)d->world;
	s.vocab = (s.vocab + d->world - 1) / d->world * d->world;
	s.vl = s.vocab / d->world;
	return s;
}

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->dtype != PKB_BF16 && d->dtype != PKB_FP16 && d->dtype != PKB_FP32)
		return pkb_io_fail(io, "dtype must be bf16, fp16 or fp32");
	struct shape s = shape_of(d);
	int64_t tokens = s.tokens, hidden = s.hidden, vocab = s.vocab, vl = s.vl;

	/* the original draws h from the rank-0 seed on every rank */
	pkb_io_input(io, "hidden_states", d->dtype, PKB_NORMAL(0, 1),
		     PKB_SHAPE(tokens, hidden))->same_on_all_ranks = 1;
	pkb_io_input(io, "weight_shard", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(vl, hidden));
	pkb_io_input(io, "bias_shard", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(vl));
	/*
	 * Two roundings (the GEMV output, then the bias add): terms = 2; a
	 * candidate that adds the bias in fp32 and rounds once is one of them
	 * away. Plus the fp32 accumulation of the dot product, hidden roundings
	 * at 2^-24 of partial sums below amax: hidden * 2^-24 / u terms in the
	 * output's units -- 0.016 at bf16 (invisible), but `hidden` at fp32,
	 * where a dot product summed in another order than the reference's
	 * must pass. Outputs are ~N(0, hidden), amax ~4 sigma.
	 *
	 * Known limit, simulated on the host: a correct single-rounding
	 * candidate lands at l2 ~0.003, and a GEMV that accumulates in packed
	 * bf16 (__hfma2, 16 adds a lane, then a butterfly) at 0.0067 with its
	 * worst element at 0.7 of its bound -- inside the default l2 limit
	 * (0.0135). Two bf16 roundings of the output leave no room to tell the
	 * two apart without failing correct candidates; a dropped bias (l2 0.03)
	 * fails.
	 */
	struct pkb_tol tol = { .terms = 2 + hidden * 0x1p-24 / pkb_dtype_unit_roundoff(d->dtype) };
	pkb_io_output(io, "logits", d->dtype, tol, PKB_SHAPE(tokens, vocab));
	return 0;
}

/* Receive the other W-1 ranks' logits: computing them here instead would
 * need their weight shards, Vl*hidden*e bytes each. The GEMV counted as
 * matrix math (2 * tokens * Vl * hidden; the bias add is negligible). HBM:
 * the default, inputs + logits, nearly all of it the weight shard. */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	struct shape s = shape_of(d);
	double w = d->world;
	c->net_bytes = (w - 1) * s.tokens * s.vl * pkb_dtype_size(d->dtype);
	c->flops = 2.0 * s.tokens * s.vl * s.hidden;
	c->flop_kind = PKB_FLOPS_TENSOR;
	c->note = "local GEMV + all-gather of the logits";
}

const struct pkb_problem pkb_problem_046 = {
	.id = 46,
	.name = "gemv_decode",
	.title = "Vocab-sharded LM-head GEMV (decode) + all-gather",
	.category = "Tensor Parallel",
	.origin = "TP LM head at decode time (matmul + bias + all_gather, cat along vocab)",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.cost = cost,
};
