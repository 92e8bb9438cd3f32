/*
 * 015_combined_sharded_gemms reference: the original's values with the
 * communication it needs, not the communication it does.
 *
 * The original all-gathers x_full (Mr, H) on every rank, runs the first GEMM
 * on all Mr rows, keeps 1/W of them, and ends with a reduce-scatter whose
 * other W-1 contributions to each rank are zeros. Rank r only needs rows
 * r*Ml .. (r+1)*Ml-1 of x_full, i.e. row block r of every rank's x_local:
 * an all-to-all of (Ml, Hl) blocks (grouped ncclSend/ncclRecv), W times less
 * traffic than the all-gather; the zero reduce-scatter is skipped (adding
 * zeros changes no value). Then, as in the original:
 *   X (Ml, H)  = the W received blocks side by side (torch.cat(dim=1))
 *   h (Ml, F)  = X @ W1, rounded to the working dtype
 *   a          = silu(h) = h / (1 + exp(-h)) in fp32, rounded
 *   y (Ml, H)  = a @ W2, straight into the output.
 * cuBLAS has no SiLU epilogue, hence the separate elementwise kernel (torch's
 * F.silu).
 *
 * Layout of the GEMMs (torch row-major vs cuBLAS column-major): a row-major
 * (r, c) buffer is the column-major c x r matrix of its transpose, so the
 * row-major C (m, n) = A (m, k) @ B (k, n) is the column-major
 * C^T = B^T A^T: first operand B's buffer (ld n), second A's (ld k), both
 * op N, cuBLAS m = n, n = m, C ld n.
 *
 * Traffic: (W-1) * Ml*Hl*e bytes received per rank (96 KiB at M = 1024,
 * bf16, W = 4); GEMMs 2*Ml*H*F*2 = 134 MFLOP per rank there.
 */
#include <stdint.h>
#include <stdlib.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "pkb_ref.cuh"
#include "cat_columns.cuh"   /* defines: cat_columns, launch_cat */
#include "pkb_device.cuh"

PKB_SOLUTION;

struct state {
	struct pkb_ref_blas blas;
	void *recv;             /* (W, Ml, Hl): row block `rank` of every x_local */
	void *x;                /* (Ml, H) */
	void *h;                /* (Ml, F): h, then a = silu(h) in place */
};

/* torch's F.silu: computed in fp32 from the rounded h, rounded once */
template <typename T>
__global__ void silu_inplace(T *h, int64_t n)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x) {
		float v = pkb_to_float(h[i]);
		h[i] = pkb_from_float<T>(v / (1.0f + expf(-v)));
	}
}

static void launch_silu(void *h, int64_t n, pkb_dtype t, cudaStream_t st)
{
	int blocks = (int)((n + 255) / 256);
	blocks = blocks < 1 ? 1 : blocks > 1024 ? 1024 : blocks;
	switch (t) {
	case PKB_BF16: silu_inplace<<<blocks, 256, 0, st>>>((__nv_bfloat16 *)h, n); break;
	case PKB_FP16: silu_inplace<<<blocks, 256, 0, st>>>((__half *)h, n); break;
	default: silu_inplace<<<blocks, 256, 0, st>>>((float *)h, n); break;
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	pkb_dtype t = ctx->in[0].dtype;
	struct state *s;
	PKB_CK(pkb_ref_float_state(ctx, &s));
	size_t e = pkb_dtype_size(t);
	int64_t ml = ctx->out[0].shape[0], hd = ctx->out[0].shape[1], f = ctx->in[1].shape[1];
	PKB_CK(pkb_ref_blas_init(ctx, &s->blas));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->recv, (size_t)(ml * hd) * e));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->x, (size_t)(ml * hd) * e));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->h, (size_t)(ml * f) * e));
	return 0;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	const pkb_tensor *x = &ctx->in[0], *w1 = &ctx->in[1], *w2 = &ctx->in[2];
	pkb_dtype t = x->dtype;
	size_t e = pkb_dtype_size(t);
	int64_t hl = x->shape[1], hd = w1->shape[0], f = w1->shape[1];
	int64_t ml = ctx->out[0].shape[0];
	size_t blk = (size_t)(ml * hl);   /* elements of one (Ml, Hl) block */

	PKB_CK(pkb_ref_blas_bind(ctx, &s->blas, st));
	ncclDataType_t nt;
	PKB_CK(pkb_ref_nccl_type(ctx, t, &nt));

	/* all-to-all: row block p of x_local goes to rank p */
	const char *xs = (const char *)x->data;
	char *rv = (char *)s->recv;
	PKB_CK_CUDA(ctx, cudaMemcpyAsync(rv + ctx->rank * blk * e, xs + ctx->rank * blk * e,
				     blk * e, cudaMemcpyDeviceToDevice, st));
	PKB_CK(pkb_ref_all_to_all_others(ctx, xs, rv, blk, nt, e));
	launch_cat(s->recv, s->x, ml, hl * (int64_t)e, ctx->world, st);
	PKB_CK_CUDA(ctx, cudaGetLastError());

	/* h (Ml, F) = x (Ml, H) @ w1 (H, F); out (Ml, H) = silu(h) @ w2 (F, H) */
	PKB_CK(pkb_ref_gemm_rm(ctx, s->blas.h, 0, 0, ml, f, hd, 1.0, s->x, hd, w1->data, f,
			       0.0, s->h, f, t));
	launch_silu(s->h, ml * f, t, st);
	PKB_CK_LAUNCH(ctx);
	PKB_CK(pkb_ref_gemm_rm(ctx, s->blas.h, 0, 0, ml, hd, f, 1.0, s->h, f, w2->data, hd,
			       0.0, ctx->out[0].data, hd, t));
	return 0;
}

static void release(struct state *s)
{
	pkb_ref_blas_fini(&s->blas);
	cudaFree(s->recv);
	cudaFree(s->x);
	cudaFree(s->h);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_ref_fini(ctx, release);
}
