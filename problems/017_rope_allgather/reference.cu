/*
 * 017_rope_allgather reference: one fused RoPE kernel for q and k into a
 * send buffer, one ncclAllGather of both, one kernel that scatters the
 * gathered blocks into the (B, W*S, 8, 64) outputs.
 *
 * Math (T = the dtype; torch rounds every elementwise op to T):
 *     rot[d]  = d < 32 ? -x[d+32] : x[d-32]
 *     out[d]  = T( T(x[d]*cos[d]) + T(rot[d]*sin[d]) )
 * for each (b, s, h) and d < 64, cos/sin indexed by (b, s, d).
 *
 * The original does two all_gathers into lists and two torch.cat(dim=1);
 * here q and k travel in one collective (2 * B*S*512*e bytes per rank, 64 KiB
 * at the default W = 4) and the concatenation along the sequence is the
 * output addressing of the last kernel: rank r's block for sequence b lands
 * at positions [r*S, (r+1)*S) of row b.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <nccl.h>
#include <stdint.h>
#include <stdlib.h>
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_ref.cuh"

PKB_SOLUTION;

#define HEADS 8
#define HDIM 64
#define POS_ELEMS (HEADS * HDIM)   /* elements of one (b, s) position */
#define THREADS 256

struct state {
	void *send;   /* [2][B][S][512]: embedded q then k */
	void *recv;   /* [W][2][B][S][512] */
};

/* one element of rope(x) at flat index i of a (B, S, 8, 64) tensor */
template <typename T>
__device__ __forceinline__ T rope_at(const T *x, const T *cs, const T *sn, int64_t i)
{
	int d = (int)(i & (HDIM - 1));
	int64_t cidx = (i / POS_ELEMS) * HDIM + d;
	float xv = pkb_to_float(x[i]);
	float rv = d < HDIM / 2 ? -pkb_to_float(x[i + HDIM / 2]) : pkb_to_float(x[i - HDIM / 2]);
	/* _rn: no FMA contraction, each product rounded as torch does */
	float t1 = pkb_to_float(pkb_from_float<T>(__fmul_rn(xv, pkb_to_float(cs[cidx]))));
	float t2 = pkb_to_float(pkb_from_float<T>(__fmul_rn(rv, pkb_to_float(sn[cidx]))));
	return pkb_from_float<T>(__fadd_rn(t1, t2));
}

template <typename T>
__global__ void rope_qk(const T *q, const T *k, const T *cs, const T *sn, T *send, int64_t len)
{
	for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < 2 * len;
	     e += (int64_t)gridDim.x * blockDim.x)
		send[e] = e < len ? rope_at(q, cs, sn, e) : rope_at(k, cs, sn, e - len);
}

/* a warp per output position row (t, b, p); V-sized words across the row */
template <typename V>
__global__ void scatter_gathered(const V *recv, V *qo, V *ko, int64_t b_count, int64_t s,
				 int world, int64_t vpr)
{
	int64_t ws = (int64_t)world * s;
	int64_t rows = 2 * b_count * ws;
	int lane = threadIdx.x & 31;
	for (int64_t row = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5; row < rows;
	     row += ((int64_t)gridDim.x * blockDim.x) >> 5) {
		int64_t t = row / (b_count * ws), rem = row - t * b_count * ws;
		int64_t b = rem / ws, p = rem - b * ws;
		int64_t r = p / s, sp = p - r * s;
		const V *src = recv + (((r * 2 + t) * b_count + b) * s + sp) * vpr;
		V *dst = (t ? ko : qo) + (b * ws + p) * vpr;
		for (int64_t k = lane; k < vpr; k += 32)
			dst[k] = src[k];
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s;
	PKB_CK(pkb_ref_state(ctx, &s));
	size_t bytes = ctx->in[0].bytes;
	if (cudaMalloc(&s->send, 2 * bytes) != cudaSuccess ||
	    cudaMalloc(&s->recv, 2 * bytes * (size_t)ctx->world) != cudaSuccess) {
		ctx->svc->log(ctx, "017 reference: cudaMalloc failed");
		return 1;
	}
	return 0;
}

template <typename V>
static void scatter(pkb_ctx *ctx, struct state *s, int64_t b, int64_t sl, size_t e)
{
	int64_t rows = 2 * b * ctx->world * sl;
	int64_t blocks = (rows * 32 + THREADS - 1) / THREADS;
	scatter_gathered<V><<<(unsigned)(blocks > 2048 ? 2048 : blocks), THREADS, 0,
			      (cudaStream_t)ctx->stream>>>(
		(const V *)s->recv, (V *)ctx->out[0].data, (V *)ctx->out[1].data, b, sl,
		ctx->world, (int64_t)(POS_ELEMS * e / sizeof(V)));
}

template <typename T>
static int launch(pkb_ctx *ctx, struct state *s, cudaStream_t st, ncclComm_t comm)
{
	const pkb_tensor *q = &ctx->in[0];
	int64_t b = q->shape[0], sl = q->shape[1], len = q->numel;
	int64_t blocks = (2 * len + THREADS - 1) / THREADS;
	rope_qk<T><<<(unsigned)(blocks > 4096 ? 4096 : blocks), THREADS, 0, st>>>(
		(const T *)q->data, (const T *)ctx->in[1].data, (const T *)ctx->in[2].data,
		(const T *)ctx->in[3].data, (T *)s->send, len);

	ncclResult_t r = ncclAllGather(s->send, s->recv, 2 * q->bytes, ncclInt8, comm, st);
	if (r != ncclSuccess) {
		ctx->svc->log(ctx, "ncclAllGather: %s", ncclGetErrorString(r));
		return 1;
	}
	/* a position row is 512*e bytes, a multiple of 16: int4 when aligned */
	uintptr_t a = (uintptr_t)ctx->out[0].data | (uintptr_t)ctx->out[1].data;
	if (a % 16 == 0)
		scatter<int4>(ctx, s, b, sl, sizeof(T));
	else
		scatter<T>(ctx, s, b, sl, sizeof(T));
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

static void release(struct state *s)
{
	cudaFree(s->send);
	cudaFree(s->recv);
}

PKB_REF_FLOAT_RUN_FINI(struct state, launch, release)
