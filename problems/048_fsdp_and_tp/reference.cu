/*
 * 048_fsdp_and_tp reference: NCCL sub-communicators for the FSDP group (same
 * tp) and the TP group (consecutive ranks), split once in init (the
 * original creates both groups with dist.new_group on every call);
 * ncclAllGather of the three weight tiles over the FSDP group, cuBLAS for
 * the three GEMMs, one elementwise kernel, ncclAllReduce of y over the TP
 * group.
 *
 * The gathers land tile after tile (rank order in the group): W1 and W2
 * gathered that way are already the row-stacked (D, Fl) matrices; W3's
 * tiles must sit side by side (torch.cat along dim 1), so a small kernel
 * re-lays them out. Math and roundings as torch on T tensors:
 *     x1 = T(x W1);  x2 = T(x W2)                 (fp32 accumulation)
 *     z  = T(T(silu(x1)) * x2)                    (silu = x / (1 + exp(-x)))
 *     y  = allreduce_tp(T(z W3))                  (in T, NCCL's order)
 *
 * Traffic per rank (W = 4, bf16): 3 (n_fsdp-1) Dl Fl e = 384 KiB gathered,
 * 2 (n_tp-1)/n_tp Bf D e = 512 KiB for the all-reduce.
 */
#include <stdlib.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "pkb_device.cuh"
#include "pkb_ref.cuh"

PKB_SOLUTION;

#define THREADS 256

struct ref48 {
	struct pkb_ref_blas blas;
	ncclComm_t tp, fsdp;
	int n_tp, n_fsdp;
	int64_t bf, d, dl, fl;
	void *w1, *w2;   /* [D, Fl] gathered (row-stacked) */
	void *w3t;       /* [n_fsdp][Fl, Dl]: the gathered W3 tiles */
	void *w3;        /* [Fl, D] */
	void *x1, *x2;   /* [Bf, Fl]; z lands in x1 */
};

/* w3[r, f*Dl + c] = tiles[f][r, c] */
template <typename T>
__global__ void w3_layout(const T *tiles, T *w3, int64_t fl, int64_t dl, int nf)
{
	int64_t d = dl * nf;
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < fl * d;
	     i += (int64_t)gridDim.x * THREADS) {
		int64_t r = i / d, col = i % d, f = col / dl;
		w3[i] = tiles[(f * fl + r) * dl + col % dl];
	}
}

template <typename T>
__global__ void swiglu(T *x1, const T *x2, int64_t n)
{
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * THREADS) {
		float a = pkb_to_float(x1[i]);
		float s = pkb_to_float(pkb_from_float<T>(a / (1.0f + expf(-a))));
		x1[i] = pkb_from_float<T>(s * pkb_to_float(x2[i]));
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct ref48 *r;
	PKB_CK(pkb_ref_float_state(ctx, &r));
	r->n_tp = (int)pkb_param_get(ctx, "n_tp", 1);
	r->n_fsdp = (int)pkb_param_get(ctx, "n_fsdp", ctx->world);
	if (r->n_tp * r->n_fsdp != ctx->world) {
		ctx->svc->log(ctx, "problem 48 reference: n_tp * n_fsdp != W");
		return 1;
	}
	r->bf = ctx->in[0].shape[0];
	r->d = ctx->in[0].shape[1];
	r->dl = ctx->in[1].shape[0];
	r->fl = ctx->in[1].shape[1];
	/* colour = the group, key = the rank inside it (its rank order) */
	ncclComm_t world = (ncclComm_t)ctx->nccl_comm;
	int tp = ctx->rank % r->n_tp, f = ctx->rank / r->n_tp;
	PKB_CK_NCCL(ctx, ncclCommSplit(world, f, tp, &r->tp, NULL));
	PKB_CK_NCCL(ctx, ncclCommSplit(world, tp, f, &r->fsdp, NULL));
	size_t e = pkb_dtype_size(ctx->in[0].dtype), w = (size_t)(r->d * r->fl) * e;
	PKB_CK_CUDA(ctx, cudaMalloc(&r->w1, w));
	PKB_CK_CUDA(ctx, cudaMalloc(&r->w2, w));
	PKB_CK_CUDA(ctx, cudaMalloc(&r->w3t, w));
	PKB_CK_CUDA(ctx, cudaMalloc(&r->w3, w));
	PKB_CK_CUDA(ctx, cudaMalloc(&r->x1, (size_t)(r->bf * r->fl) * e));
	PKB_CK_CUDA(ctx, cudaMalloc(&r->x2, (size_t)(r->bf * r->fl) * e));
	return pkb_ref_blas_init(ctx, &r->blas);
}

