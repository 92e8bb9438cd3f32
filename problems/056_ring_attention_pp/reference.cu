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

#include "ring_block.cuh"   /* defines: HD, QT, KT, NT, block_attn */
#define PP 2
#define HIDDEN 512

struct state {
	struct pkb_ref_blas blas;
	ncclComm_t cp_comm;          /* this stage's CP group */
	int64_t b, s, heads, x;      /* x = B*S*heads*64, one of q, k, v */
	int cp, c, p;                /* CP size, this rank's cp_idx and pp_idx */
	cudaStream_t side;
	cudaEvent_t start, got, used, joined;
	void *qkv;                   /* q, k, v: (B*S, 512) each */
	void *ctx;                   /* (B*S, 512) */
	void *y0;                    /* stage 1: the stage-0 output received */
	void *kv[2];                 /* receive buffers: K then V, x each */
	float *acc_o, *acc_lse;      /* running (out, lse): (B, S, H, 64), (B, H, S) */
};

extern "C" int pkb_init(pkb_ctx *ctx)
{
	PKB_CK(pkb_ref_float_dtype(ctx, ctx->in[0].dtype));
	if (ctx->world % PP)
		return 1;
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	s->b = ctx->in[0].shape[0];
	s->s = ctx->in[0].shape[1];
	s->heads = ctx->in[1].shape[0] / 3 / HD;
	s->x = s->b * s->s * s->heads * HD;
	s->cp = ctx->world / PP;
	s->c = ctx->rank % s->cp;
	s->p = ctx->rank / s->cp;
	size_t e = pkb_dtype_size(ctx->in[0].dtype);
	/* colour = the stage, key = the rank inside its CP group */
	PKB_CK_NCCL(ctx, ncclCommSplit((ncclComm_t)ctx->nccl_comm, s->p, s->c, &s->cp_comm, NULL));
	PKB_CK(pkb_ref_blas_init(ctx, &s->blas));
	PKB_CK_CUDA(ctx, cudaStreamCreateWithFlags(&s->side, cudaStreamNonBlocking));
	PKB_CK_CUDA(ctx, cudaEventCreateWithFlags(&s->start, cudaEventDisableTiming));
	PKB_CK_CUDA(ctx, cudaEventCreateWithFlags(&s->got, cudaEventDisableTiming));
	PKB_CK_CUDA(ctx, cudaEventCreateWithFlags(&s->used, cudaEventDisableTiming));
	PKB_CK_CUDA(ctx, cudaEventCreateWithFlags(&s->joined, cudaEventDisableTiming));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->qkv, 3 * s->x * e));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->ctx, s->x * e));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->y0, ctx->in[0].bytes));
	for (int i = 0; i < 2; i++)
		PKB_CK_CUDA(ctx, cudaMalloc(&s->kv[i], 2 * s->x * e));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->acc_o, s->x * sizeof(float)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->acc_lse, s->x / HD * sizeof(float)));
	return 0;
}

