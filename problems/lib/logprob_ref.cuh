/*
 * logprob_ref.cuh -- what 082, 083 and 084's references share around the
 * filter kernels: the state and its checks, the filter's parameters, the
 * all-to-all of a chunk's blocks. Each reference passes its chunk of CT
 * flat tokens (082: one chunk of all NT) and the size of its per-chunk
 * result. Included by 084's reference.cu and by logprob_forward.cuh, after
 * pkb_ref.cuh and pkb_device.cuh.
 */
#ifndef PKB_LOGPROB_REF_CUH
#define PKB_LOGPROB_REF_CUH

#include <stdlib.h>
#include <nccl.h>
#include "logprob_filter.cuh"   /* defines: V, row_sort, row_sum, filter_logprob, filter_grad */

struct lp_state {
	void *seq;       /* [W][L][K] T: this rank's tokens of a chunk, every shard */
	float *res;      /* a chunk's results: [L] log-probs (082, 083), [W][L][K] gradients (084) */
	int64_t tokens;  /* NT */
};

/* CT = b * chunk_size, the flat tokens of a chunk (083, 084) */
static inline int64_t lp_chunk_tokens(pkb_ctx *ctx)
{
	return ctx->in[0].shape[0] * (int64_t)pkb_param_get(ctx, "chunk_size", 1);
}

/* pkb_init: the checks, then the state for chunks of ct flat tokens and
 * res_floats floats of results a chunk */
static inline int lp_init(pkb_ctx *ctx, int64_t ct, int64_t res_floats)
{
	PKB_CK(pkb_ref_float_dtype(ctx, ctx->in[0].dtype));
	if (ctx->in[0].shape[2] * ctx->world != V) {
		ctx->svc->log(ctx, "problem %d reference: vocabulary %lld, expected %d",
			      ctx->problem_id, (long long)(ctx->in[0].shape[2] * ctx->world), V);
		return 1;
	}
	struct lp_state *s;
	PKB_CK(pkb_ref_state(ctx, &s));
	s->tokens = ctx->in[0].shape[0] * ctx->in[0].shape[1];
	if (ct < 1 || ct % ctx->world) {
		ctx->svc->log(ctx, "problem %d reference: b * chunk_size = %lld, not a multiple of W",
			      ctx->problem_id, (long long)ct);
		return 1;
	}
	/* a chunk at most: the last one may be shorter */
	PKB_CK_CUDA(ctx, cudaMalloc(&s->seq, ct * ctx->in[0].shape[2] *
					     pkb_dtype_size(ctx->in[0].dtype)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->res, res_floats * sizeof(float)));
	return 0;
}

/* pkb_fini: pkb_ref_fini(ctx, lp_release) */
static inline void lp_release(struct lp_state *s)
{
	cudaFree(s->seq);
	cudaFree(s->res);
}

/* the filter's parameters: top_k at most V, and fp32(1 - top_p) */
struct lp_filter {
	int top_k;
	float p_cut;
};

static inline struct lp_filter lp_filter_params(pkb_ctx *ctx)
{
	struct lp_filter f;
	f.p_cut = (float)(1.0 - pkb_param_get(ctx, "top_p", 0.9));
	int top_k = (int)pkb_param_get(ctx, "top_k", 10);
	f.top_k = top_k < V ? top_k : V;
	return f;
}

/* all_to_all_single of one chunk: block j of src (`chunk` elements) goes to
 * rank j, rank j's block lands in block j of dst */
template <typename T>
static int lp_all_to_all(pkb_ctx *ctx, const T *src, T *dst, size_t chunk, ncclDataType_t nt)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	ncclComm_t comm = (ncclComm_t)ctx->nccl_comm;
	PKB_CK_NCCL(ctx, ncclGroupStart());
	for (int j = 0; j < ctx->world; j++) {
		PKB_CK_NCCL(ctx, ncclSend(src + j * chunk, chunk, nt, j, comm, st));
		PKB_CK_NCCL(ctx, ncclRecv(dst + j * chunk, chunk, nt, j, comm, st));
	}
	PKB_CK_NCCL(ctx, ncclGroupEnd());
	return 0;
}

#endif /* PKB_LOGPROB_REF_CUH */
