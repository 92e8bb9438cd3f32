/*
 * gather_seq.cuh -- the reference of 036 and 038, which is one: the
 * Ulysses all-to-all that gathers the sequence and scatters the heads of x
 * (B, T, runs, W blocks of 512/W values): 036's heads are one run a
 * position (G = 8/W heads of 64), 038's q, k, v three. Each rank's blocks
 * are packed contiguously (swap_blocks: x is (B*T*runs, W) blocks, send
 * (W, B*T*runs)), exchanged (pkb_ref_all_to_all, the block a rank keeps
 * included), then put in sequence order (recv is (W, B) groups of T*runs
 * blocks, out (B, W)). A block is 512*e/W bytes, a multiple of 16: they
 * move in 16-byte units. Included by the two reference.cu files after
 * pkb_ref.cuh; each passes its runs.
 */
#ifndef PKB_GATHER_SEQ_CUH
#define PKB_GATHER_SEQ_CUH

#include "swap_blocks.cuh"   /* defines: swap_blocks, swap */

struct gather_seq {
	void *send, *recv;   /* [W][B][T][runs][512/W] each */
};

/* what: a block, named for the log when it is not a multiple of 16 bytes */
static int gather_seq_init(pkb_ctx *ctx, int64_t runs, const char *what)
{
	struct gather_seq *s;
	PKB_CK(pkb_ref_state(ctx, &s));
	if (ctx->in[0].bytes % (16 * (size_t)ctx->in[0].shape[0] * ctx->in[0].shape[1] * runs *
				ctx->world) != 0) {
		ctx->svc->log(ctx, "%03d reference: %s is not a multiple of 16 bytes",
			      ctx->problem_id, what);
		return 1;
	}
	PKB_CK_CUDA(ctx, cudaMalloc(&s->send, ctx->in[0].bytes));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->recv, ctx->in[0].bytes));
	return 0;
}

static int gather_seq_run(pkb_ctx *ctx, int64_t runs)
{
	struct gather_seq *s = (struct gather_seq *)ctx->user;
	int w = ctx->world;
	int64_t b = ctx->in[0].shape[0], t = ctx->in[0].shape[1];
	size_t chunk = ctx->in[0].bytes / w;
	int64_t ru = (int64_t)(chunk / 16 / (b * t * runs));   /* 16-byte units of a block */

	PKB_CK(swap(ctx, ctx->in[0].data, s->send, b * t * runs, w, ru));
	PKB_CK(pkb_ref_all_to_all(ctx, s->send, s->recv, chunk));
	return swap(ctx, s->recv, ctx->out[0].data, w, b, runs * t * ru);
}

/* pkb_fini: pkb_ref_fini(ctx, gather_seq_release) */
static void gather_seq_release(struct gather_seq *s)
{
	cudaFree(s->send);
	cudaFree(s->recv);
}

#endif /* PKB_GATHER_SEQ_CUH */
