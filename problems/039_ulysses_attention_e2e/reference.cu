/*
 * 039_ulysses_attention_e2e reference: the original's path -- cuBLAS for the
 * projections, NCCL for the two all-to-alls (grouped ncclSend/ncclRecv),
 * a plain kernel for the per-position head attention, with the original's
 * bf16 roundings:
 *   1. qkv (B*S, 1536) = hidden @ w_qkv^T;
 *   2. pack, for each rank j, its G = 8/W heads of q and the (k, v) pairs
 *      of the same heads (the original's stack along a new dim 3) of every
 *      local position: send[j][pos] = q heads [jG, (jG+G)) | k_h, v_h for
 *      h in them, 3*G*64 values; one exchange, so rank r receives
 *      recv[j][pos] = rank j's position pos, r's heads. The original's two
 *      exchanges (q, then k|v) carry the same bytes;
 *   3. per received position and head g < G: scores s_h' = q_g . k_h'
 *      rounded, times 1/8, softmax in fp32 rounded, sum_h' p_h' v_h'
 *      rounded (torch's matmul, softmax, matmul on bf16 tensors), into
 *      send2[j][pos] in the same order;
 *   4. exchange back: recv2[j][pos] = r's position pos, rank j's heads; a
 *      block transpose gives att (B*S, 8*64) with heads in rank order;
 *   5. out = att @ w_o^T.
 * Rearrangements move 16-byte units: G*64 values are at least 128 bytes.
 */
#include <math.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include <cublas_v2.h>
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_ref.cuh"

PKB_SOLUTION;

#define THREADS 256
#define HEADS 8
#define HD 64
#define HID (HEADS * HD)

struct state {
	struct pkb_ref_blas blas;
	void *qkv, *send, *recv;     /* (tok, 1536), (W, tok, 3G*64) x2 */
	void *send2, *recv2, *att;   /* (W, tok, G*64) x2, (tok, 512) */
};

/* send[j][p] = q heads [jG, jG+G) | (k_h, v_h) for those h, of position p */
template <typename T>
__global__ void pack(const T *qkv, T *send, int64_t tok, int g_n, int w)
{
	int64_t per = 3 * g_n * HD, n = w * tok * per;
	for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < n;
	     o += (int64_t)gridDim.x * blockDim.x) {
		int64_t x = o / per, c = o - x * per;
		int64_t j = x / tok, p = x - j * tok;
		const T *row = qkv + p * 3 * HID;
		int64_t at;
		if (c < g_n * HD) {
			at = j * g_n * HD + c;                           /* q */
		} else {
			int64_t e = c - g_n * HD, h = e / (2 * HD), kv = e / HD % 2;
			at = (1 + kv) * HID + (j * g_n + h) * HD + e % HD;   /* k or v */
		}
		send[o] = row[at];
	}
}

/* one thread per (position, head g): the G x G attention of the position,
 * rounded where torch rounds a bf16 tensor */
template <typename T>
__global__ void head_attention(const T *recv, T *out, int64_t n_pos, int g_n)
{
	int64_t n = n_pos * g_n;
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x) {
		int64_t x = i / g_n;
		int g = (int)(i - x * g_n);
		const T *pos = recv + x * 3 * g_n * HD;
		const T *q = pos + g * HD, *kv = pos + g_n * HD;
		float s[HEADS], m = -INFINITY, l = 0;
		for (int h = 0; h < g_n; h++) {
			float acc = 0;
			for (int d = 0; d < HD; d++)
				acc += pkb_to_float(q[d]) * pkb_to_float(kv[h * 2 * HD + d]);
			/* matmul rounds, then * 1/8 on the rounded tensor */
			s[h] = pkb_to_float(pkb_from_float<T>(
				pkb_to_float(pkb_from_float<T>(acc)) * 0.125f));
			m = fmaxf(m, s[h]);
		}
		for (int h = 0; h < g_n; h++) {
			s[h] = expf(s[h] - m);
			l += s[h];
		}
		for (int h = 0; h < g_n; h++)
			s[h] = pkb_to_float(pkb_from_float<T>(s[h] / l));
		T *o = out + x * g_n * HD + g * HD;
		for (int d = 0; d < HD; d++) {
			float acc = 0;
			for (int h = 0; h < g_n; h++)
				acc += s[h] * pkb_to_float(kv[h * 2 * HD + HD + d]);
			o[d] = pkb_from_float<T>(acc);
		}
	}
}

