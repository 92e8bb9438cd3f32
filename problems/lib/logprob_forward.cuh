/*
 * logprob_forward.cuh -- the forward pass of 082 and 083's references,
 * chunk by chunk of CT flat tokens (082: one chunk of all NT; 083:
 * b * chunk_size), which each passes to lp_forward_run. Apart from
 * logprob_ref.cuh so that 084 does not instantiate filter_logprob.
 * Included by the two reference.cu files after pkb_ref.cuh and
 * pkb_device.cuh.
 */
#ifndef PKB_LOGPROB_FORWARD_CUH
#define PKB_LOGPROB_FORWARD_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "logprob_ref.cuh"   /* defines: struct lp_state, lp_filter_params, lp_all_to_all, V */

/* The forward (082, 083), chunk by chunk of ct flat tokens: the chunk's
 * rows [j*L, (j+1)*L) to rank j, the filter and log-softmax of this rank's
 * L = cur/W tokens, their all-gather into the chunk's place in the output. */
template <typename T>
static int lp_forward(pkb_ctx *ctx, struct lp_state *s, int64_t ct)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	ncclComm_t comm = (ncclComm_t)ctx->nccl_comm;
	ncclDataType_t nt;
	PKB_CK(pkb_ref_nccl_type(ctx, ctx->in[0].dtype, &nt));
	int w = ctx->world, k = (int)ctx->in[0].shape[2];
	struct lp_filter f = lp_filter_params(ctx);
	for (int64_t start = 0; start < s->tokens; start += ct) {
		int64_t cur = s->tokens - start < ct ? s->tokens - start : ct;
		int64_t local = cur / w;
		size_t chunk = (size_t)(local * k);
		PKB_CK(lp_all_to_all<T>(ctx, (const T *)ctx->in[0].data + start * k, (T *)s->seq,
					chunk, nt));
		filter_logprob<T><<<(unsigned)local, V, 0, st>>>(
			(const T *)s->seq,
			(const int64_t *)ctx->in[1].data + start + ctx->rank * local, s->res,
			(int)local, k, f.top_k, f.p_cut);
		PKB_CK_LAUNCH(ctx);
		PKB_CK_NCCL(ctx, ncclAllGather(s->res, (float *)ctx->out[0].data + start, local,
					       ncclFloat32, comm, st));
	}
	return 0;
}

/* pkb_run of the forward: chunks of ct flat tokens in the dtype */
static inline int lp_forward_run(pkb_ctx *ctx, int64_t ct)
{
	return PKB_REF_FLOAT_CALL(ctx->in[0].dtype, lp_forward, ctx, (struct lp_state *)ctx->user,
				  ct);
}

#endif /* PKB_LOGPROB_FORWARD_CUH */
