/*
 * 056_ring_attention_pp reference: the original's two stages, NCCL between
 * the ranks, cuBLAS for the projections, 054's fused attention kernel for
 * the ring steps.
 *
 * A block on input x (B*S, 512): one strided-batched GEMM (batch 3) of x
 * against the three 512-row slabs of w_qkv into q, k, v (B*S, 512) each,
 * rounded to T (the original's F.linear viewed (B, S, 3, 8, 64) and
 * .contiguous()); ring attention over the stage's CP group (054's
 * reference: grouped ncclSend / ncclRecv of K and V on a side stream,
 * alternating receive buffers, one fused fp32 flash-attention kernel a step
 * merging (out, lse) as the original; cp = 1: one local step) on a CP
 * communicator split from the world in init; the output projection into
 * stage_output.
 *
 * Stage 0 runs the block on hidden_states and ncclSends the result to rank
 * + cp; stage 1 ncclRecvs it from rank - cp into a buffer and runs its block
 * on that. The PP transfer is on the world communicator, on the harness
 * stream, so stage 1's block starts once the data is in.
 *
 * The block is 055's too: problems/lib/ring_block.cuh's attn_block, around
 * 054's ring.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <nccl.h>
#include <stdint.h>
#include <stdlib.h>
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_ref.cuh"

PKB_SOLUTION;

#include "ring_block.cuh"
/* defines: HD, struct attn_block, attn_block_init, attn_block_fini, attn_block_run, ... */
#define PP 2
#define HIDDEN 512

struct state {
	ncclComm_t cp_comm;          /* this stage's CP group */
	int cp, c, p;                /* CP size, this rank's cp_idx and pp_idx */
	struct attn_block a;         /* q, k, v, ctx: (B*S, 512) each */
	void *y0;                    /* stage 1: the stage-0 output received */
};

extern "C" int pkb_init(pkb_ctx *ctx)
{
	PKB_CK(pkb_ref_float_dtype(ctx, ctx->in[0].dtype));
	if (ctx->world % PP)
		return 1;
	struct state *s;
	PKB_CK(pkb_ref_state(ctx, &s));
	s->cp = ctx->world / PP;
	s->c = ctx->rank % s->cp;
	s->p = ctx->rank / s->cp;
	size_t e = pkb_dtype_size(ctx->in[0].dtype);
	/* colour = the stage, key = the rank inside its CP group */
	PKB_CK_NCCL(ctx, ncclCommSplit((ncclComm_t)ctx->nccl_comm, s->p, s->c, &s->cp_comm, NULL));
	PKB_CK(attn_block_init(ctx, &s->a, e));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->y0, ctx->in[0].bytes));
	return 0;
}

template <typename T>
static int launch(pkb_ctx *ctx, struct state *s, cudaStream_t st, ncclComm_t world)
{
	ncclDataType_t nt;
	PKB_CK(pkb_ref_nccl_type(ctx, ctx->in[0].dtype, &nt));
	int64_t n = ctx->out[0].numel;
	const void *x = ctx->in[0].data;
	if (s->p == 1) {   /* stage 1: its input is stage 0's output */
		PKB_CK_NCCL(ctx, ncclRecv(s->y0, n, nt, ctx->rank - s->cp, world, st));
		x = s->y0;
	}
	int cp = s->cp, c = s->c;
	int next = (c + 1) % cp, prev = (c + cp - 1) % cp;   /* ranks of cp_comm */
	PKB_CK(attn_block_run<T>(ctx, &s->a, x, HIDDEN, s->cp_comm, cp, c, next, prev,
				 ctx->out[0].data));
	if (s->p == 0)
		PKB_CK_NCCL(ctx, ncclSend(ctx->out[0].data, n, nt, ctx->rank + s->cp, world, st));
	return 0;
}

static void release(struct state *s)
{
	attn_block_fini(&s->a);
	if (s->cp_comm)
		ncclCommDestroy(s->cp_comm);
	cudaFree(s->y0);
}

PKB_REF_FLOAT_RUN_FINI(struct state, launch, release)
