/*
 * 084_vocab_parallel_log_prob_topk_chunked_backward reference: the
 * original's algorithm, chunk by chunk of CT = b * chunk_size flat tokens
 * -- an all-to-all (grouped NCCL send/recv) that turns the chunk's
 * vocabulary shards into token shards, the top-k / top-p filter and the
 * gradient of each local token over the full vocabulary (one block per
 * token, CUB's block radix sort), then a second all-to-all that returns
 * every rank its vocabulary shard of the chunk's gradients.
 *
 * Per token, V = 256 threads, T = the dtype:
 *     sort the row ascending (radix sort: stable, so ties stay in
 *       vocabulary order)
 *     thr  = y[V - top_k];  keep_k = y >= thr
 *     p    = T(exp(y - y[V-1]) / sum over keep_k)    (0 where ~keep_k)
 *     c    = cumsum of p, each partial sum rounded to T, left to right
 *     keep = keep_k & (c > fp32(1 - top_p)) | (last position)
 *     q    = keep ? exp(x - max) / sum over keep of exp(x - max) : 0   (fp32)
 *     grad = ((onehot(target) - q) * g) * keep       in torch's order:
 *            -q, += 1 at the target, *= g (bf16, exact in fp32), *= keep
 * max = y[V-1], always kept. The cumulative sum starts where keep_k starts
 * (the masked entries before it add zeros). The gradient is written in the
 * return all-to-all's layout, [W][L][K] (shard q of token l at
 * (q*L + l)*K), so each peer's block is contiguous.
 *
 * Bytes: (W-1)/W of the logits (T) out and in, then (W-1)/W of the fp32
 * gradients out and in (the all-to-alls); all latency at 2 x 8 tokens, in
 * NT/CT rounds.
 *
 * The kernel, filter_grad, is in problems/lib/logprob_filter.cuh beside
 * 082/083's; the state and the all-to-all in logprob_ref.cuh.
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

#include "logprob_ref.cuh"
/* defines: struct lp_state, lp_chunk_tokens, lp_init, lp_filter_params, lp_all_to_all,
 * lp_release, filter_grad */

extern "C" int pkb_init(pkb_ctx *ctx)
{
	int64_t ct = lp_chunk_tokens(ctx);
	return lp_init(ctx, ct, ct * ctx->in[0].shape[2]);
}

/* lp_all_to_all takes the communicator from ctx */
template <typename T>
static int launch(pkb_ctx *ctx, struct lp_state *s, cudaStream_t st, ncclComm_t)
{
	ncclDataType_t nt;
	PKB_CK(pkb_ref_nccl_type(ctx, ctx->in[0].dtype, &nt));
	int w = ctx->world, k = (int)ctx->in[0].shape[2];
	int64_t ct = lp_chunk_tokens(ctx);
	struct lp_filter f = lp_filter_params(ctx);
	for (int64_t start = 0; start < s->tokens; start += ct) {
		int64_t cur = s->tokens - start < ct ? s->tokens - start : ct;
		int64_t local = cur / w;
		size_t chunk = (size_t)(local * k);
		PKB_CK(lp_all_to_all<T>(ctx, (const T *)ctx->in[0].data + start * k, (T *)s->seq,
					chunk, nt));
		int64_t mine = start + ctx->rank * local;
		filter_grad<T><<<(unsigned)local, V, 0, st>>>(
			(const T *)s->seq, (const int64_t *)ctx->in[1].data + mine,
			(const __nv_bfloat16 *)ctx->in[2].data + mine, s->res, (int)local, k,
			f.top_k, f.p_cut);
		PKB_CK_LAUNCH(ctx);
		/* back: shard j of this rank's tokens goes to rank j; rank j's
		 * block is its tokens [start + j*L, ...) of our shard */
		PKB_CK(lp_all_to_all<float>(ctx, s->res, (float *)ctx->out[0].data + start * k, chunk,
					    ncclFloat32));
	}
	return 0;
}


PKB_REF_FLOAT_RUN_FINI(struct lp_state, launch, lp_release)
