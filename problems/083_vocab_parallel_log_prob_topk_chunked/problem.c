/*
 * 083_vocab_parallel_log_prob_topk_chunked -- token log-probabilities under
 * top-k / top-p filtering, the vocabulary split across ranks, processed in
 * chunks of tokens (NeMo-RL's ChunkedDistributedLogprob style).
 *
 * The vocabulary V = 256 is split into W contiguous shards of K = V/W: rank
 * r holds the logits of entries [r*K, (r+1)*K) for all NT = b*s tokens,
 * (b, s, K) in the dtype T, and the same targets (b, s) int64. With
 * top_k = 10 and top_p = 0.9, for every token over its whole row of V:
 *     y      = the row sorted ascending, ties in vocabulary order
 *     keep_k = y >= y[V - top_k]                          (ties survive)
 *     p      = T(softmax(y with ~keep_k at -inf))         (fp32 inside)
 *     c[j]   = T(c[j-1] + p[j]), c[-1] = 0                 (cumsum in T)
 *     keep   = keep_k & (c > fp32(1 - top_p)), and keep[V-1]
 *     out    = log_softmax(x with ~keep at -inf)[target]  (fp32)
 * The original walks the flat tokens in chunks of CT = b * chunk_size; per
 * chunk an all-to-all gives rank r chunk tokens [r*CT/W, (r+1)*CT/W) over
 * the full vocabulary, which it filters, and an all-gather collects the
 * chunk's values: out (b, s) fp32, the same on every rank. Each token's
 * value depends on its own row only, so the chunking does not change it.
 *
 * Sizes as the original: b = clamp(M/512, 1, 4), s = the multiple of W at
 * or above max(W, min(M/128, 32)), chunk_size = min(s, the multiple of W
 * at or above max(W, s/4)); 2 x 8 tokens in 2 chunks of 8 at M = 1024,
 * W = 4. The target's logit is raised by 8, so it is nearly always the
 * only survivor: ~91% of the outputs are exactly 0.
 *
 * Minimum traffic per rank: only the ten largest logits of a token (and
 * ties) decide its filter, so a token's owner needs at most top_k values
 * from the other shards, (W-1)/W of them remote; then the values are
 * all-gathered: (W-1)/W * NT * (top_k*e/W + 4) bytes, a few hundred:
 * latency.
 */
#include <math.h>
#include "pkb_problem.h"
#include "logprob_host.h"
/* defines: VOCAB, TOP_K, TOP_P, batch_of, seq_of, chunk_of, logprob_inputs,
 * logprob_output, logprob_gen_host, logprob_cost */

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (logprob_inputs(d, io) < 0)
		return -1;
	pkb_io_param(io, "top_k", TOP_K);
	pkb_io_param(io, "top_p", TOP_P);
	pkb_io_param(io, "chunk_size", (double)chunk_of(d));
	logprob_output(d, io);
	return 0;
}

/* inputs drawn on the host: the logits and the targets, (19 i + 5 + trial) mod
 * 256 for flat token i, the same on every rank */
static int gen_host(const struct pkb_dims *d, int index, uint64_t seed, void *buf, size_t bytes)
{
	return logprob_gen_host(d, index, seed, buf, bytes, 19, 5);
}

/* As 082: chunking moves the same bytes in more steps. A token's owner
 * needs at most top_k values from the other shards for its NT/W tokens
 * ((W-1)/W of them remote), then the NT fp32 values are all-gathered:
 * (W-1)/W * NT * (top_k e / W + 4). Per token: the top-k
 * selection (~V compares), exps and sums over the kept entries: ~4 V.
 * HBM: the default (the logits, 512 B at W = 4 in bf16). */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	logprob_cost(d, c, 4);
	c->note = "top-k candidates to the token's owner, filter, all-gather of log-probs (any chunking)";
}

const struct pkb_problem pkb_problem_083 = {
	.id = 83,
	.name = "vocab_parallel_log_prob_topk_chunked",
	.title = "Chunked vocab-parallel token log-probs with top-k/top-p",
	.category = "Vocab Parallel",
	.origin = "NeMo-RL ChunkedDistributedLogprob with top-k / top-p (inferred)",
	.worlds = PKB_WORLD(2) | PKB_WORLD(4) | PKB_WORLD(8) | PKB_WORLD(16) | PKB_WORLD(32),
	.describe = describe,
	.gen_host = gen_host,
	.cost = cost,
};
