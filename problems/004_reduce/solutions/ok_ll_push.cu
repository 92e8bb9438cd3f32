/*
 * 004_reduce, known-good: one-shot push reduce with flagged lines
 * (include/pkb_ll.cuh, NCCL's "LL" protocol), for small tensors: no barrier.
 *
 * Thread j of the grid on every rank but the root (`dst`) loads line j
 * (8 bytes) of its input, stores it into its own output (a non-root returns
 * its input: the original's quirk) and, beside the round's epoch, into its
 * slot of the root's receive area: one 16-byte NVLink store. Thread j of the
 * root adds, in rank order and in fp32, line j of its own input and of each
 * peer's slot (waiting for each), and rounds once. Each line carries its own
 * flag: one NVLink trip per call, where ok_oneshot_pull.cu pays a barrier's
 * round trip before it reads.
 *
 * The root only receives, so nothing tells a sender that the root finished
 * reading a half of its slot: the root's blocks acknowledge round e-1 into
 * the senders' ack tables as they start round e, and a sender's block waits
 * for the acknowledgement of round e-2 before it writes round e (pkb_ll.cuh).
 * Back to back, that one is long in: the wait is a local load.
 *
 * A line holds 4 bf16/fp16 or 2 fp32 elements. Large tensors take several
 * rounds of one line per thread; they work at any size, but the flags double
 * the bytes sent: past a few hundred KiB ok_oneshot_pull.cu is faster.
 *
 * Traffic: the root receives (W-1) x 2 x M*N*e bytes.
 * Memory: 2 halves x W sources x (grid x THREADS) x 16 bytes.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_ll.cuh"

PKB_SOLUTION;

#ifndef THREADS
#define THREADS 512
#endif
#ifndef MAX_BLOCKS
#define MAX_BLOCKS 264        /* two 512-thread blocks per SM on a 132-SM H200 */
#endif
#define MAX_WORLD 64

template <typename T>
__global__ void __launch_bounds__(THREADS)
reduce_ll(pkb_dev_comm comm, pkb_ll ll, int root, const void *in, void *out, int64_t bytes)
{
	__shared__ int ranks[MAX_WORLD];   /* the root: its senders; the others: the root */
	const int me = comm.rank, w = comm.world;
	if ((int)threadIdx.x < w - 1)
		ranks[threadIdx.x] = me == root ? (root + 1 + threadIdx.x) % w : root;
	const uint32_t e0 = pkb_ll_epochs(ll);   /* also publishes ranks[] */
	const int64_t j = (int64_t)blockIdx.x * THREADS + threadIdx.x;
	const bool live = j < ll.lines;
	bool ok = true;
	for (uint32_t r = 0; r < ll.rounds; r++) {
		const uint32_t e = e0 + r;
		const int64_t i = r * ll.per_round + j;   /* past the end: padding */
		if (me != root) {
			if (!pkb_ll_wait_ack(comm, ll, ranks, 1, e))
				return;
			if (live) {
				uint64_t v = pkb_ll_load(in, bytes, i);
				pkb_ll_put(pkb_ll_line(ll, root, e, me, j), v, e);
				pkb_ll_store(out, bytes, i, v);
			}
		} else {
			pkb_ll_ack(comm, ll, ranks, w - 1, e);   /* round e-1 is read */
			if (live && ok) {
				float acc[8 / sizeof(T)] = {};
				for (int s = 0; s < w && ok; s++) {
					uint64_t v;
					if (s == me)
						v = pkb_ll_load(in, bytes, i);
					else
						ok = pkb_ll_get(comm, pkb_ll_line(ll, me, e, s, j), e, &v);
					if (ok)
						pkb_ll_add<T>(acc, v);
				}
				if (ok)
					pkb_ll_store(out, bytes, i, pkb_ll_pack<T>(acc));
			}
		}
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	if (ctx->world > MAX_WORLD)
		return 1;
	return pkb_ll_init(ctx, ctx->in[0].bytes, ctx->world, THREADS, MAX_BLOCKS);
}

template <typename T>
static void launch(pkb_ctx *ctx, struct pkb_ll_state *s)
{
	reduce_ll<T><<<s->grid, THREADS, 0, (cudaStream_t)ctx->stream>>>(
		ctx->dev, s->ll, (int)pkb_param_get(ctx, "dst", 0), ctx->in[0].data,
		ctx->out[0].data, (int64_t)ctx->in[0].bytes);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct pkb_ll_state *s = (struct pkb_ll_state *)ctx->user;
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
	return pkb_ll_fini(ctx);
}
