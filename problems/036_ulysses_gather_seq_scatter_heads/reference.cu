/*
 * 036_ulysses_gather_seq_scatter_heads reference: what torch does -- pack
 * each head group contiguously (tensor_split along heads + .contiguous()),
 * one grouped ncclSend/ncclRecv per peer (all_to_all, the group a rank keeps
 * included), then concatenate along the sequence (torch.cat(dim=1)):
 *     send[d][b, t]   = x[b, t, d*G : (d+1)*G, :]     (W, B, T, G, 64)
 *     recv[j]         = send_j[r]                      from rank j
 *     out[b, j*T + t] = recv[j][b, t]                  (B, W*T, G, 64)
 * Both rearrangements swap two dimensions of an array of equal blocks:
 * x is (B*T, W) head groups, send (W, B*T); recv is (W, B) blocks of T
 * positions, out (B, W). A head group is G*64*e = 512*e/W bytes, a
 * multiple of 16, so they move in 16-byte units.
 *
 * Bytes each rank must receive: (W-1)/W * B*T*512*e, 192 KiB at
 * M = N = 1024, bf16, W = 4.
 */
#include <cuda_runtime.h>
#include <nccl.h>
#include "pkb.h"
#include "pkb_ref.cuh"

PKB_SOLUTION;

#define THREADS 256

struct state {
	void *send, *recv;   /* [W][B][T][G][64] each */
};

/* dst (Q, P) blocks = src (P, Q) blocks transposed, blocks of blk units */
__global__ void swap_blocks(const int4 *src, int4 *dst, int64_t p_n, int64_t q_n, int64_t blk)
{
	int64_t n = p_n * q_n * blk;
	for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < n;
	     o += (int64_t)gridDim.x * blockDim.x) {
		int64_t j = o / blk, c = o - j * blk;
		int64_t q = j / p_n, p = j - q * p_n;
		dst[o] = src[(p * q_n + q) * blk + c];
	}
}

static int swap(pkb_ctx *ctx, const void *src, void *dst, int64_t p_n, int64_t q_n, int64_t blk)
{
	int64_t n = p_n * q_n * blk;
	swap_blocks<<<pkb_ref_blocks(n, THREADS, 4096), THREADS, 0, (cudaStream_t)ctx->stream>>>(
		(const int4 *)src, (int4 *)dst, p_n, q_n, blk);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s;
	PKB_CK(pkb_ref_state(ctx, &s));
	if (ctx->in[0].bytes % (16 * (size_t)ctx->in[0].shape[0] * ctx->in[0].shape[1] *
				ctx->world) != 0) {
		ctx->svc->log(ctx, "036 reference: a head group is not a multiple of 16 bytes");
		return 1;
	}
	PKB_CK_CUDA(ctx, cudaMalloc(&s->send, ctx->in[0].bytes));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->recv, ctx->in[0].bytes));
	return 0;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	ncclComm_t comm = (ncclComm_t)ctx->nccl_comm;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	int me = ctx->rank, w = ctx->world;
	int64_t b = ctx->in[0].shape[0], t = ctx->in[0].shape[1];
	size_t chunk = ctx->in[0].bytes / w;
	int64_t ru = (int64_t)(chunk / 16 / (b * t));   /* 16-byte units of a head group */

	PKB_CK(swap(ctx, ctx->in[0].data, s->send, b * t, w, ru));
	char *send = (char *)s->send, *recv = (char *)s->recv;
	ncclResult_t r = ncclGroupStart();
	for (int k = 0; k < w && r == ncclSuccess; k++) {
		/* pair up with rank me+k sending and me-k receiving: every step is
		   a permutation, so no rank is flooded */
		int to = (me + k) % w, from = (me - k + w) % w;
		r = ncclSend(send + to * chunk, chunk, ncclUint8, to, comm, st);
		if (r == ncclSuccess)
			r = ncclRecv(recv + from * chunk, chunk, ncclUint8, from, comm, st);
	}
	ncclResult_t e = ncclGroupEnd();
	if (r == ncclSuccess)
		r = e;
	if (r != ncclSuccess) {
		ctx->svc->log(ctx, "all-to-all send/recv: %s", ncclGetErrorString(r));
		return 1;
	}
	return swap(ctx, s->recv, ctx->out[0].data, w, b, t * ru);
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
