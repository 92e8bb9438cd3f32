/*
 * 058_openclip_contrastive_loss reference: the original's exchange, rounds
 * of NCCL send/recv with the left and right neighbours (ncclGroupStart/End
 * as batch_isend_irecv), then per text block a cuBLAS GEMM of the scaled
 * image block against it, a grid reduction of the log-sigmoids, and one
 * thread that chains the terms in the original's order.
 *
 * Rounding, as torch evaluates the original (T = the harness dtype):
 *     img10   = T(10 * img)                   (logit_scale * img comes first)
 *     G       = T(img10 @ t^T), fp32 accumulation
 *     logits  = T(G + bias); labels * logits is exact (+-1)
 *     each    = T(-(min(x, 0) - log1p(exp(-|x|))))   torch's log_sigmoid, fp32
 *     term    = T(T(fp32 sum of each) / Bl)
 *     loss    = T(loss + term), in the exchange order
 * The received blocks are kept, one buffer per peer: (W-1) Bl D e bytes.
 */
#include <math.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <nccl.h>
#include <cub/block/block_reduce.cuh>
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_ref.cuh"

PKB_SOLUTION;

#define THREADS 256
#define MAX_BLOCKS 1024

struct state {
	struct pkb_ref_blas blas;
	void *img10;     /* (Bl, D) T */
	void *recv;      /* (W-1, Bl, D) T: the received text blocks, in order */
	void *g;         /* (Bl, Bl) T */
	float *part;     /* [MAX_BLOCKS] partial sums */
	float *terms;    /* [W] the terms, in the order they are added */
};

template <typename T>
__device__ __forceinline__ float rnd(float v)
{
	return pkb_to_float(pkb_from_float<T>(v));
}

template <typename T>
__global__ void scale_rows(const T *x, T *y, int64_t n, float s)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x)
		y[i] = pkb_from_float<T>(__fmul_rn(s, pkb_to_float(x[i])));
}

/* partial sums of -logsigmoid(label * T(G + bias)) over the Bl x Bl block;
 * label +1 on the diagonal when positives, else -1 */
template <typename T>
__global__ void __launch_bounds__(THREADS)
logsig_sums(const T *g, int64_t b, float bias, int positives, float *part)
{
	typedef cub::BlockReduce<float, THREADS> reduce;
	__shared__ typename reduce::TempStorage tmp;
	int64_t n = b * b;
	float acc = 0.f;
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * THREADS) {
		float x = rnd<T>(__fadd_rn(pkb_to_float(g[i]), bias));
		if (!(positives && i / b == i % b))
			x = -x;
		float ls = __fsub_rn(fminf(x, 0.f), log1pf(expf(-fabsf(x))));
		acc += rnd<T>(-ls);
	}
	float s = reduce(tmp).Sum(acc);
	if (threadIdx.x == 0)
		part[blockIdx.x] = s;
}

template <typename T>
__global__ void term_of(const float *part, int nb, int64_t b, float *term)
{
	float s = 0.f;
	for (int i = 0; i < nb; i++)
		s += part[i];
	*term = rnd<T>(__fdiv_rn(rnd<T>(s), (float)b));
}

template <typename T>
__global__ void chain(const float *terms, int w, T *loss)
{
	float l = terms[0];
	for (int i = 1; i < w; i++)
		l = rnd<T>(__fadd_rn(l, terms[i]));
	*loss = pkb_from_float<T>(l);
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s;
	PKB_CK(pkb_ref_float_state(ctx, &s));
	int64_t b = ctx->in[0].shape[0];
	size_t bytes = ctx->in[0].bytes, e = pkb_dtype_size(ctx->in[0].dtype);
	PKB_CK(pkb_ref_blas_init(ctx, &s->blas));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->img10, bytes));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->recv, bytes * (ctx->world > 1 ? ctx->world - 1 : 1)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->g, (size_t)b * b * e));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->part, MAX_BLOCKS * sizeof(float)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->terms, ctx->world * sizeof(float)));
	return 0;
}

