/*
 * 074_fla_kimi_delta_attention_cp_tp reference: NCCL between the ranks,
 * plain kernels for the recurrence (there is no GEMM: every step is a
 * rank-1 update of a 128 x 128 state).
 *
 * 1. One ncclAllGather over the CP communicator (split from the world in
 *    init: colour tp_idx, key cp_idx) of each rank's chunk packed as
 *    [k | v | g | beta] in T. q stays local: the original gathers it too,
 *    but only this rank's outputs are kept, and they need only its own q.
 * 2. prep: per (position, head), k normalised, the decay and sigmoid(beta)
 *    in fp32 for positions 0 .. (c+1)L - 1 (the later ranks' positions
 *    cannot reach ours: the recurrence is causal), q normalised and scaled
 *    for ours.
 * 3. recur: the state's value columns are independent recurrences (the
 *    decay scales rows, k^T S and q^T S are per column, the update adds
 *    k u_j to column j), so one warp runs column j of head h over the
 *    whole prefix, four keys a lane, and writes T(o) for our positions.
 *    16 heads x 128 columns = 2048 warps; a step is two warp sums.
 * 4. ncclAllReduce (sum, in T as the original's all_reduce of the cast
 *    output) in place over the TP pair, a second split (colour cp_idx).
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

#define D 128            /* key_dim = value_dim: 32 lanes x 4 */
#define RECUR_WARPS 4    /* value columns a block */
#define PREP_WARPS 8     /* (position, head) rows a block */

struct state {
	ncclComm_t cp_comm, tp_comm;  /* cp_comm: the world's when tp = 1 */
	int split_cp;                 /* cp_comm is ours to destroy */
	int tp, cp, c;                /* group sizes, this rank's cp_idx */
	int64_t l, h;                 /* tokens a rank, heads */
	int64_t chunk;                /* elements of one packed chunk */
	void *send, *recv;            /* packed chunks in T: 1 and cp */
	float *kn, *dec, *bsig, *qn;  /* prep's fp32 results */
};

__device__ __forceinline__ float warp_sum(float x)
{
#pragma unroll
	for (int o = 16; o > 0; o >>= 1)
		x += __shfl_xor_sync(0xffffffffu, x, o);
	return x;
}

__device__ __forceinline__ float sigmoid(float x)
{
	return 1.0f / (1.0f + expf(-x));
}

/* x / max(|x|, 1e-12) * scale for one row of D held 4 a lane */
__device__ __forceinline__ float4 normalise(float4 x, float scale)
{
	float n = sqrtf(warp_sum(x.x * x.x + x.y * x.y + x.z * x.z + x.w * x.w));
	n = fmaxf(n, 1e-12f);
	return make_float4(x.x / n * scale, x.y / n * scale, x.z / n * scale, x.w / n * scale);
}

template <typename T>
__device__ __forceinline__ float4 load4(const T *p)
{
	return make_float4(pkb_to_float(p[0]), pkb_to_float(p[1]), pkb_to_float(p[2]),
			   pkb_to_float(p[3]));
}

/*
 * One warp a (position p, head h) row. recv holds the CP group's chunks
 * in rank order, each [k (L, H, D) | v | g | beta (L, H)]; p runs over the
 * prefix 0 .. npos-1, own = c*L is where this rank's positions start.
 */
