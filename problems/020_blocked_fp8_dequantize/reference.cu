/*
 * 020_blocked_fp8_dequantize reference: one dequantize kernel, then an
 * all-to-all as grouped ncclSend/ncclRecv -- what the original's Triton
 * kernel plus all_to_all_single do.
 *
 * x[i] = float(y[i]) * float(s[i / bs]) over the flat (W, M, N) local_y,
 * bs = block_size = 128. Chunk r of x (this rank's own) is written straight
 * into out[r]; the other W-1 chunks go to a send buffer and are exchanged
 * (out[j] = rank j's chunk r).
 *
 * Bytes per rank: reads W*M*N*e + W*M*N/bs*e, writes W*M*N*4 locally; sends
 * and receives (W-1)*M*N*4 (12 MiB at M = N = 1024, W = 4).
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <nccl.h>
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_ref.cuh"

PKB_SOLUTION;

#define THREADS 256

struct state {
	float *send;        /* (W, M, N) fp32; chunk `rank` unused */
	int64_t chunk;      /* M*N */
	int bs;
};

/* 4 consecutive elements per thread: bs and M*N are multiples of 4, so the
 * four share one scale and one chunk. */
template <typename T>
__global__ void __launch_bounds__(THREADS)
dequant(const T *y, const T *s, float *out, float *send, int64_t chunk, int bs,
	int rank, int64_t n4)
{
	struct __align__(4 * sizeof(T)) vec { T v[4]; };
	for (int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; q < n4;
	     q += (int64_t)gridDim.x * blockDim.x) {
		int64_t i = 4 * q;
		vec in = ((const vec *)y)[q];
		float sc = pkb_to_float(s[i / bs]);
		float4 x = make_float4(pkb_to_float(in.v[0]) * sc, pkb_to_float(in.v[1]) * sc,
				       pkb_to_float(in.v[2]) * sc, pkb_to_float(in.v[3]) * sc);
		float *dst = i / chunk == rank ? out : send;
		*(float4 *)(dst + i) = x;
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s;
	PKB_CK(pkb_ref_float_state(ctx, &s));
	s->chunk = ctx->in[0].numel / ctx->world;
	s->bs = (int)pkb_param_get(ctx, "block_size", 128);
	if (s->bs <= 0 || s->bs % 4 || s->chunk % s->bs) {
		ctx->svc->log(ctx, "020 reference: block_size %d does not tile M*N = %lld",
			      s->bs, (long long)s->chunk);
		return 1;
	}
	return cudaMalloc(&s->send, ctx->out[0].bytes) != cudaSuccess;
}

template <typename T>
static void launch(pkb_ctx *ctx, struct state *s)
{
	int64_t n4 = ctx->in[0].numel / 4;
	int64_t blocks = (n4 + THREADS - 1) / THREADS;
	if (blocks > 132 * 16)
		blocks = 132 * 16;
	dequant<T><<<(int)blocks, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		(const T *)ctx->in[0].data, (const T *)ctx->in[1].data, (float *)ctx->out[0].data,
		s->send, s->chunk, s->bs, ctx->rank, n4);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	switch (ctx->in[0].dtype) {
	case PKB_BF16: launch<__nv_bfloat16>(ctx, s); break;
	case PKB_FP16: launch<__half>(ctx, s); break;
	case PKB_FP32: launch<float>(ctx, s); break;
	default: return 1;
	}
	if (cudaGetLastError() != cudaSuccess)
		return 1;

	ncclComm_t comm = (ncclComm_t)ctx->nccl_comm;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	float *out = (float *)ctx->out[0].data;
	ncclResult_t r = ncclGroupStart();
	for (int p = 0; p < ctx->world && r == ncclSuccess; p++) {
		if (p == ctx->rank)
			continue;
		r = ncclSend(s->send + p * s->chunk, (size_t)s->chunk, ncclFloat32, p, comm, st);
		if (r == ncclSuccess)
			r = ncclRecv(out + p * s->chunk, (size_t)s->chunk, ncclFloat32, p, comm, st);
	}
	ncclResult_t g = ncclGroupEnd();
	if (r != ncclSuccess || g != ncclSuccess) {
		ctx->svc->log(ctx, "020 reference: all-to-all: %s",
			      ncclGetErrorString(r != ncclSuccess ? r : g));
		return 1;
	}
	return 0;
}

static void release(struct state *s)
{
	cudaFree(s->send);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_ref_fini(ctx, release);
}
