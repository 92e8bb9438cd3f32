/*
 * 041_zero1_optimizer_shard -- one ZeRO stage-1 training step: the model is
 * broadcast from rank 0, every rank runs forward and backward of a
 * two-layer MLP on its own rows, the gradients are all-reduced (mean), each
 * rank runs Adam on its 1/W slice of the flat parameter vector with the
 * optimizer state only it holds, and the updated slices are all-gathered.
 *
 * Sizes (the original's): n = roundup(max(M, W), W) rows, chunk = n/W per
 * rank; d_in = clamp(N, 16, 256), d_out = clamp(N/4, 8, 256), hidden =
 * clamp(N/2, 32, 512) raised one at a time until P = hidden*d_in + hidden +
 * d_out*hidden + d_out is a multiple of W (262,912 at N >= 1024 for W = 2,
 * 4, 8); part = P/W. Every tensor is of the harness dtype T:
 *     h = relu(X W1^T + b1),  out = h W2^T + b2,  loss = mean((out - y)^2)
 *     g = all_reduce_sum(flat grads) / W        (order W1, b1, W2, b2)
 *     on [r*part, (r+1)*part) of the flat vector, rank r's slice:
 *     m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2
 *     p = p - lr * (m / bc1) / (sqrt(v / bc2) + eps)
 *     all_gather of the updated slices -> W1, b1, W2, b2 (identical on
 *     every rank), and this rank's m_part, v_part.
 *
 * Inputs, and where they leave the original's on purpose (040 says why at
 * length): the parameters are N(0,1) on every rank, only rank 0's count
 * (the original has zeros elsewhere, which would let a sum stand in for the
 * broadcast); exp_avg_part N(0, 0.5) and exp_avg_sq_part U(0.01, 0.05) per
 * rank instead of zeros, which make the update lr * sign(g), a step
 * function that a correct reordering of the gradient sum flips on ~0.02% of
 * the elements (by 2 lr, as much as skipping the update). X_local and
 * y_local are N(0,1) per rank (the original's slices of one global randn).
 * step = 1 + trial % 7 is an int64 0-dim gen_host input.
 */
#include "pkb_problem.h"
#include "zero_host.h"   /* defines: zero_describe, zero_gen_host, zero_cost */

const struct pkb_problem pkb_problem_041 = {
	.id = 41,
	.name = "zero1_optimizer_shard",
	.title = "ZeRO-1: all-reduce grads, sharded Adam, all-gather params",
	.category = "FSDP / ZeRO",
	.origin = "DeepSpeed ZeRO stage 1 (textbook; inferred)",
	.worlds = PKB_WORLDS_ANY,
	.describe = zero_describe,
	.gen_host = zero_gen_host,
	.cost = zero_cost,
};