template <typename T>
__global__ void prep(const T *recv, const T *q, const __nv_bfloat16 *a_log,
		     const __nv_bfloat16 *dt_bias, int64_t l, int64_t h, int64_t chunk,
		     int64_t npos, int64_t own, float lower, float scale, float *kn, float *dec,
		     float *bsig, float *qn)
{
	int lane = threadIdx.x & 31;
	int64_t row = (int64_t)blockIdx.x * PREP_WARPS + (threadIdx.x >> 5);
	if (row >= npos * h)
		return;
	int64_t p = row / h, hh = row % h, i = p % l;
	const T *base = recv + p / l * chunk;
	int64_t at = (i * h + hh) * D + 4 * lane, lhd = l * h * D;
	float4 k = normalise(load4(base + at), 1.0f);
	float4 g = load4(base + 2 * lhd + at);
	float a = expf(__bfloat162float(a_log[hh]));
	const __nv_bfloat16 *db = dt_bias + hh * D + 4 * lane;
	float4 dc;
	dc.x = expf(lower * sigmoid(a * (g.x + __bfloat162float(db[0]))));
	dc.y = expf(lower * sigmoid(a * (g.y + __bfloat162float(db[1]))));
	dc.z = expf(lower * sigmoid(a * (g.z + __bfloat162float(db[2]))));
	dc.w = expf(lower * sigmoid(a * (g.w + __bfloat162float(db[3]))));
	int64_t out = row * D + 4 * lane;
	*(float4 *)(kn + out) = k;
	*(float4 *)(dec + out) = dc;
	if (lane == 0)
		bsig[row] = sigmoid(pkb_to_float(base[3 * lhd + i * h + hh]));
	if (p >= own) {
		float4 qq = normalise(load4(q + at), scale);
		*(float4 *)(qn + (row - own * h) * D + 4 * lane) = qq;
	}
}

/*
 * Column j of head h's state, one warp, S[4 lane .. 4 lane + 3][j] in
 * registers, over positions 0 .. npos-1; T(o) out for p >= own. The next
 * step's operands are loaded before this step's sums.
 */
template <typename T>
__global__ void __launch_bounds__(RECUR_WARPS * 32)
recur(const float *kn, const float *dec, const float *bsig, const float *qn, const T *recv,
      int64_t l, int64_t h, int64_t chunk, int64_t npos, int64_t own, T *out)
{
	int lane = threadIdx.x & 31, hh = blockIdx.x;
	int j = blockIdx.y * RECUR_WARPS + (threadIdx.x >> 5);
	const float4 *k4 = (const float4 *)kn + hh * (D / 4) + lane;
	const float4 *d4 = (const float4 *)dec + hh * (D / 4) + lane;
	int64_t lhd = l * h * D, step4 = h * (D / 4);
	float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
	float4 k = k4[0], dc = d4[0];
	float b = bsig[hh], v = pkb_to_float(recv[lhd + hh * D + j]);
	for (int64_t p = 0; p < npos; p++) {
		float4 kx = k, dx = dc;
		float bx = b, vx = v;
		if (p + 1 < npos) {
			int64_t n = p + 1, i = n % l;
			k = k4[n * step4];
			dc = d4[n * step4];
			b = bsig[n * h + hh];
			v = pkb_to_float(recv[n / l * chunk + lhd + (i * h + hh) * D + j]);
		}
		s0 *= dx.x;
		s1 *= dx.y;
		s2 *= dx.z;
		s3 *= dx.w;
		float proj = warp_sum(kx.x * s0 + kx.y * s1 + kx.z * s2 + kx.w * s3);
		float u = (vx - proj) * bx;
		s0 += kx.x * u;
		s1 += kx.y * u;
		s2 += kx.z * u;
		s3 += kx.w * u;
		if (p >= own) {
			float4 q = ((const float4 *)qn)[((p - own) * h + hh) * (D / 4) + lane];
			float o = warp_sum(q.x * s0 + q.y * s1 + q.z * s2 + q.w * s3);
			if (lane == 0)
				out[((p - own) * h + hh) * D + j] = pkb_from_float<T>(o);
		}
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	PKB_CK(pkb_ref_float_dtype(ctx, ctx->in[0].dtype));
	if (ctx->in[0].shape[3] != D || ctx->in[2].shape[3] != D) {
		ctx->svc->log(ctx, "problem 74 reference: key and value dims must be %d", D);
		return 1;
	}
	struct state *s;
	PKB_CK(pkb_ref_state(ctx, &s));
	s->tp = (int)pkb_param_get(ctx, "tp_size", 1);
	s->cp = (int)pkb_param_get(ctx, "cp_size", ctx->world);
	if (s->tp * s->cp != ctx->world)
		return 1;
	s->c = ctx->rank / s->tp;
	s->l = ctx->in[0].shape[1];
	s->h = ctx->in[0].shape[2];
	s->chunk = s->l * s->h * (3 * D + 1);
	int t = ctx->rank % s->tp;
	size_t e = pkb_dtype_size(ctx->in[0].dtype);
	if (s->tp > 1) {
		/* CP group: same tp_idx, ordered by cp_idx; TP group: the pair */
		PKB_CK_NCCL(ctx, ncclCommSplit((ncclComm_t)ctx->nccl_comm, t, s->c, &s->cp_comm, NULL));
		s->split_cp = 1;
		PKB_CK_NCCL(ctx, ncclCommSplit((ncclComm_t)ctx->nccl_comm, s->c, t, &s->tp_comm, NULL));
	} else {
		s->cp_comm = (ncclComm_t)ctx->nccl_comm;
	}
	int64_t npos = (s->c + 1) * s->l, lhd = s->l * s->h * D;
	PKB_CK_CUDA(ctx, cudaMalloc(&s->send, s->chunk * e));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->recv, s->cp * s->chunk * e));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->kn, npos * s->h * D * sizeof(float)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->dec, npos * s->h * D * sizeof(float)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->bsig, npos * s->h * sizeof(float)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->qn, lhd * sizeof(float)));
	return 0;
}

