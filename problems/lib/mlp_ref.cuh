/*
 * mlp_ref.cuh -- what 040, 041 and 042's references keep between calls
 * (struct mlp_ref, made by mlp_ref_init, released by mlp_release) and the
 * step of 041 (ZeRO-1) and 042 (ZeRO-2), which is one but for the
 * gradient's collective: zero_step<T>(ctx, r, stage). Included by the
 * three reference.cu files after pkb_device.cuh and pkb_ref.cuh.
 */
#ifndef PKB_MLP_REF_CUH
#define PKB_MLP_REF_CUH

#include <stdlib.h>
#include "mlp_kernels.cuh"
/* defines: MLP_THREADS, struct hyper, adam_hyper, rt, mse_grad, relu_mask, colsum,
 * mlp_fwd_bwd, adam_slice */

struct mlp_ref {
	struct pkb_ref_blas blas;
	void *f;                /* the flat parameters (P): 041, 042 */
	void *h, *dh, *o, *g;   /* (chunk, hidden) x2, (chunk, d_out), flat (P) */
	void *gp;               /* this rank's summed slice (part): 042 */
	float *acc;             /* the forward's fp32 products, (chunk, max(hidden, d_out)) */
};

/* pkb_init of the three: the buffers, f when `flat` (041, 042), gp when
 * `slice` (042) */
static int mlp_ref_init(pkb_ctx *ctx, int flat, int slice)
{
	PKB_CK(pkb_ref_float_dtype(ctx, ctx->in[0].dtype));
	struct mlp_ref *r;
	PKB_CK(pkb_ref_state(ctx, &r));
	int64_t chunk = ctx->in[0].shape[0], hidden = ctx->in[2].shape[0];
	int64_t d_out = ctx->in[4].shape[0], e = (int64_t)pkb_dtype_size(ctx->in[0].dtype);
	int64_t p = 0;
	for (int i = 0; i < 4; i++)
		p += ctx->in[2 + i].numel;
	if (flat)
		PKB_CK_CUDA(ctx, cudaMalloc(&r->f, p * e));
	PKB_CK_CUDA(ctx, cudaMalloc(&r->h, chunk * hidden * e));
	PKB_CK_CUDA(ctx, cudaMalloc(&r->dh, chunk * hidden * e));
	PKB_CK_CUDA(ctx, cudaMalloc(&r->o, chunk * d_out * e));
	PKB_CK_CUDA(ctx, cudaMalloc(&r->g, p * e));
	PKB_CK_CUDA(ctx, cudaMalloc(&r->acc, chunk * (hidden > d_out ? hidden : d_out) *
					     (int64_t)sizeof(float)));
	if (slice)
		PKB_CK_CUDA(ctx, cudaMalloc(&r->gp, ctx->in[6].numel * e));
	return pkb_ref_blas_init(ctx, &r->blas);
}

/* pkb_fini: pkb_ref_fini(ctx, mlp_release) */
static void mlp_release(struct mlp_ref *r)
{
	pkb_ref_blas_fini(&r->blas);
	cudaFree(r->f);
	cudaFree(r->h);
	cudaFree(r->dh);
	cudaFree(r->o);
	cudaFree(r->g);
	cudaFree(r->gp);
	cudaFree(r->acc);
}

/*
 * 041/042's step. The four parameters flattened into f on every rank and
 * broadcast from rank 0, the forward and backward on views of f, the flat
 * gradient summed over the ranks: all-reduced in place (stage 1) or
 * reduce-scattered into this rank's slice gp (stage 2); Adam on the
 * slice, in place in f; the slices all-gathered back into f and copied
 * out into W1, b1, W2, b2.
 */
template <typename T>
static int zero_step(pkb_ctx *ctx, struct mlp_ref *r, int stage)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	ncclComm_t comm = (ncclComm_t)ctx->nccl_comm;
	pkb_dtype t = ctx->in[0].dtype;
	ncclDataType_t nt;
	PKB_CK(pkb_ref_nccl_type(ctx, t, &nt));
	int64_t chunk = ctx->in[0].shape[0], d_in = ctx->in[0].shape[1];
	int64_t hidden = ctx->in[2].shape[0], d_out = ctx->in[4].shape[0];
	int64_t p = hidden * d_in + hidden + d_out * hidden + d_out, part = ctx->in[6].numel;

	/* flatten on every rank (the original's _flatten_dense_tensors), then
	 * rank 0's values everywhere */
	T *f = (T *)r->f;
	T *w1 = f, *b1 = w1 + hidden * d_in, *w2 = b1 + hidden, *b2 = w2 + d_out * hidden;
	T *views[4] = { w1, b1, w2, b2 };
	for (int i = 0; i < 4; i++)
		PKB_CK_CUDA(ctx, cudaMemcpyAsync(views[i], ctx->in[2 + i].data, ctx->in[2 + i].bytes,
						 cudaMemcpyDeviceToDevice, st));
	PKB_CK_NCCL(ctx, ncclBroadcast(f, f, (size_t)p, nt, 0, comm, st));

	const T *x = (const T *)ctx->in[0].data, *y = (const T *)ctx->in[1].data;
	T *h = (T *)r->h, *dh = (T *)r->dh, *o = (T *)r->o, *g = (T *)r->g;
	T *g_w1 = g, *g_b1 = g_w1 + hidden * d_in, *g_w2 = g_b1 + hidden;
	T *g_b2 = g_w2 + d_out * hidden;
	cublasHandle_t bh = r->blas.h;
	PKB_CK(pkb_ref_blas_bind(ctx, &r->blas, st));
	/* forward and backward (mlp_kernels.cuh) */
	PKB_CK(mlp_fwd_bwd<T>(ctx, bh, st, t, x, y, w1, b1, w2, b2, h, dh, o, r->acc, g_w1, g_b1,
			      g_w2, g_b2, chunk, d_in, hidden, d_out));

	int64_t start = (int64_t)ctx->rank * part;
	const T *gsum;   /* this rank's slice of the sum */
	if (stage == 1) {
		/* the gradient all-reduce (sum; the mean is taken in the Adam kernel) */
		PKB_CK_NCCL(ctx, ncclAllReduce(g, g, (size_t)p, nt, ncclSum, comm, st));
		gsum = g + start;
	} else {
		/* the gradient reduce-scatter (sum; the mean is taken in the Adam
		 * kernel): this rank's slice of the sum */
		PKB_CK_NCCL(ctx, ncclReduceScatter(g, r->gp, (size_t)part, nt, ncclSum, comm, st));
		gsum = (const T *)r->gp;
	}

	struct hyper hp = adam_hyper(ctx);
	adam_slice<T><<<pkb_ref_blocks(part, MLP_THREADS, 1024), MLP_THREADS, 0, st>>>(
		gsum, f + start, (const T *)ctx->in[6].data, (const T *)ctx->in[7].data,
		(T *)ctx->out[4].data, (T *)ctx->out[5].data, part,
		(const int64_t *)ctx->in[8].data, hp);
	PKB_CK_LAUNCH(ctx);

	/* the updated slices to every rank (in place: the send buffer is this
	 * rank's slot), then unflatten into the outputs */
	PKB_CK_NCCL(ctx, ncclAllGather(f + start, f, (size_t)part, nt, comm, st));
	for (int i = 0; i < 4; i++)
		PKB_CK_CUDA(ctx, cudaMemcpyAsync(ctx->out[i].data, views[i], ctx->out[i].bytes,
						 cudaMemcpyDeviceToDevice, st));
	return 0;
}

#endif /* PKB_MLP_REF_CUH */
