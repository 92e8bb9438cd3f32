/*
 * 041_zero1_optimizer_shard reference: the original's steps with NCCL and
 * cuBLAS. The four parameters are flattened into one buffer on every rank
 * and ncclBroadcast from rank 0 (in place); the MLP forward and backward
 * run on views of it with cuBLAS (fp32 accumulation, one rounding to T per
 * GEMM, as torch's addmm / mm); the flat gradient is all-reduced in place;
 * one kernel takes the mean and runs Adam on this rank's slice, in place in
 * the flat buffer and into m_part / v_part; an in-place ncclAllGather of the
 * slices rebuilds the flat vector, which is copied out into W1, b1, W2, b2.
 *
 * Roundings, as torch evaluates the original on tensors of dtype T (040's
 * reference has them op by op):
 *     h = relu(T(X W1^T + b1)),  out = T(h W2^T + b2)
 *     dout = T(T(2/numel) * T(out - y))       (mse_loss_backward runs in T)
 *     dW2 = T(dout^T h), db2 = T(colsum dout), dh = T(dout W2) where h > 0,
 *     dW1 = T(dh^T X), db1 = T(colsum dh)
 *     g = T(allreduce_sum(flat) * (1/W))      NCCL rounds after every add
 *     m = T(T(m b1) + (1-b1) g);  v = T(T(v b2) + (1-b2) g g)
 *     p = T(p + T(T(T(m/bc1) / T(T(sqrt(T(v/bc2))) + eps)) * -lr))
 * bc1, bc2 from the int64 step on the device (fp64 pow).
 *
 * Traffic per rank: P broadcast, 2 (W-1)/W P all-reduced, (W-1)/W P
 * gathered.
 */
#include <stdlib.h>
#include <stdint.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "pkb_device.cuh"
#include "pkb_ref.cuh"

PKB_SOLUTION;

#define THREADS MLP_THREADS   /* every kernel's block size, mlp_kernels.cuh's too */

struct ref {
	struct pkb_ref_blas blas;
	void *f;                /* the flat parameters (P) */
	void *h, *dh, *o, *g;   /* (chunk, hidden) x2, (chunk, d_out), flat (P) */
};

#include "mlp_kernels.cuh"
/* defines: MLP_THREADS, struct hyper, adam_hyper, rt, fill_rows, relu, mse_grad,
 * relu_mask, colsum, mlp_fwd_bwd, adam_slice */

extern "C" int pkb_init(pkb_ctx *ctx)
{
	PKB_CK(pkb_ref_float_dtype(ctx, ctx->in[0].dtype));
	struct ref *r = (struct ref *)calloc(1, sizeof *r);
	if (!r)
		return 1;
	ctx->user = r;
	int64_t chunk = ctx->in[0].shape[0], hidden = ctx->in[2].shape[0];
	int64_t d_out = ctx->in[4].shape[0], e = (int64_t)pkb_dtype_size(ctx->in[0].dtype);
	int64_t p = 0;
	for (int i = 0; i < 4; i++)
		p += ctx->in[2 + i].numel;
	PKB_CK_CUDA(ctx, cudaMalloc(&r->f, p * e));
	PKB_CK_CUDA(ctx, cudaMalloc(&r->h, chunk * hidden * e));
	PKB_CK_CUDA(ctx, cudaMalloc(&r->dh, chunk * hidden * e));
	PKB_CK_CUDA(ctx, cudaMalloc(&r->o, chunk * d_out * e));
	PKB_CK_CUDA(ctx, cudaMalloc(&r->g, p * e));
	return pkb_ref_blas_init(ctx, &r->blas);
}

template <typename T>
static int step(pkb_ctx *ctx, struct ref *r)
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
	PKB_CK(mlp_fwd_bwd<T>(ctx, bh, st, t, x, y, w1, b1, w2, b2, h, dh, o, g_w1, g_b1, g_w2, g_b2,
			      chunk, d_in, hidden, d_out));

	/* the gradient all-reduce (sum; the mean is taken in the Adam kernel) */
	PKB_CK_NCCL(ctx, ncclAllReduce(g, g, (size_t)p, nt, ncclSum, comm, st));

	struct hyper hp = adam_hyper(ctx);
	int64_t start = (int64_t)ctx->rank * part;
	adam_slice<T><<<pkb_ref_blocks(part, THREADS, 1024), THREADS, 0, st>>>(
		g + start, f + start, (const T *)ctx->in[6].data, (const T *)ctx->in[7].data,
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

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct ref *r = (struct ref *)ctx->user;
	switch (ctx->in[0].dtype) {
	case PKB_BF16: return step<__nv_bfloat16>(ctx, r);
	case PKB_FP16: return step<__half>(ctx, r);
	case PKB_FP32: return step<float>(ctx, r);
	default: return 1;
	}
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct ref *r = (struct ref *)ctx->user;
	if (!r)
		return 0;
	pkb_ref_blas_fini(&r->blas);
	cudaFree(r->f);
	cudaFree(r->h);
	cudaFree(r->dh);
	cudaFree(r->o);
	cudaFree(r->g);
	free(r);
	ctx->user = NULL;
	return 0;
}
