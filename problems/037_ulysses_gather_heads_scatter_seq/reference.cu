/*
 * 037_ulysses_gather_heads_scatter_seq reference: what torch does -- pad the
 * sequence with zeros to Tp = W*S and pack each chunk of S positions
 * contiguously (_pad_tensor, tensor_split along the sequence +
 * .contiguous(), one kernel here), one grouped ncclSend/ncclRecv per peer
 * (all_to_all, the chunk a rank keeps included), then concatenate along
 * the heads (torch.cat(dim=2)):
 *     send[d][b, t]    = x[b, d*S + t]  (0 past T)    (W, B, S, 8, 64)
 *     recv[j]          = send_j[r]                     from rank j
 *     out[b, t, 8j: ]  = recv[j][b, t]                 (B, S, 8W, 64)
 * The concatenation swaps two dimensions of an array of positions: recv is
 * (W, B*S) positions, out (B*S, W). A position is 512*e bytes, so they move
 * in 16-byte units.
 *
 * Bytes each rank receives: (W-1) * B*S*512*e, 192 KiB at M = N = 1024,
 * bf16, W = 4 (the padding travels too, as in the original).
 */
#include <cuda_runtime.h>
#include <nccl.h>
#include "pkb.h"
#include "pkb_ref.cuh"

PKB_SOLUTION;

#define THREADS 256

struct state {
	void *send, *recv;   /* [W][B][S][8][64] each */
	size_t chunk;        /* bytes of one chunk: B*S positions */
};

/* send unit o: chunk d, sequence b, position t of the chunk, unit c of the
 * position (pu units each); zero past the T real positions */
__global__ void pack_padded(const int4 *x, int4 *send, int64_t b_n, int64_t t_n, int64_t s_n,
			    int w, int64_t pu)
{
	int64_t n = w * b_n * s_n * pu;
	for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < n;
	     o += (int64_t)gridDim.x * blockDim.x) {
		int64_t j = o / pu, c = o - j * pu;
		int64_t d = j / (b_n * s_n), rem = j - d * b_n * s_n;
		int64_t b = rem / s_n, pos = d * s_n + (rem - b * s_n);
		send[o] = pos < t_n ? x[(b * t_n + pos) * pu + c] : make_int4(0, 0, 0, 0);
	}
}

#include "swap_blocks.cuh"   /* defines: swap_blocks, swap */

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s;
	PKB_CK(pkb_ref_state(ctx, &s));
	s->chunk = ctx->out[0].bytes / ctx->world;
	PKB_CK_CUDA(ctx, cudaMalloc(&s->send, ctx->out[0].bytes));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->recv, ctx->out[0].bytes));
	return 0;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	int w = ctx->world;
	int64_t b = ctx->in[0].shape[0], t = ctx->in[0].shape[1], sl = ctx->out[0].shape[1];
	/* a position, 8*64 elements, in 16-byte units */
	int64_t pu = ctx->in[0].shape[2] * ctx->in[0].shape[3] *
		     (int64_t)pkb_dtype_size(ctx->in[0].dtype) / 16;
	int64_t n = w * b * sl * pu;

	pack_padded<<<pkb_ref_blocks(n, THREADS, 4096), THREADS, 0, st>>>(
		(const int4 *)ctx->in[0].data, (int4 *)s->send, b, t, sl, w, pu);
	PKB_CK_LAUNCH(ctx);
	PKB_CK(pkb_ref_all_to_all(ctx, s->send, s->recv, s->chunk));
	swap_blocks<<<pkb_ref_blocks(n, THREADS, 4096), THREADS, 0, st>>>(
		(const int4 *)s->recv, (int4 *)ctx->out[0].data, w, b * sl, pu);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

static void release(struct state *s)
{
	cudaFree(s->send);
	cudaFree(s->recv);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_ref_fini(ctx, release);
}