/* causal ring attention of q over the CP group's (k, v) into s->ctx */
template <typename T>
static int ring_attention(pkb_ctx *ctx, struct state *s, const T *q, const T *ck, const T *cv)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	ncclComm_t comm = s->cp_comm;
	ncclDataType_t nt;
	PKB_CK(pkb_ref_nccl_type(ctx, ctx->in[0].dtype, &nt));
	int cp = s->cp, rank = s->c;
	int next = (rank + 1) % cp, prev = (rank + cp - 1) % cp;   /* ranks of cp_comm */
	float scale = (float)pkb_param_get(ctx, "softmax_scale", 0.125);
	int causal = (int)pkb_param_get(ctx, "causal", 1);
	dim3 grid((unsigned)((s->s + QT - 1) / QT), (unsigned)s->heads, (unsigned)s->b);
	int last_used = causal ? rank : cp - 1;

	PKB_CK_CUDA(ctx, cudaEventRecord(s->start, st));
	PKB_CK_CUDA(ctx, cudaStreamWaitEvent(s->side, s->start, 0));
	for (int step = 0; step < cp; step++) {
		T *nk = NULL, *nv = NULL;
		if (step + 1 < cp) {
			nk = (T *)s->kv[step % 2];
			nv = nk + s->x;
			if (step >= 2)
				PKB_CK_CUDA(ctx, cudaStreamWaitEvent(s->side, s->used, 0));
			PKB_CK_NCCL(ctx, ncclGroupStart());
			PKB_CK_NCCL(ctx, ncclSend(ck, s->x, nt, next, comm, s->side));
			PKB_CK_NCCL(ctx, ncclSend(cv, s->x, nt, next, comm, s->side));
			PKB_CK_NCCL(ctx, ncclRecv(nk, s->x, nt, prev, comm, s->side));
			PKB_CK_NCCL(ctx, ncclRecv(nv, s->x, nt, prev, comm, s->side));
			PKB_CK_NCCL(ctx, ncclGroupEnd());
			PKB_CK_CUDA(ctx, cudaEventRecord(s->got, s->side));
		}
		if (!causal || step <= rank) {
			block_attn<T><<<grid, NT, 0, st>>>(q, ck, cv, (int)s->s, (int)s->heads, scale,
							 causal && step == 0, step == 0,
							 step == last_used, s->acc_o, s->acc_lse,
							 (T *)s->ctx);
			PKB_CK_LAUNCH(ctx);
		}
		if (step + 1 < cp) {
			PKB_CK_CUDA(ctx, cudaEventRecord(s->used, st));
			PKB_CK_CUDA(ctx, cudaStreamWaitEvent(st, s->got, 0));
			ck = nk;
			cv = nv;
		}
	}
	PKB_CK_CUDA(ctx, cudaEventRecord(s->joined, s->side));
	PKB_CK_CUDA(ctx, cudaStreamWaitEvent(st, s->joined, 0));
	return 0;
}

template <typename T>
static int launch(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	ncclComm_t world = (ncclComm_t)ctx->nccl_comm;
	pkb_dtype dt = ctx->in[0].dtype;
	ncclDataType_t nt;
	PKB_CK(pkb_ref_nccl_type(ctx, dt, &nt));
	int64_t bs = s->b * s->s, local = s->heads * HD, n = ctx->out[0].numel;
	T *q = (T *)s->qkv, *k = q + s->x, *v = k + s->x;
	const void *x = ctx->in[0].data;
	if (s->p == 1) {   /* stage 1: its input is stage 0's output */
		PKB_CK_NCCL(ctx, ncclRecv(s->y0, n, nt, ctx->rank - s->cp, world, st));
		x = s->y0;
	}
	PKB_CK(pkb_ref_blas_bind(ctx, &s->blas, st));
	PKB_CK(pkb_ref_gemm_rm_batched(ctx, s->blas.h, 0, 1, bs, local, HIDDEN, 1.0, x, HIDDEN, 0,
				       ctx->in[1].data, HIDDEN, local * HIDDEN, 0.0, q, local,
				       s->x, 3, dt));
	PKB_CK(ring_attention<T>(ctx, s, q, k, v));
	PKB_CK(pkb_ref_gemm_rm(ctx, s->blas.h, 0, 1, bs, HIDDEN, local, 1.0, s->ctx, local,
			       ctx->in[2].data, local, 0.0, ctx->out[0].data, HIDDEN, dt));
	if (s->p == 0)
		PKB_CK_NCCL(ctx, ncclSend(ctx->out[0].data, n, nt, ctx->rank + s->cp, world, st));
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
		if (s->side) {
			cudaStreamSynchronize(s->side);
			cudaStreamDestroy(s->side);
		}
		cudaEvent_t ev[] = { s->start, s->got, s->used, s->joined };
		for (int i = 0; i < 4; i++)
			if (ev[i])
				cudaEventDestroy(ev[i]);
		if (s->cp_comm)
			ncclCommDestroy(s->cp_comm);
		pkb_ref_blas_fini(&s->blas);
		void *bufs[] = { s->qkv, s->ctx, s->y0, s->kv[0], s->kv[1], s->acc_o, s->acc_lse };
		for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
			cudaFree(bufs[i]);
	}
	free(s);
	return 0;
}
