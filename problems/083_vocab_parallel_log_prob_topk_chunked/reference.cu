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

#include "logprob_filter.cuh"   /* defines: V, row_sort, row_sum, filter_logprob */

struct state {
	void *seq;       /* [W][L][K] T: this rank's tokens of a chunk, every shard */
	float *lp;       /* [L] this rank's tokens' log-probs, a chunk's */
	int64_t tokens;  /* NT */
};

extern "C" int pkb_init(pkb_ctx *ctx)
{
	PKB_CK(pkb_ref_float_dtype(ctx, ctx->in[0].dtype));
	if (ctx->in[0].shape[2] * ctx->world != V) {
		ctx->svc->log(ctx, "problem %d reference: vocabulary %lld, expected %d",
			      ctx->problem_id, (long long)(ctx->in[0].shape[2] * ctx->world), V);
		return 1;
	}
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	s->tokens = ctx->in[0].shape[0] * ctx->in[0].shape[1];
	int64_t ct = ctx->in[0].shape[0] * (int64_t)pkb_param_get(ctx, "chunk_size", 1);
	if (ct < 1 || ct % ctx->world) {
		ctx->svc->log(ctx, "problem %d reference: b * chunk_size = %lld, not a multiple of W",
			      ctx->problem_id, (long long)ct);
		return 1;
	}
	/* a chunk at most: the last one may be shorter */
	PKB_CK_CUDA(ctx, cudaMalloc(&s->seq, ct * ctx->in[0].shape[2] *
					     pkb_dtype_size(ctx->in[0].dtype)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->lp, (ct / ctx->world) * sizeof(float)));
	return 0;
}

template <typename T>
static int launch(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	ncclComm_t comm = (ncclComm_t)ctx->nccl_comm;
	ncclDataType_t nt;
	PKB_CK(pkb_ref_nccl_type(ctx, ctx->in[0].dtype, &nt));
	int w = ctx->world, k = (int)ctx->in[0].shape[2];
	int64_t ct = ctx->in[0].shape[0] * (int64_t)pkb_param_get(ctx, "chunk_size", 1);
	float p_cut = (float)(1.0 - pkb_param_get(ctx, "top_p", 0.9));
	int top_k = (int)pkb_param_get(ctx, "top_k", 10);
	top_k = top_k < V ? top_k : V;
	for (int64_t start = 0; start < s->tokens; start += ct) {
		int64_t cur = s->tokens - start < ct ? s->tokens - start : ct;
		int64_t local = cur / w;
		size_t chunk = (size_t)(local * k);
		const T *x = (const T *)ctx->in[0].data + start * k;
		/* all_to_all_single of the chunk: its rows [j*L, (j+1)*L) go to
		 * rank j, rank j's block lands in slot j */
		PKB_CK_NCCL(ctx, ncclGroupStart());
		for (int j = 0; j < w; j++) {
			PKB_CK_NCCL(ctx, ncclSend(x + j * chunk, chunk, nt, j, comm, st));
			PKB_CK_NCCL(ctx, ncclRecv((T *)s->seq + j * chunk, chunk, nt, j, comm, st));
		}
		PKB_CK_NCCL(ctx, ncclGroupEnd());
		filter_logprob<T><<<(unsigned)local, V, 0, st>>>(
			(const T *)s->seq,
			(const int64_t *)ctx->in[1].data + start + ctx->rank * local, s->lp,
			(int)local, k, top_k, p_cut);
		PKB_CK_LAUNCH(ctx);
		PKB_CK_NCCL(ctx, ncclAllGather(s->lp, (float *)ctx->out[0].data + start, local,
					       ncclFloat32, comm, st));
	}
	return 0;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	switch (ctx->in[0].dtype) {
	case PKB_BF16: return launch<__nv_bfloat16>(ctx, s);
	case PKB_FP16: return launch<__half>(ctx, s);
	case PKB_FP32: return launch<float>(ctx, s);
	default: return 1;
	}
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (s) {
		cudaFree(s->seq);
		cudaFree(s->lp);
		free(s);
	}
	return 0;
}
