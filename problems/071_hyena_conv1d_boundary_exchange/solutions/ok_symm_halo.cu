/*
 * 071_hyena_conv1d_boundary_exchange, known-good: one kernel; the halos go
 * through symmetric memory. No NCCL.
 *
 * Block b owns CPB channels. It stages their tails (the last 6 samples of
 * each half) in this rank's symmetric buffer, meets block b of every rank
 * (pkb_barrier_block: the neighbours' tails of the same channels are
 * written), reads rank r-1's first-half tails and rank r+1's second-half
 * tails into shared memory (zeros on rank 0; rank W-1's second half takes
 * its own first-half tail), and convolves its channels from there.
 *
 * Back-to-back calls: the staging buffer has two halves used by alternate
 * calls (pkb_call_half). A block reaches call k+2, and overwrites call k's
 * half, only after meeting every peer's block in call k+1, which each
 * entered after finishing call k. No trailing barrier.
 */
#include <stdlib.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define THREADS 256
#define CPB 8          /* channels per block: 128 blocks for C = 1024, all resident */
#define PAD 6          /* taps - 1 */
#define TAPS (PAD + 1)

struct state {
	pkb_symm tails;    /* two halves of (2, C, PAD) */
	size_t half;       /* elements per half */
	uint32_t *calls;   /* per-block call counters */
};

template <typename T>
__global__ void __launch_bounds__(THREADS)
conv(pkb_dev_comm comm, const T *x, const T *w, T *y, T *const *tails, uint32_t *calls,
     size_t half_elems, int64_t nc, int64_t len)
{
	__shared__ float halo[CPB][2][PAD];
	__shared__ float wk[CPB][TAPS];
	int64_t chunk = len / 2, c0 = (int64_t)blockIdx.x * CPB;
	size_t off = pkb_call_half(calls, half_elems);
	T *mine = tails[comm.rank] + off;
	/* tails[h][c][k] = x[c][h chunk + chunk - PAD + k] */
	for (int i = threadIdx.x; i < CPB * 2 * PAD; i += THREADS) {
		int c = i / (2 * PAD), h = i / PAD % 2, k = i % PAD;
		mine[(h * nc + c0 + c) * PAD + k] = x[(c0 + c) * len + h * chunk + chunk - PAD + k];
	}
	if (!pkb_barrier_block(comm, blockIdx.x))
		return;
	for (int i = threadIdx.x; i < CPB * 2 * PAD; i += THREADS) {
		int c = i / (2 * PAD), h = i / PAD % 2, k = i % PAD;
		float v;
		if (h == 0)
			v = comm.rank > 0
				? pkb_to_float(tails[comm.rank - 1][off + (c0 + c) * PAD + k]) : 0.f;
		else if (comm.rank < comm.world - 1)
			v = pkb_to_float(tails[comm.rank + 1][off + (nc + c0 + c) * PAD + k]);
		else   /* chunk W-1 precedes chunk W: both here */
			v = pkb_to_float(x[(c0 + c) * len + chunk - PAD + k]);
		halo[c][h][k] = v;
	}
	for (int i = threadIdx.x; i < CPB * TAPS; i += THREADS)
		wk[i / TAPS][i % TAPS] = pkb_to_float(w[c0 * TAPS + i]);
	__syncthreads();
	for (int64_t i = threadIdx.x; i < CPB * len; i += THREADS) {
		int c = (int)(i / len);
		int64_t t = i % len, h = t / chunk, s0 = t % chunk - PAD;
		const T *row = x + (c0 + c) * len + h * chunk;
		float acc = 0.f;
#pragma unroll
		for (int j = 0; j < TAPS; j++) {
			int64_t s = s0 + j;
			float v = s >= 0 ? pkb_to_float(row[s]) : halo[c][h][PAD + s];
			acc = fmaf(wk[c][j], v, acc);
		}
		y[(c0 + c) * len + t] = pkb_from_float<T>(acc);
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	pkb_dtype t = ctx->in[0].dtype;
	int64_t nc = ctx->in[0].shape[1];
	if ((t != PKB_BF16 && t != PKB_FP16 && t != PKB_FP32) || ctx->in[1].shape[2] != TAPS ||
	    nc % CPB || ctx->in[0].shape[2] / 2 < PAD || ctx->world > THREADS)
		return 1;
	int blocks = (int)(nc / CPB);
	s->half = (size_t)2 * nc * PAD;
	if (cudaMalloc(&s->calls, blocks * sizeof(uint32_t)) != cudaSuccess ||
	    cudaMemset(s->calls, 0, blocks * sizeof(uint32_t)) != cudaSuccess)
		return 1;
	return ctx->svc->symm_alloc(ctx, 2 * s->half * pkb_dtype_size(t), &s->tails);
}

template <typename T>
static int run_t(pkb_ctx *ctx, struct state *s)
{
	int64_t nc = ctx->in[0].shape[1], len = ctx->in[0].shape[2];
	conv<T><<<(unsigned)(nc / CPB), THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, (const T *)ctx->in[0].data, (const T *)ctx->in[1].data,
		(T *)ctx->out[0].data, (T *const *)s->tails.peers_dev, s->calls, s->half, nc, len);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	switch (ctx->in[0].dtype) {
	case PKB_BF16: return run_t<__nv_bfloat16>(ctx, s);
	case PKB_FP16: return run_t<__half>(ctx, s);
	case PKB_FP32: return run_t<float>(ctx, s);
	default: return 1;
	}
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (!s)
		return 0;
	cudaFree(s->calls);
	free(s);
	ctx->user = NULL;
	return 0;
}
