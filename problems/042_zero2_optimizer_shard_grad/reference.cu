/*
 * 042_zero2_optimizer_shard_grad reference: the original's steps with NCCL
 * and cuBLAS. The four parameters are flattened into one buffer on every
 * rank and ncclBroadcast from rank 0 (in place); the MLP forward and
 * backward run on views of it with cuBLAS (fp32 accumulation, one rounding
 * to T per GEMM, as torch's addmm / mm); the flat gradient is
 * reduce-scattered into this rank's slice; one kernel takes the mean and
 * runs Adam on the slice, in place in
 * the flat buffer and into m_part / v_part; an in-place ncclAllGather of the
 * slices rebuilds the flat vector, which is copied out into W1, b1, W2, b2.
 *
 * Roundings, as torch evaluates the original on tensors of dtype T (040's
 * reference has them op by op):
 *     h = relu(T(X W1^T + b1)),  out = T(h W2^T + b2)
 *     dout = T(T(2/numel) * T(out - y))       (mse_loss_backward runs in T)
 *     dW2 = T(dout^T h), db2 = T(colsum dout), dh = T(dout W2) where h > 0,
 *     dW1 = T(dh^T X), db1 = T(colsum dh)
 *     g = T(reduce_scatter_sum(flat)[rank] * (1/W))   NCCL rounds after
 *                                             every add
 *     m = T(T(m b1) + (1-b1) g);  v = T(T(v b2) + (1-b2) g g)
 *     p = T(p + T(T(T(m/bc1) / T(T(sqrt(T(v/bc2))) + eps)) * -lr))
 * bc1, bc2 from the int64 step on the device (fp64 pow).
 *
 * Traffic per rank: P broadcast, (W-1)/W P reduce-scattered, (W-1)/W P
 * gathered.
 *
 * The code is problems/lib/mlp_ref.cuh's zero_step, the same as 041's (stage 1)
 * but for the gradient's collective.
 */
#include <stdlib.h>
#include <stdint.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "pkb_device.cuh"
#include "pkb_ref.cuh"

PKB_SOLUTION;

#include "mlp_ref.cuh"   /* defines: struct mlp_ref, mlp_ref_init, mlp_release, zero_step */

extern "C" int pkb_init(pkb_ctx *ctx)
{
	return mlp_ref_init(ctx, 1, 1);   /* the flat parameters and the summed slice */
}

/* ZeRO-2: the gradient reduce-scattered */
extern "C" int pkb_run(pkb_ctx *ctx)
{
	return PKB_REF_FLOAT_CALL(ctx->in[0].dtype, zero_step, ctx, (struct mlp_ref *)ctx->user, 2);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_ref_fini(ctx, mlp_release);
}
