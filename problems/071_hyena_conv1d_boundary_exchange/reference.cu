/*
 * 071_hyena_conv1d_boundary_exchange reference: the original's batched
 * isend/irecv as one NCCL group with the two chain neighbours, then a plain
 * depthwise conv kernel (a 7-tap short conv is a memory-bound stencil: no
 * library call needed, as in Hyena's own short-conv kernels).
 *
 *   1. pack the halos to send: the last 6 samples of each channel's first
 *      half (for rank r+1) and of its second half (for rank r-1), (2, C, 6);
 *   2. one NCCL group: a's tail to r+1 and b's tail to r-1; rank r-1's a
 *      tail and rank r+1's b tail in;
 *   3. conv: y[c][h chunk + t] = sum_j w[c][j] v_h(t + j - 6), v_h(s) the
 *      half's sample s, or its halo for s < 0 (zeros on rank 0 for the
 *      first half; rank W-1's own first-half tail for the second), fp32
 *      accumulation, one rounding.
 *
 * Traffic: 2 x 1024 x 6 elements each way (24 KiB at bf16); 4 MiB read and
 * written: a few microseconds of HBM, the rest is latency.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <nccl.h>
#include "pkb.h"
#include "pkb_ref.cuh"
#include "pkb_device.cuh"   /* pkb_to_float, pkb_from_float */

PKB_SOLUTION;

#define THREADS 256
#define MAX_TAPS 32

struct state {
	void *send;    /* (2, C, pad): a's tail, b's tail */
	void *recv;    /* (2, C, pad): rank r-1's a tail, rank r+1's b tail */
	int64_t c, len, taps;
};

/* send[h][c][k] = x[c][h chunk + chunk - pad + k] */
template <typename T>
__global__ void __launch_bounds__(THREADS)
pack_tails(const T *x, T *send, int64_t nc, int64_t len, int pad)
{
	int64_t chunk = len / 2, n = 2 * nc * pad;
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * THREADS) {
		int64_t h = i / (nc * pad), c = i / pad % nc, k = i % pad;
		send[i] = x[c * len + h * chunk + chunk - pad + k];
	}
}

/*
 * halo_a: the first half's halo (NULL: zeros); halo_b: the second half's
 * (NULL: this rank's own first-half tail), both (C, pad).
 */
template <typename T>
__global__ void __launch_bounds__(THREADS)
conv(const T *x, const T *w, const T *halo_a, const T *halo_b, T *y, int64_t nc, int64_t len,
     int taps)
{
	int64_t chunk = len / 2, n = nc * len;
	int pad = taps - 1;
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * THREADS) {
		int64_t c = i / len, t = i % len, h = t / chunk, s0 = t % chunk - pad;
		const T *half = x + c * len + h * chunk;
		float acc = 0.f;
		for (int j = 0; j < taps; j++) {
			int64_t s = s0 + j;
			float v;
			if (s >= 0)
				v = pkb_to_float(half[s]);
			else if (h == 0)
				v = halo_a ? pkb_to_float(halo_a[c * pad + pad + s]) : 0.f;
			else
				v = halo_b ? pkb_to_float(halo_b[c * pad + pad + s])
					   : pkb_to_float(x[c * len + chunk + s]);
			acc = fmaf(pkb_to_float(w[c * taps + j]), v, acc);
		}
		y[i] = pkb_from_float<T>(acc);
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	pkb_dtype t = ctx->in[0].dtype;
	struct state *s;
	PKB_CK(pkb_ref_float_state(ctx, &s));
	s->c = ctx->in[0].shape[1];
	s->len = ctx->in[0].shape[2];
	s->taps = ctx->in[1].shape[2];
	if (ctx->in[0].shape[0] != 1 || s->len % 2 || s->taps < 2 || s->taps > MAX_TAPS ||
	    s->taps - 1 > s->len / 2) {
		ctx->svc->log(ctx, "071 reference: unsupported shapes");
		return 1;
	}
	size_t bytes = (size_t)2 * s->c * (s->taps - 1) * pkb_dtype_size(t);
	PKB_CK_CUDA(ctx, cudaMalloc(&s->send, bytes));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->recv, bytes));
	return 0;
}

template <typename T>
static int run_t(pkb_ctx *ctx, struct state *s, cudaStream_t st, ncclComm_t comm)
{
	const T *x = (const T *)ctx->in[0].data;
	int pad = (int)s->taps - 1, me = ctx->rank, last = ctx->world - 1;
	size_t halo = (size_t)s->c * pad;
	T *send = (T *)s->send, *recv = (T *)s->recv;
	ncclDataType_t nt;
	PKB_CK(pkb_ref_nccl_type(ctx, ctx->in[0].dtype, &nt));

	pack_tails<T><<<pkb_ref_blocks((int64_t)(2 * halo), THREADS, 1024), THREADS, 0, st>>>(
		x, send, s->c, s->len, pad);
	PKB_CK_LAUNCH(ctx);
	PKB_CK_NCCL(ctx, ncclGroupStart());
	if (me > 0) {
		PKB_CK_NCCL(ctx, ncclRecv(recv, halo, nt, me - 1, comm, st));
		PKB_CK_NCCL(ctx, ncclSend(send + halo, halo, nt, me - 1, comm, st));
	}
	if (me < last) {
		PKB_CK_NCCL(ctx, ncclSend(send, halo, nt, me + 1, comm, st));
		PKB_CK_NCCL(ctx, ncclRecv(recv + halo, halo, nt, me + 1, comm, st));
	}
	PKB_CK_NCCL(ctx, ncclGroupEnd());
	conv<T><<<pkb_ref_blocks(s->c * s->len, THREADS, 2048), THREADS, 0, st>>>(
		x, (const T *)ctx->in[1].data, me > 0 ? recv : (const T *)nullptr,
		me < last ? recv + halo : (const T *)nullptr, (T *)ctx->out[0].data, s->c, s->len,
		(int)s->taps);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

static void release(struct state *s)
{
	cudaFree(s->send);
	cudaFree(s->recv);
}

PKB_REF_FLOAT_RUN_FINI(struct state, run_t, release)
