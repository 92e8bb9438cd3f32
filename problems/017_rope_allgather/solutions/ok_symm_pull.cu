/*
 * 017_rope_allgather, known-good: RoPE into symmetric memory, then every rank
 * pulls every rank's embedded block into its own outputs.
 *
 * One kernel. Block b owns a fixed range of the B*S local positions on every
 * rank: it embeds q and k at those positions into this rank's symmetric
 * buffer (rounding like torch: each product, then the sum), meets block b of
 * every rank, then copies those positions of every rank r's buffer to output
 * positions r*S + s of each sequence. A last barrier keeps the next call from
 * overwriting the buffer while a peer still reads it.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include <stdlib.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define HDIM 64
#define POS_ELEMS 512   /* 8 heads x 64 */
#define THREADS 256
#define MAX_BLOCKS 256

struct state {
	pkb_symm stage;   /* [2][B*S][512] T: embedded q then k */
};

template <typename T>
__device__ __forceinline__ T rope_at(const T *x, const T *cs, const T *sn, int64_t i)
{
	int d = (int)(i & (HDIM - 1));
	int64_t c = (i / POS_ELEMS) * HDIM + d;
	float xv = pkb_to_float(x[i]);
	float rv = d < HDIM / 2 ? -pkb_to_float(x[i + HDIM / 2]) : pkb_to_float(x[i - HDIM / 2]);
	float t1 = pkb_to_float(pkb_from_float<T>(__fmul_rn(xv, pkb_to_float(cs[c]))));
	float t2 = pkb_to_float(pkb_from_float<T>(__fmul_rn(rv, pkb_to_float(sn[c]))));
	return pkb_from_float<T>(__fadd_rn(t1, t2));
}

/* V: the word used to copy whole position rows (512*sizeof(T) bytes) */
template <typename T, typename V>
__global__ void __launch_bounds__(THREADS)
rope_allgather(pkb_dev_comm comm, const T *q, const T *k, const T *cs, const T *sn,
	       T *const *stage, T *qo, T *ko, int64_t b_count, int64_t s)
{
	int64_t npos = b_count * s, len = npos * POS_ELEMS;
	int64_t per = (npos + gridDim.x - 1) / gridDim.x;
	int64_t p0 = per * blockIdx.x < npos ? per * blockIdx.x : npos;
	int64_t p1 = p0 + per < npos ? p0 + per : npos;
	T *mine = stage[comm.rank];

	for (int64_t i = p0 * POS_ELEMS + threadIdx.x; i < p1 * POS_ELEMS; i += blockDim.x) {
		mine[i] = rope_at(q, cs, sn, i);
		mine[len + i] = rope_at(k, cs, sn, i);
	}
	if (!pkb_barrier_block(comm, blockIdx.x))
		return;

	const int vpr = (int)(POS_ELEMS * sizeof(T) / sizeof(V));
	int64_t ws = (int64_t)comm.world * s;
	int64_t items = (int64_t)comm.world * 2 * (p1 - p0) * vpr;
	for (int64_t it = threadIdx.x; it < items; it += blockDim.x) {
		int64_t kk = it % vpr, row = it / vpr;
		int64_t pos = p0 + row % (p1 - p0), rt = row / (p1 - p0);
		int t = (int)(rt & 1), r = (int)(rt >> 1);
		int64_t b = pos / s, sp = pos - b * s;
		const V *src = (const V *)stage[r] + ((int64_t)t * npos + pos) * vpr;
		V *dst = (V *)(t ? ko : qo) + (b * ws + (int64_t)r * s + sp) * vpr;
		dst[kk] = src[kk];
	}
	pkb_barrier_block(comm, blockIdx.x);   /* peers are done reading ours */
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	if (ctx->world > THREADS)
		return 1;
	return ctx->svc->symm_alloc(ctx, 2 * ctx->in[0].bytes, &s->stage);
}

template <typename T, typename V>
static void launch_v(pkb_ctx *ctx, struct state *s)
{
	int64_t b = ctx->in[0].shape[0], sl = ctx->in[0].shape[1];
	int64_t blocks = b * sl < MAX_BLOCKS ? b * sl : MAX_BLOCKS;
	rope_allgather<T, V><<<(unsigned)blocks, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, (const T *)ctx->in[0].data, (const T *)ctx->in[1].data,
		(const T *)ctx->in[2].data, (const T *)ctx->in[3].data,
		(T *const *)s->stage.peers_dev, (T *)ctx->out[0].data, (T *)ctx->out[1].data,
		b, sl);
}

template <typename T>
static void launch(pkb_ctx *ctx, struct state *s)
{
	uintptr_t a = (uintptr_t)ctx->out[0].data | (uintptr_t)ctx->out[1].data;
	for (int r = 0; r < ctx->world; r++)
		a |= (uintptr_t)s->stage.peers[r];
	if (a % 16 == 0)
		launch_v<T, int4>(ctx, s);
	else
		launch_v<T, T>(ctx, s);
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
	free(ctx->user);
	return 0;
}
