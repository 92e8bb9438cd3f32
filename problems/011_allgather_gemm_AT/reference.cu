/*
 * 011_allgather_gemm_AT reference: the original's steps -- transpose the
 * local shard, ncclAllGather the transposes into A^T (K, M), one cuBLAS GEMM.
 *
 * Layout. torch is row-major, cuBLAS column-major, and a row-major (r, c)
 * buffer is the column-major c x r matrix of its transpose. So:
 *   - the gathered buffer G = A^T (K, M) row-major is A as a column-major
 *     M x K matrix with ld M;
 *   - B (K, N) row-major is B^T, column-major N x K, ld N;
 *   - the output C (M, N) row-major is C^T, column-major N x M, ld N.
 * cuBLAS computes C^T = B^T * A^T: first operand B (op N, ld N), second
 * operand op T of G (ld M), m = N, n = M, k = K.
 *
 * Why gather transposes: all_gather_into_tensor concatenates along the first
 * dimension, and the K-shards of A^T are its row blocks, so the gathered
 * buffer is A^T with no reordering; the transpose costs a pass over the
 * local shard (M*K/W elements) instead of one over the gathered A.
 *
 * Traffic: each rank receives (W-1) * M*K/W*e bytes (768 KiB at M = 1024,
 * bf16, W = 4); GEMM 2*M*K*N = 1.07 GFLOP at M = N = 1024.
 */
#include <stdint.h>
#include <stdlib.h>
#include "pkb_ref.cuh"
#include "gemm_ops.cuh"   /* defines: struct gemm_ops, gemm_ops_begin */

PKB_SOLUTION;

struct state {
	struct pkb_ref_blas blas;
	void *at_local;         /* A_local^T (K/W, M) */
	void *at_full;          /* A^T (K, M) = W gathered A_local^T */
};

/* out (cols, rows) = in (rows, cols)^T, 32x32 tiles through shared memory so
 * that both the reads and the writes are coalesced. Row tiles on grid x
 * (M may be large), column tiles on grid y. */
template <typename E>
__global__ void transpose(const E *in, E *out, int64_t rows, int64_t cols)
{
	__shared__ E tile[32][33];
	int64_t r0 = (int64_t)blockIdx.x * 32, c0 = (int64_t)blockIdx.y * 32;
	for (int y = threadIdx.y; y < 32; y += blockDim.y) {
		int64_t r = r0 + y, c = c0 + threadIdx.x;
		if (r < rows && c < cols)
			tile[y][threadIdx.x] = in[r * cols + c];
	}
	__syncthreads();
	for (int y = threadIdx.y; y < 32; y += blockDim.y) {
		int64_t c = c0 + y, r = r0 + threadIdx.x;
		if (r < rows && c < cols)
			out[c * rows + r] = tile[threadIdx.x][y];
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s;
	PKB_CK(pkb_ref_float_state(ctx, &s));
	PKB_CK(pkb_ref_blas_init(ctx, &s->blas));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->at_local, ctx->in[0].bytes));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->at_full, ctx->in[0].bytes * ctx->world));
	return 0;
}

static int run(pkb_ctx *ctx, struct state *s, cudaStream_t st, ncclComm_t comm)
{
	struct gemm_ops g;
	PKB_CK(gemm_ops_begin(ctx, &s->blas, st, &g));
	int64_t m = g.a->shape[0], kl = g.a->shape[1], k = g.b->shape[0], n = g.b->shape[1];

	dim3 tb(32, 8), grid((unsigned)((m + 31) / 32), (unsigned)((kl + 31) / 32));
	if (pkb_dtype_size(g.t) == 2)
		transpose<uint16_t><<<grid, tb, 0, st>>>((const uint16_t *)g.a->data,
							 (uint16_t *)s->at_local, m, kl);
	else
		transpose<uint32_t><<<grid, tb, 0, st>>>((const uint32_t *)g.a->data,
							 (uint32_t *)s->at_local, m, kl);
	PKB_CK_LAUNCH(ctx);

	PKB_CK_NCCL(ctx, ncclAllGather(s->at_local, s->at_full, (size_t)(kl * m), g.nt, comm, st));
	/* out (M, N) = (A^T)^T @ B: A^T is the row-major (K, M) at_full, lda M */
	PKB_CK(pkb_ref_gemm_rm(ctx, s->blas.h, 1, 0, m, n, k, 1.0, s->at_full, m, g.b->data, n,
			       0.0, ctx->out[0].data, n, g.t));
	return 0;
}

static void release(struct state *s)
{
	pkb_ref_blas_fini(&s->blas);
	cudaFree(s->at_local);
	cudaFree(s->at_full);
}

PKB_REF_RUN_FINI(struct state, run, release)
