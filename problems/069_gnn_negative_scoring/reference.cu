/*
 * 069_gnn_negative_scoring reference: the variable all-gather as the
 * original's all_to_all_single does it -- each rank sends its whole block
 * to every rank, one NCCL group of send/recv pairs (self included) for the
 * positives and for the negatives -- then one block per gathered row:
 * T(sigmoid) of the positive and of every negative, the count of negatives
 * strictly above (the stable descending sort's place of the positive,
 * without sorting). The row counts are exchanged once in init (the
 * original all-reduces them every call: they cannot change within an
 * instance).
 */
#include "pkb_ref.cuh"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define THREADS 256

struct state {
	int64_t *rows, *off, total, k;
	void *pos_all, *neg_all;
};

template <typename T>
__device__ __forceinline__ float sig_t(T x)
{
	/* torch.sigmoid on a T tensor: fp32 math, one rounding to T */
	return pkb_to_float(pkb_from_float<T>(1.f / (1.f + expf(-pkb_to_float(x)))));
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
rank_rows(const T *pos, const T *neg, int64_t k, int64_t *out)
{
	__shared__ int part[THREADS / 32];
	int64_t row = blockIdx.x;
	float p = sig_t(pos[row]);
	int c = 0;
	for (int64_t j = threadIdx.x; j < k; j += THREADS)
		c += sig_t(neg[row * k + j]) > p;
	for (int o = 16; o; o >>= 1)
		c += __shfl_xor_sync(0xffffffffu, c, o);
	if ((threadIdx.x & 31) == 0)
		part[threadIdx.x / 32] = c;
	__syncthreads();
	if (threadIdx.x == 0) {
		int t = 0;
		for (int w = 0; w < THREADS / 32; w++)
			t += part[w];
		out[row] = 1 + t;
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	ncclDataType_t t;
	PKB_CK(pkb_ref_nccl_type(ctx, ctx->in[0].dtype, &t));
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	s->rows = (int64_t *)calloc((size_t)ctx->world, sizeof *s->rows);
	s->off = (int64_t *)calloc((size_t)ctx->world + 1, sizeof *s->off);
	if (!s->rows || !s->off)
		return 1;
	int64_t mine = ctx->in[0].numel;
	if (ctx->svc->host_allgather(ctx, &mine, s->rows, sizeof mine))
		return 1;
	for (int r = 0; r < ctx->world; r++)
		s->off[r + 1] = s->off[r] + s->rows[r];
	s->total = s->off[ctx->world];
	s->k = ctx->in[1].shape[1];
	size_t e = ctx->in[0].bytes / (size_t)mine;
	PKB_CK_CUDA(ctx, cudaMalloc(&s->pos_all, (size_t)s->total * e));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->neg_all, (size_t)(s->total * s->k) * e));
	return s->total == ctx->out[0].numel ? 0 : 1;
}

template <typename T>
static int run(pkb_ctx *ctx, struct state *s, ncclDataType_t t)
{
	ncclComm_t comm = (ncclComm_t)ctx->nccl_comm;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	const T *pos = (const T *)ctx->in[0].data, *neg = (const T *)ctx->in[1].data;
	T *pos_all = (T *)s->pos_all, *neg_all = (T *)s->neg_all;
	size_t n = (size_t)ctx->in[0].numel;
	PKB_CK_NCCL(ctx, ncclGroupStart());
	for (int r = 0; r < ctx->world; r++) {
		PKB_CK_NCCL(ctx, ncclSend(pos, n, t, r, comm, st));
		PKB_CK_NCCL(ctx, ncclRecv(pos_all + s->off[r], (size_t)s->rows[r], t, r, comm, st));
		PKB_CK_NCCL(ctx, ncclSend(neg, n * (size_t)s->k, t, r, comm, st));
		PKB_CK_NCCL(ctx, ncclRecv(neg_all + s->off[r] * s->k, (size_t)(s->rows[r] * s->k), t, r,
					  comm, st));
	}
	PKB_CK_NCCL(ctx, ncclGroupEnd());
	rank_rows<T><<<(unsigned)s->total, THREADS, 0, st>>>(pos_all, neg_all, s->k,
							       (int64_t *)ctx->out[0].data);
	PKB_CK_CUDA(ctx, cudaGetLastError());
	return 0;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	ncclDataType_t t;
	PKB_CK(pkb_ref_nccl_type(ctx, ctx->in[0].dtype, &t));
	switch (ctx->in[0].dtype) {
	case PKB_BF16: return run<__nv_bfloat16>(ctx, s, t);
	case PKB_FP16: return run<__half>(ctx, s, t);
	case PKB_FP32: return run<float>(ctx, s, t);
	default: return 1;
	}
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (s) {
		cudaFree(s->pos_all);
		cudaFree(s->neg_all);
		free(s->rows);
		free(s->off);
		free(s);
	}
	return 0;
}
