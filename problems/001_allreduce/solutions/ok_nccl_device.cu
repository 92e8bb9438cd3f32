/*
 * 001_allreduce, known-good under the `nccl-device` backend: the one-shot
 * all-reduce of ok_oneshot_pull.cu, written against NCCL 2.28's device API
 * instead of pkb's symmetric memory. pkb_init allocates a buffer with
 * ncclMemAlloc, registers it as a symmetric window on ctx->nccl_comm and
 * creates a device communicator with one LSA barrier per block; the kernel
 * stages its input in its own window, meets the same block on every rank
 * (ncclLsaBarrierSession), sums the W windows in rank order through
 * ncclGetLsaPointer, and meets again before the window may be reused. No
 * host collective is called: the loader refuses any under this backend.
 * pkb-backend: nccl-device
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <nccl.h>
#include <nccl_device.h>
#include "pkb.h"
#include "pkb_device.cuh"   /* defines: pkb_to_float, pkb_from_float */

PKB_SOLUTION;

#ifndef THREADS
#define THREADS 512
#endif
#define BLOCKS 32     /* = LSA barriers asked for */

struct state {
	void *buf;
	ncclWindow_t win;
	ncclDevComm dev;
};

template <typename T>
__global__ void __launch_bounds__(THREADS)
allreduce_lsa(ncclWindow_t win, ncclDevComm dev, const T *in, T *out, int64_t n)
{
	ncclLsaBarrierSession<ncclCoopCta> bar(ncclCoopCta(), dev, ncclTeamTagLsa(), blockIdx.x);
	int64_t per = (n + gridDim.x - 1) / gridDim.x;
	int64_t i0 = min(n, per * blockIdx.x), i1 = min(n, i0 + per);
	T *mine = (T *)ncclGetLsaPointer(win, 0, dev.lsaRank);
	for (int64_t i = i0 + threadIdx.x; i < i1; i += blockDim.x)
		mine[i] = in[i];
	bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
	for (int64_t i = i0 + threadIdx.x; i < i1; i += blockDim.x) {
		float acc = 0.f;
		for (int r = 0; r < dev.lsaSize; r++)
			acc += pkb_to_float(((const T *)ncclGetLsaPointer(win, 0, r))[i]);
		out[i] = pkb_from_float<T>(acc);
	}
	/* every peer has read this block's range of our window */
	bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s || !ctx->nccl_comm)
		return 1;
	ctx->user = s;
	ncclComm_t comm = (ncclComm_t)ctx->nccl_comm;
	if (ncclMemAlloc(&s->buf, ctx->in[0].bytes) != ncclSuccess ||
	    ncclCommWindowRegister(comm, s->buf, ctx->in[0].bytes, &s->win,
				   NCCL_WIN_COLL_SYMMETRIC) != ncclSuccess)
		return 1;
	ncclDevCommRequirements reqs;
	memset(&reqs, 0, sizeof reqs);
	reqs.lsaBarrierCount = BLOCKS;
	return ncclDevCommCreate(comm, &reqs, &s->dev) != ncclSuccess;
}

template <typename T>
static void launch(pkb_ctx *ctx, struct state *s)
{
	allreduce_lsa<T><<<BLOCKS, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		s->win, s->dev, (const T *)ctx->in[0].data, (T *)ctx->out[0].data, ctx->in[0].numel);
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
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (!s)
		return 0;
	ncclComm_t comm = (ncclComm_t)ctx->nccl_comm;
	int bad = ncclDevCommDestroy(comm, &s->dev) != ncclSuccess;
	bad |= ncclCommWindowDeregister(comm, s->win) != ncclSuccess;
	bad |= ncclMemFree(s->buf) != ncclSuccess;
	free(s);
	return bad;
}
