/*
 * 033_ulysses_all_to_all_tensor_primitive reference: what torch does -- one
 * grouped ncclSend/ncclRecv per peer (the all_to_all of the W row chunks,
 * each contiguous in x, the chunk a rank keeps included) into a scratch
 * buffer of W chunks, then one kernel that concatenates them along the
 * columns (torch.cat(dim=1)):
 *     recv[j] = x_j[r*M/W : (r+1)*M/W]          (M/W, N) each
 *     out[i, j*N + c] = recv[j][i, c]            out (M/W, W*N)
 *
 * Bytes each rank must receive: (W-1)/W * M*N*e, 1.5 MiB at M = N = 1024,
 * bf16, W = 4.
 */
#include <cuda_runtime.h>
#include <nccl.h>
#include "pkb.h"
#include "pkb_copy.cuh"
#include "pkb_ref.cuh"

PKB_SOLUTION;

#define THREADS 256

struct state {
	void *recv;   /* [W][M/W][N]: chunk j from rank j */
};

/* out unit o: row i, chunk j, unit c of the row (upr units per row of N) */
template <typename U>
__global__ void concat_cols(const U *recv, U *out, int64_t rows, int64_t upr, int world)
{
	int64_t n = rows * world * upr;
	for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < n;
	     o += (int64_t)gridDim.x * blockDim.x) {
		int64_t i = o / (world * upr), rem = o - i * world * upr;
		int64_t j = rem / upr, c = rem - j * upr;
		out[o] = recv[(j * rows + i) * upr + c];
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s;
	PKB_CK(pkb_ref_state(ctx, &s));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->recv, ctx->in[0].bytes));
	return 0;
}

template <int B>
static void launch(pkb_ctx *ctx, struct state *s)
{
	typedef typename pkb_unit<B>::t U;
	int64_t rows = ctx->out[0].shape[0];
	int64_t upr = ctx->in[0].shape[1] * (int64_t)pkb_dtype_size(ctx->in[0].dtype) / B;
	int64_t n = rows * ctx->world * upr;
	concat_cols<U><<<pkb_ref_blocks(n, THREADS, 4096), THREADS, 0, (cudaStream_t)ctx->stream>>>(
		(const U *)s->recv, (U *)ctx->out[0].data, rows, upr, ctx->world);
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	PKB_CK(pkb_ref_all_to_all(ctx, ctx->in[0].data, s->recv, ctx->in[0].bytes / ctx->world));
	/* a row (N*e bytes) is a whole number of units, so is every offset */
	size_t row = (size_t)ctx->in[0].shape[1] * pkb_dtype_size(ctx->in[0].dtype);
	int b = (uintptr_t)ctx->out[0].data % 16 ? 1 : pkb_unit_bytes(row);
	switch (b) {
	case 16: launch<16>(ctx, s); break;
	case 8: launch<8>(ctx, s); break;
	case 4: launch<4>(ctx, s); break;
	case 2: launch<2>(ctx, s); break;
	default: launch<1>(ctx, s); break;
	}
	PKB_CK_LAUNCH(ctx);
	return 0;
}

static void release(struct state *s)
{
	cudaFree(s->recv);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_ref_fini(ctx, release);
}
