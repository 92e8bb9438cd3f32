/*
 * 030_moe_epgroupgemm_lora_backward reference: the original's three
 * all-reduces (sum), each from its input into the output of the same name,
 * in one NCCL group so they are launched as one operation -- what a
 * production LoRA backward does with its gradient buckets.
 */
#include "pkb_ref.cuh"

PKB_SOLUTION;

static int run(pkb_ctx *ctx, cudaStream_t st, ncclComm_t comm)
{
	ncclDataType_t t;
	PKB_CK(pkb_ref_nccl_type(ctx, ctx->in[0].dtype, &t));
	PKB_CK_NCCL(ctx, ncclGroupStart());
	for (int i = 0; i < 3; i++)
		PKB_CK_NCCL(ctx, ncclAllReduce(ctx->in[i].data, ctx->out[i].data,
					       (size_t)ctx->in[i].numel, t, ncclSum, comm, st));
	PKB_CK_NCCL(ctx, ncclGroupEnd());
	return 0;
}

PKB_REF_STATELESS(pkb_ref_init_nccl, run)
