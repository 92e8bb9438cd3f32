/*
 * 083_vocab_parallel_log_prob_topk_chunked reference: the original's
 * algorithm, chunk by chunk of CT = b * chunk_size flat tokens -- an
 * all-to-all (grouped NCCL send/recv) that turns the chunk's vocabulary
 * shards into token shards, the top-k / top-p filter and the log-softmax
 * of each local token over the full vocabulary (one block per token, CUB's
 * block radix sort), then an NCCL all-gather of the chunk's values into
 * its place in the output.
 *
 * Per token, V = 256 threads, T = the dtype:
 *     sort the row ascending (radix sort: stable, so ties stay in
 *       vocabulary order)
 *     thr  = y[V - top_k];  keep_k = y >= thr
 *     p    = T(exp(y - y[V-1]) / sum over keep_k)    (0 where ~keep_k)
 *     c    = cumsum of p, each partial sum rounded to T, left to right
 *     keep = keep_k & (c > fp32(1 - top_p)) | (last position)
 *     out  = (x_t - max) - log(sum over keep of exp(x - max))   (fp32)
 *            or -inf if the target was filtered out
 * max = y[V-1], always kept. The cumulative sum starts where keep_k starts
 * (the masked entries before it add zeros).
 *
 * Bytes: (W-1)/W of the logits out and in (the all-to-alls), NT/W floats
 * from each peer; all latency at 2 x 8 tokens, in NT/CT rounds.
 *
 * The code is in problems/lib/logprob_forward.cuh (082 runs it too, as one
 * chunk) and logprob_filter.cuh.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <nccl.h>
#include <stdlib.h>
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_reduce.cuh>
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_ref.cuh"

PKB_SOLUTION;

#include "logprob_forward.cuh"
/* defines: lp_chunk_tokens, lp_init, lp_forward_run, lp_release */

/* chunks of CT = b * chunk_size flat tokens */
extern "C" int pkb_init(pkb_ctx *ctx)
{
	int64_t ct = lp_chunk_tokens(ctx);
	return lp_init(ctx, ct, ct / ctx->world);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	return lp_forward_run(ctx, lp_chunk_tokens(ctx));
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_ref_fini(ctx, lp_release);
}
