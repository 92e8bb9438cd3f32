/*
 * 023_grad_acc_loss reference: one thread forms loss_sum and the (purely
 * local) backward, an in-place NCCL all-reduce of the one T scalar sums
 * loss_sum over the ranks, and one thread divides by the global count.
 *
 * Math, as torch evaluates these 0-dim tensors (T = the dtype; an int64
 * operand is cast to T first, the arithmetic is fp32 opmath, each op's
 * result rounds to T):
 *     loss     = nan_to_num(loss)         only if n_r == 0
 *     loss_sum = all_reduce_sum( T(loss * T(n_r)) )           in T
 *     normalized_loss = T(loss_sum / T(G))
 *     grad_loss = T( T(T(g_norm * T(n_r)) / T(G)) + T(g_sum * T(n_r)) )
 * Everything is a few scalar loads and stores: the cost is the latency of
 * three launches and the all-reduce.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <nccl.h>
#include <stdlib.h>
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_ref.cuh"

PKB_SOLUTION;

/* torch.nan_to_num defaults: NaN -> 0, +-Inf -> the dtype's largest finite */
template <typename T> __device__ float finite_max();
template <> __device__ float finite_max<__nv_bfloat16>() { return 3.38953139e38f; }
template <> __device__ float finite_max<__half>() { return 65504.f; }
template <> __device__ float finite_max<float>() { return 3.40282347e38f; }

/* c10::convert<T>(int64): through float */
template <typename T>
__device__ __forceinline__ float count_as(int64_t v)
{
	return pkb_to_float(pkb_from_float<T>((float)v));
}

template <typename T>
__global__ void local_terms(const T *loss, const int64_t *n_r, const int64_t *g_tok,
			    const T *g_norm, const T *g_sum, T *loss_sum, T *grad_loss)
{
	int64_t n = *n_r;
	float l = pkb_to_float(*loss);
	if (n == 0) {
		if (isnan(l))
			l = 0.f;
		else if (isinf(l))
			l = l > 0 ? finite_max<T>() : -finite_max<T>();
	}
	float nt = count_as<T>(n), gt = count_as<T>(*g_tok);
	*loss_sum = pkb_from_float<T>(__fmul_rn(l, nt));
	float a = pkb_to_float(pkb_from_float<T>(__fmul_rn(pkb_to_float(*g_norm), nt)));
	float b = pkb_to_float(pkb_from_float<T>(__fdiv_rn(a, gt)));
	float c = pkb_to_float(pkb_from_float<T>(__fmul_rn(pkb_to_float(*g_sum), nt)));
	*grad_loss = pkb_from_float<T>(__fadd_rn(b, c));
}

template <typename T>
__global__ void normalize(const T *loss_sum, const int64_t *g_tok, T *out)
{
	*out = pkb_from_float<T>(__fdiv_rn(pkb_to_float(*loss_sum), count_as<T>(*g_tok)));
}

template <typename T>
static int launch(pkb_ctx *ctx, cudaStream_t st, ncclComm_t comm)
{
	ncclDataType_t nt;
	PKB_CK(pkb_ref_nccl_type(ctx, ctx->in[0].dtype, &nt));
	const int64_t *n_r = (const int64_t *)ctx->in[1].data, *g_tok = (const int64_t *)ctx->in[2].data;
	T *normalized = (T *)ctx->out[0].data, *loss_sum = (T *)ctx->out[1].data;
	local_terms<T><<<1, 1, 0, st>>>((const T *)ctx->in[0].data, n_r, g_tok,
					(const T *)ctx->in[3].data, (const T *)ctx->in[4].data,
					loss_sum, (T *)ctx->out[2].data);
	PKB_CK_LAUNCH(ctx);
	PKB_CK_NCCL(ctx, ncclAllReduce(loss_sum, loss_sum, 1, nt, ncclSum, comm, st));
	normalize<T><<<1, 1, 0, st>>>(loss_sum, g_tok, normalized);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

PKB_REF_FLOAT_STATELESS(pkb_ref_init_float, launch)