template <typename T>
static int launch(pkb_ctx *ctx, struct state *s, cudaStream_t st, ncclComm_t comm)
{
	pkb_dtype dt = ctx->in[0].dtype;
	int w = ctx->world, r = ctx->rank;
	int64_t b = ctx->in[0].shape[0], dm = ctx->in[0].shape[1], nel = b * dm;
	float scale = (float)pkb_param_get(ctx, "logit_scale", 10.0);
	float bias = (float)pkb_param_get(ctx, "logit_bias", -10.0);
	const T *img = (const T *)ctx->in[0].data, *txt = (const T *)ctx->in[1].data;
	T *recv = (T *)s->recv;
	ncclDataType_t nt;
	PKB_CK(pkb_ref_nccl_type(ctx, dt, &nt));

	/* the exchange: round k receives rank r+k's block from the right and
	 * r-k's from the left, forwarding what the last round brought; an even
	 * W ends with one round to the right (rank r - W/2 arrives) */
	int left = (r - 1 + w) % w, right = (r + 1) % w, bidir = (w - 1) / 2;
	const T *to_left = txt, *to_right = txt;
	for (int k = 0; k < bidir; k++) {
		T *from_right = recv + (2 * k) * nel, *from_left = recv + (2 * k + 1) * nel;
		PKB_CK_NCCL(ctx, ncclGroupStart());
		PKB_CK_NCCL(ctx, ncclSend(to_right, nel, nt, right, comm, st));
		PKB_CK_NCCL(ctx, ncclSend(to_left, nel, nt, left, comm, st));
		PKB_CK_NCCL(ctx, ncclRecv(from_right, nel, nt, right, comm, st));
		PKB_CK_NCCL(ctx, ncclRecv(from_left, nel, nt, left, comm, st));
		PKB_CK_NCCL(ctx, ncclGroupEnd());
		to_left = from_right;
		to_right = from_left;
	}
	if ((w - 1) % 2) {
		PKB_CK_NCCL(ctx, ncclGroupStart());
		PKB_CK_NCCL(ctx, ncclSend(to_right, nel, nt, right, comm, st));
		PKB_CK_NCCL(ctx, ncclRecv(recv + (w - 2) * nel, nel, nt, left, comm, st));
		PKB_CK_NCCL(ctx, ncclGroupEnd());
	}

	scale_rows<T><<<pkb_ref_blocks(nel, THREADS, 1024), THREADS, 0, st>>>(img, (T *)s->img10,
									       nel, scale);
	PKB_CK_LAUNCH(ctx);
	PKB_CK(pkb_ref_blas_bind(ctx, &s->blas, st));
	unsigned nb = pkb_ref_blocks(b * b, THREADS * 8, MAX_BLOCKS);
	for (int j = 0; j < w; j++) {
		const T *t = j == 0 ? txt : recv + (j - 1) * nel;
		/* G (Bl, Bl) = img10 (Bl, D) @ t (Bl, D)^T */
		PKB_CK(pkb_ref_gemm_rm(ctx, s->blas.h, 0, 1, b, b, dm, 1.0, s->img10, dm, t, dm,
				       0.0, s->g, b, dt));
		logsig_sums<T><<<nb, THREADS, 0, st>>>((const T *)s->g, b, bias, j == 0, s->part);
		PKB_CK_LAUNCH(ctx);
		term_of<T><<<1, 1, 0, st>>>(s->part, (int)nb, b, s->terms + j);
		PKB_CK_LAUNCH(ctx);
	}
	chain<T><<<1, 1, 0, st>>>(s->terms, w, (T *)ctx->out[0].data);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

static void release(struct state *s)
{
	pkb_ref_blas_fini(&s->blas);
	cudaFree(s->img10);
	cudaFree(s->recv);
	cudaFree(s->g);
	cudaFree(s->part);
	cudaFree(s->terms);
}

PKB_REF_FLOAT_RUN_FINI(struct state, launch, release)