#include "swap_blocks.cuh"   /* defines: swap_blocks, swap */

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s;
	PKB_CK(pkb_ref_state(ctx, &s));
	PKB_CK(pkb_ref_float_dtype(ctx, ctx->in[0].dtype));
	size_t tok_bytes = ctx->in[0].bytes;   /* (tok, 512) */
	PKB_CK(pkb_ref_blas_init(ctx, &s->blas));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->qkv, 3 * tok_bytes));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->send, 3 * tok_bytes));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->recv, 3 * tok_bytes));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->send2, tok_bytes));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->recv2, tok_bytes));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->att, tok_bytes));
	return 0;
}

template <typename T>
static int middle(pkb_ctx *ctx, struct state *s, int64_t tok, int g_n)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	int w = ctx->world;
	size_t e = sizeof(T);
	int64_t n = w * tok * 3 * g_n * HD;
	pack<T><<<pkb_ref_blocks(n, THREADS, 4096), THREADS, 0, st>>>(
		(const T *)s->qkv, (T *)s->send, tok, g_n, w);
	PKB_CK_LAUNCH(ctx);
	PKB_CK(pkb_ref_all_to_all(ctx, s->send, s->recv, tok * 3 * g_n * HD * e));
	head_attention<T><<<pkb_ref_blocks(w * tok * g_n, THREADS, 4096), THREADS, 0, st>>>(
		(const T *)s->recv, (T *)s->send2, w * tok, g_n);
	PKB_CK_LAUNCH(ctx);
	PKB_CK(pkb_ref_all_to_all(ctx, s->send2, s->recv2, tok * g_n * HD * e));
	int64_t blk = g_n * HD * e / 16;
	swap_blocks<<<pkb_ref_blocks(w * tok * blk, THREADS, 4096), THREADS, 0, st>>>(
		(const int4 *)s->recv2, (int4 *)s->att, w, tok, blk);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	pkb_dtype t = ctx->in[0].dtype;
	int64_t tok = ctx->in[0].shape[0] * ctx->in[0].shape[1];
	int g_n = HEADS / ctx->world;
	cublasHandle_t h = s->blas.h;
	PKB_CK(pkb_ref_blas_bind(ctx, &s->blas, st));
	/* F.linear: x @ w^T */
	PKB_CK(pkb_ref_gemm_rm(ctx, h, 0, 1, tok, 3 * HID, HID, 1, ctx->in[0].data, HID,
			       ctx->in[1].data, HID, 0, s->qkv, 3 * HID, t));
	if (t == PKB_BF16)
		PKB_CK(middle<__nv_bfloat16>(ctx, s, tok, g_n));
	else if (t == PKB_FP16)
		PKB_CK(middle<__half>(ctx, s, tok, g_n));
	else
		PKB_CK(middle<float>(ctx, s, tok, g_n));
	return pkb_ref_gemm_rm(ctx, h, 0, 1, tok, HID, HID, 1, s->att, HID, ctx->in[2].data, HID,
			       0, ctx->out[0].data, HID, t);
}

static void release(struct state *s)
{
	pkb_ref_blas_fini(&s->blas);
	cudaFree(s->qkv);
	cudaFree(s->send);
	cudaFree(s->recv);
	cudaFree(s->send2);
	cudaFree(s->recv2);
	cudaFree(s->att);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_ref_fini(ctx, release);
}
