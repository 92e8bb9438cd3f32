/*
 * 084_vocab_parallel_log_prob_topk_chunked_backward -- the backward of the
 * chunked vocab-parallel top-k / top-p token log-probabilities (083):
 * d(logprob[target]) / d(logits) times the upstream gradient, each rank's
 * vocabulary shard (NeMo-RL's ChunkedDistributedLogprob backward style).
 *
 * The vocabulary V = 256 is split into W contiguous shards of K = V/W: rank
 * r holds the logits of entries [r*K, (r+1)*K) for all NT = b*s tokens,
 * (b, s, K) in the dtype T, the same targets (b, s) int64 and the same
 * upstream gradient g (b, s) bf16. With top_k = 10 and top_p = 0.9, for
 * every token over its whole row x of V, the filter of 082 / 083:
 *     y      = the row sorted ascending, ties in vocabulary order
 *     keep_k = y >= y[V - top_k]                          (ties survive)
 *     p      = T(softmax(y with ~keep_k at -inf))         (fp32 inside)
 *     c[j]   = T(c[j-1] + p[j]), c[-1] = 0                 (cumsum in T)
 *     keep   = keep_k & (c > fp32(1 - top_p)), and keep[V-1]
 * then, back in vocabulary order and in fp32,
 *     q      = softmax(x with ~keep at -inf)
 *     grad   = ((onehot(target) - q) * g) * keep
 * and rank r returns the entries of its shard: grad_logits (b, s, K) fp32.
 * The original walks the flat tokens in chunks of CT = b * chunk_size; per
 * chunk an all-to-all gives rank r chunk tokens [r*CT/W, (r+1)*CT/W) over
 * the full vocabulary, which it filters and differentiates, and a second
 * all-to-all returns each rank its vocabulary shard. Each token's gradient
 * depends on its own row only, so the chunking does not change it.
 *
 * Sizes as the original: b = clamp(M/512, 1, 4), s = the multiple of W at
 * or above max(W, min(M/128, 32)), chunk_size = min(s, the multiple of W
 * at or above max(W, s/4)); 2 x 8 tokens in 2 chunks of 8 at M = 1024,
 * W = 4. The target's logit is raised by 8, so it is nearly always the
 * only survivor, and then its whole row of gradient is 0 ((1 - 1) g).
 *
 * Minimum traffic per rank: a token's owner needs at most top_k values
 * from the other shards to decide the filter, then every rank needs, per
 * token, the cut, the max and the kept sum (12 bytes) to form its own
 * entries: (W-1)/W * NT * (top_k*e/W + 12) bytes, a few hundred: latency.
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
	int64_t b = batch_of(d), s = seq_of(d), k = VOCAB / d->world;
	/* bf16 whatever the harness dtype, as the original's linspace(-1, 1);
	 * drawn from U(-1, 1), the same on every rank as the original's */
	pkb_io_input(io, "grad_output", PKB_BF16, PKB_UNIFORM(-1, 1), PKB_SHAPE(b, s))
		->same_on_all_ranks = 1;
	pkb_io_param(io, "top_k", TOP_K);
	pkb_io_param(io, "top_p", TOP_P);
	pkb_io_param(io, "chunk_size", (double)chunk_of(d));

	/*
	 * The filter is a step function of T-rounded values: a candidate that
	 * follows the recipe keeps the same entries, and then its gradients
	 * differ from the reference's only by the fp32 softmax over the kept
	 * entries: q = exp(x - max) / S with S a sum of at most ~V terms in
	 * another order and expf's 2 ulps, so q moves by (n + 4) u32 relative
	 * and 1 - q_target by as much absolute (|g| <= 1): atol = 2^-16 is
	 * > 50x that for up to a dozen kept entries. Entries outside the kept
	 * set are zeros on both sides (-0 and +0 compare equal). A token whose
	 * kept set differs moves, at the entry that flips and at the target,
	 * by at least 0.015 |g| (host simulation of 50000 tokens: an fp32
	 * cumulative sum flips 0.1% of them, 0.015-0.042; exp2f, a reversed
	 * sum and a reciprocal none): 1000x atol unless |g| < 2^-6. The
	 * gradient of the unfiltered softmax moves every token, >= 0.0019 |g|
	 * at its largest entry and ~e^-8 |g| at every other. l2 = 2^-10: the
	 * element bound does the work (a rank's shard may hold a single
	 * non-zero entry).
	 */
	struct pkb_tol tol = { .atol = 0x1p-16, .l2 = 0x1p-10 };
	pkb_io_output(io, "grad_logits", PKB_FP32, tol, PKB_SHAPE(b, s, k));
	return 0;
}

/* inputs drawn on the host: the logits and the targets, (19 i + 5 + trial) mod
 * 256 for flat token i, the same on every rank */
static int gen_host(const struct pkb_dims *d, int index, uint64_t seed, void *buf, size_t bytes)
{
	return logprob_gen_host(d, index, seed, buf, bytes, 19, 5);
}

/* A token's owner needs at most top_k values from the other shards for
 * its NT/W tokens ((W-1)/W of them remote); every rank then needs the
 * filter's cut (value and index), the max and the kept sum of the tokens
 * it does not own: (W-1)/W * NT * (top_k e / W + 12); chunking moves the
 * same bytes in more steps. Per token: the top-k selection (~V compares),
 * exps and sums over the kept entries, the gradient of the own shard:
 * ~4 V. HBM: the default (the logits, the gradient). */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	logprob_cost(d, c, 12);
	c->note = "top-k candidates to the token's owner, filter, cut + max + sum to every rank";
}

const struct pkb_problem pkb_problem_084 = {
	.id = 84,
	.name = "vocab_parallel_log_prob_topk_chunked_backward",
	.title = "Backward of chunked vocab-parallel log-probs with top-k/top-p",
	.category = "Vocab Parallel",
	.origin = "NeMo-RL ChunkedDistributedLogprob backward with top-k / top-p (inferred)",
	.worlds = PKB_WORLD(2) | PKB_WORLD(4) | PKB_WORLD(8) | PKB_WORLD(16) | PKB_WORLD(32),
	.describe = describe,
	.gen_host = gen_host,
	.cost = cost,
};