/* over r's tp and fsdp communicators, not the world's */
template <typename T>
static int forward(pkb_ctx *ctx, struct ref48 *r, cudaStream_t st, ncclComm_t)
{
	pkb_dtype t = ctx->in[0].dtype;
	cublasHandle_t bh = r->blas.h;
	int64_t bf = r->bf, d = r->d, fl = r->fl, tile = r->dl * r->fl;
	ncclDataType_t nt;
	T *y = (T *)ctx->out[0].data;

	PKB_CK(pkb_ref_nccl_type(ctx, t, &nt));
	PKB_CK(pkb_ref_blas_bind(ctx, &r->blas, st));
	PKB_CK_NCCL(ctx, ncclGroupStart());
	PKB_CK_NCCL(ctx, ncclAllGather(ctx->in[1].data, r->w1, (size_t)tile, nt, r->fsdp, st));
	PKB_CK_NCCL(ctx, ncclAllGather(ctx->in[2].data, r->w2, (size_t)tile, nt, r->fsdp, st));
	PKB_CK_NCCL(ctx, ncclAllGather(ctx->in[3].data, r->w3t, (size_t)tile, nt, r->fsdp, st));
	PKB_CK_NCCL(ctx, ncclGroupEnd());
	w3_layout<T><<<pkb_ref_blocks(fl * d, THREADS, 1024), THREADS, 0, st>>>((const T *)r->w3t,
		(T *)r->w3, fl, r->dl, r->n_fsdp);
	PKB_CK_LAUNCH(ctx);

	PKB_CK(pkb_ref_gemm_rm(ctx, bh, 0, 0, bf, fl, d, 1.0, ctx->in[0].data, d, r->w1, fl, 0.0,
			       r->x1, fl, t));
	PKB_CK(pkb_ref_gemm_rm(ctx, bh, 0, 0, bf, fl, d, 1.0, ctx->in[0].data, d, r->w2, fl, 0.0,
			       r->x2, fl, t));
	swiglu<T><<<pkb_ref_blocks(bf * fl, THREADS, 1024), THREADS, 0, st>>>((T *)r->x1,
		(const T *)r->x2, bf * fl);
	PKB_CK_LAUNCH(ctx);
	PKB_CK(pkb_ref_gemm_rm(ctx, bh, 0, 0, bf, d, fl, 1.0, r->x1, fl, r->w3, d, 0.0, y, d, t));
	/* n_tp = 1: a one-rank all-reduce, as the original's */
	PKB_CK_NCCL(ctx, ncclAllReduce(y, y, (size_t)(bf * d), nt, ncclSum, r->tp, st));
	return 0;
}

static void release(struct ref48 *r)
{
	if (r->tp)
		ncclCommDestroy(r->tp);
	if (r->fsdp)
		ncclCommDestroy(r->fsdp);
	pkb_ref_blas_fini(&r->blas);
	cudaFree(r->w1);
	cudaFree(r->w2);
	cudaFree(r->w3t);
	cudaFree(r->w3);
	cudaFree(r->x1);
	cudaFree(r->x2);
}

PKB_REF_FLOAT_RUN_FINI(struct ref48, forward, release)