/* over s's cp and tp communicators, not the world's */
template <typename T>
static int launch(pkb_ctx *ctx, struct state *s, cudaStream_t st, ncclComm_t)
{
	pkb_dtype dt = ctx->in[0].dtype;
	ncclDataType_t nt;
	PKB_CK(pkb_ref_nccl_type(ctx, dt, &nt));
	size_t e = sizeof(T);
	int64_t lhd = s->l * s->h * D, npos = (s->c + 1) * s->l, own = s->c * s->l;
	char *send = (char *)s->send;
	/* pack [k | v | g | beta] */
	for (int i = 0; i < 3; i++)
		PKB_CK_CUDA(ctx, cudaMemcpyAsync(send + i * lhd * e, ctx->in[1 + i].data, lhd * e,
						 cudaMemcpyDeviceToDevice, st));
	PKB_CK_CUDA(ctx, cudaMemcpyAsync(send + 3 * lhd * e, ctx->in[4].data, ctx->in[4].bytes,
					 cudaMemcpyDeviceToDevice, st));
	PKB_CK_NCCL(ctx, ncclAllGather(s->send, s->recv, s->chunk, nt, s->cp_comm, st));
	const T *recv = (const T *)s->recv;
	unsigned pb = pkb_ref_blocks(npos * s->h, PREP_WARPS, 1u << 30);
	prep<T><<<pb, PREP_WARPS * 32, 0, st>>>(recv, (const T *)ctx->in[0].data,
		(const __nv_bfloat16 *)ctx->in[5].data, (const __nv_bfloat16 *)ctx->in[6].data,
		s->l, s->h, s->chunk, npos, own, -5.0f, 1.0f / sqrtf((float)D), s->kn, s->dec,
		s->bsig, s->qn);
	PKB_CK_LAUNCH(ctx);
	dim3 grid((unsigned)s->h, D / RECUR_WARPS);
	recur<T><<<grid, RECUR_WARPS * 32, 0, st>>>(s->kn, s->dec, s->bsig, s->qn, recv, s->l,
						    s->h, s->chunk, npos, own,
						    (T *)ctx->out[0].data);
	PKB_CK_LAUNCH(ctx);
	if (s->tp > 1)
		PKB_CK_NCCL(ctx, ncclAllReduce(ctx->out[0].data, ctx->out[0].data,
					       ctx->out[0].numel, nt, ncclSum, s->tp_comm, st));
	return 0;
}

static void release(struct state *s)
{
	if (s->split_cp && s->cp_comm)
		ncclCommDestroy(s->cp_comm);
	if (s->tp_comm)
		ncclCommDestroy(s->tp_comm);
	void *bufs[] = { s->send, s->recv, s->kn, s->dec, s->bsig, s->qn };
	for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
		cudaFree(bufs[i]);
}

PKB_REF_FLOAT_RUN_FINI(struct state, launch, release)
