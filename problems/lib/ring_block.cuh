/*
 * ring_block.cuh -- 054's ring attention, which 055 and 056 run too: the
 * kernel (one block of keys against this rank's queries, in fp32 on the
 * CUDA cores, merged into a running (out, lse) pair) and the ring around
 * it (struct ring, ring_init, ring_fini, ring_attention: the K, V exchange
 * on a side stream into alternating receive buffers, one kernel a step),
 * and the attention block of 055 and 056 (struct attn_block: the qkv
 * projection, the ring, the output projection). Each reference passes its
 * CP group: communicator, size, position and neighbours. Included by the
 * three reference.cu files after pkb.h, pkb_device.cuh and pkb_ref.cuh.
 */
#ifndef PKB_RING_BLOCK_CUH
#define PKB_RING_BLOCK_CUH

#define HD 64        /* head_dim */
#define QT 32        /* query rows a thread block */
#define KT 32        /* keys a tile */
#define NT 128       /* threads: 4 a query row */

__device__ __forceinline__ float log_sigmoid(float x)
{
	return fminf(x, 0.0f) - log1pf(expf(-fabsf(x)));
}

/*
 * One block of keys against this rank's queries: q (B, S, H, 64), k and v
 * (B, S, H, 64) of the block held; causal masks key j > query i (the
 * diagonal block). first: the running pair is this block's; last: write
 * the merged result to out in T instead of the running pair.
 */
template <typename T>
__global__ void __launch_bounds__(NT)
block_attn(const T *q, const T *k, const T *v, int s_len, int heads, float scale, int causal,
	   int first, int last, float *acc_o, float *acc_lse, T *out)
{
	__shared__ float ks[KT][HD + 1], vs[KT][HD], ps[QT][KT + 1];
	int tid = threadIdx.x, row = tid >> 2, sub = tid & 3;
	int q0 = blockIdx.x * QT, h = blockIdx.y, b = blockIdx.z, qi = q0 + row;
	int64_t ts = (int64_t)heads * HD;          /* elements between tokens */
	int64_t base = (int64_t)b * s_len * ts + (int64_t)h * HD;
	float qr[HD], o[HD / 4], m = -INFINITY, l = 0;
#pragma unroll
	for (int d = 0; d < HD; d++)
		qr[d] = qi < s_len ? pkb_to_float(q[base + qi * ts + d]) : 0.0f;
#pragma unroll
	for (int i = 0; i < HD / 4; i++)
		o[i] = 0;
	/* the diagonal block: keys past the block's last query are all masked */
	int kend = causal ? min(s_len, q0 + QT) : s_len;
	for (int k0 = 0; k0 < kend; k0 += KT) {
		__syncthreads();   /* the last tile's readers are done */
		for (int i = tid; i < KT * HD; i += NT) {
			int r = i / HD, d = i % HD;
			bool in = k0 + r < s_len;
			int64_t at = base + (k0 + r) * ts + d;
			ks[r][d] = in ? pkb_to_float(k[at]) : 0.0f;
			vs[r][d] = in ? pkb_to_float(v[at]) : 0.0f;
		}
		__syncthreads();
		/* scores of keys sub, sub+4, ...: the row's 4 threads split the tile */
		float sc[KT / 4], tmax = -INFINITY;
#pragma unroll
		for (int i = 0; i < KT / 4; i++) {
			int kj = k0 + sub + 4 * i;
			float dot = 0;
#pragma unroll
			for (int d = 0; d < HD; d++)
				dot = fmaf(qr[d], ks[sub + 4 * i][d], dot);
			bool ok = kj < s_len && (!causal || kj <= qi);
			sc[i] = ok ? dot * scale : -INFINITY;
			tmax = fmaxf(tmax, sc[i]);
		}
		tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 1));
		tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 2));
		float mnew = fmaxf(m, tmax);
		/* rescale what the earlier tiles summed to the new max */
		float alpha = mnew == -INFINITY ? 1.0f : expf(m - mnew), psum = 0;
#pragma unroll
		for (int i = 0; i < KT / 4; i++) {
			float p = sc[i] == -INFINITY ? 0.0f : expf(sc[i] - mnew);
			ps[row][sub + 4 * i] = p;
			psum += p;
		}
		psum += __shfl_xor_sync(0xffffffffu, psum, 1);
		psum += __shfl_xor_sync(0xffffffffu, psum, 2);
		l = l * alpha + psum;
		m = mnew;
		__syncwarp();      /* a row's 4 threads share a warp */
#pragma unroll
		for (int i = 0; i < HD / 4; i++)
			o[i] *= alpha;
		for (int j = 0; j < KT; j++) {
			float p = ps[row][j];
#pragma unroll
			for (int i = 0; i < HD / 4; i++)
				o[i] = fmaf(p, vs[j][sub + 4 * i], o[i]);
		}
	}
	if (qi >= s_len)
		return;
	/* the block's (out, lse), merged as the original merges them */
	float lse_b = m + logf(l), inv = 1.0f / l;
	int64_t at = base + qi * ts, li = ((int64_t)b * heads + h) * s_len + qi;
	float lse = first ? lse_b : acc_lse[li];
	float w = 1.0f / (1.0f + expf(lse - lse_b));      /* sigmoid(lse_b - lse) */
#pragma unroll
	for (int i = 0; i < HD / 4; i++) {
		int d = sub + 4 * i;
		float ob = o[i] * inv, r = ob;
		if (!first) {
			float cur = acc_o[at + d];
			r = cur - w * (cur - ob);
		}
		if (last)
			out[at + d] = pkb_from_float<T>(r);
		else
			acc_o[at + d] = r;
	}
	if (sub == 0 && !last)
		acc_lse[li] = first ? lse_b : lse - log_sigmoid(lse - lse_b);
}

/* ---- the ring ---------------------------------------------------------------- */

struct ring {
	int64_t b, s, heads, x;      /* x = B*S*heads*64, one of q, k, v */
	cudaStream_t side;
	cudaEvent_t start, got, used, joined;
	void *kv[2];                 /* receive buffers: K then V, x each */
	float *acc_o, *acc_lse;      /* running (out, lse): (B, S, H, 64), (B, H, S) */
};

/* the ring of q, k, v (b, s, heads, 64) in elements of e bytes */
static int ring_init(pkb_ctx *ctx, struct ring *r, int64_t b, int64_t s, int64_t heads,
		     size_t e)
{
	r->b = b;
	r->s = s;
	r->heads = heads;
	r->x = b * s * heads * HD;
	PKB_CK_CUDA(ctx, cudaStreamCreateWithFlags(&r->side, cudaStreamNonBlocking));
	PKB_CK_CUDA(ctx, cudaEventCreateWithFlags(&r->start, cudaEventDisableTiming));
	PKB_CK_CUDA(ctx, cudaEventCreateWithFlags(&r->got, cudaEventDisableTiming));
	PKB_CK_CUDA(ctx, cudaEventCreateWithFlags(&r->used, cudaEventDisableTiming));
	PKB_CK_CUDA(ctx, cudaEventCreateWithFlags(&r->joined, cudaEventDisableTiming));
	for (int i = 0; i < 2; i++)
		PKB_CK_CUDA(ctx, cudaMalloc(&r->kv[i], 2 * r->x * e));
	PKB_CK_CUDA(ctx, cudaMalloc(&r->acc_o, r->x * sizeof(float)));
	PKB_CK_CUDA(ctx, cudaMalloc(&r->acc_lse, r->x / HD * sizeof(float)));
	return 0;
}

static void ring_fini(struct ring *r)
{
	if (r->side) {
		cudaStreamSynchronize(r->side);
		cudaStreamDestroy(r->side);
	}
	cudaEvent_t ev[] = { r->start, r->got, r->used, r->joined };
	for (int i = 0; i < 4; i++)
		if (ev[i])
			cudaEventDestroy(ev[i]);
	cudaFree(r->kv[0]);
	cudaFree(r->kv[1]);
	cudaFree(r->acc_o);
	cudaFree(r->acc_lse);
}

/*
 * Ring attention of q over the CP group's (k, v) into out: cp - 1 steps of
 * grouped ncclSend / ncclRecv on comm (K and V to next, from prev: ranks of
 * comm) on the side stream, overlapped with the attention of the block the
 * rank holds; rank: this rank's place in the group (causal: the last step
 * it uses).
 */
template <typename T>
static int ring_attention(pkb_ctx *ctx, struct ring *r, ncclComm_t comm, int cp, int rank,
			  int next, int prev, const T *q, const T *ck, const T *cv, T *out)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	ncclDataType_t nt;
	PKB_CK(pkb_ref_nccl_type(ctx, ctx->in[0].dtype, &nt));
	float scale = (float)pkb_param_get(ctx, "softmax_scale", 0.125);
	int causal = (int)pkb_param_get(ctx, "causal", 1);
	dim3 grid((unsigned)((r->s + QT - 1) / QT), (unsigned)r->heads, (unsigned)r->b);
	int last_used = causal ? rank : cp - 1;

	/* the side stream starts after the inputs and the last call's reads */
	PKB_CK_CUDA(ctx, cudaEventRecord(r->start, st));
	PKB_CK_CUDA(ctx, cudaStreamWaitEvent(r->side, r->start, 0));
	for (int step = 0; step < cp; step++) {
		T *nk = NULL, *nv = NULL;
		if (step + 1 < cp) {
			nk = (T *)r->kv[step % 2];
			nv = nk + r->x;
			/* that buffer was read by the last step's attention */
			if (step >= 2)
				PKB_CK_CUDA(ctx, cudaStreamWaitEvent(r->side, r->used, 0));
			PKB_CK_NCCL(ctx, ncclGroupStart());
			PKB_CK_NCCL(ctx, ncclSend(ck, r->x, nt, next, comm, r->side));
			PKB_CK_NCCL(ctx, ncclSend(cv, r->x, nt, next, comm, r->side));
			PKB_CK_NCCL(ctx, ncclRecv(nk, r->x, nt, prev, comm, r->side));
			PKB_CK_NCCL(ctx, ncclRecv(nv, r->x, nt, prev, comm, r->side));
			PKB_CK_NCCL(ctx, ncclGroupEnd());
			PKB_CK_CUDA(ctx, cudaEventRecord(r->got, r->side));
		}
		if (!causal || step <= rank) {
			block_attn<T><<<grid, NT, 0, st>>>(q, ck, cv, (int)r->s, (int)r->heads, scale,
							 causal && step == 0, step == 0,
							 step == last_used, r->acc_o, r->acc_lse, out);
			PKB_CK_LAUNCH(ctx);
		}
		if (step + 1 < cp) {
			PKB_CK_CUDA(ctx, cudaEventRecord(r->used, st));
			PKB_CK_CUDA(ctx, cudaStreamWaitEvent(st, r->got, 0));
			ck = nk;
			cv = nv;
		}
	}
	/* join: the last sends have left the buffers before the next call */
	PKB_CK_CUDA(ctx, cudaEventRecord(r->joined, r->side));
	PKB_CK_CUDA(ctx, cudaStreamWaitEvent(st, r->joined, 0));
	return 0;
}

/* ---- 055/056's attention block ------------------------------------------------ */

/*
 * On x (B*S, hidden): q, k, v = one strided-batched GEMM (batch 3) of x
 * against the three slabs of w_qkv (input 1), rounded to T (the original's
 * F.linear viewed (B, S, 3, heads, 64) and .contiguous() per tensor); ring
 * attention of q over the CP group's (k, v) into ctx; out = ctx w_o^T
 * (input 2).
 */
struct attn_block {
	struct pkb_ref_blas blas;
	struct ring ring;            /* over the CP group */
	void *qkv;                   /* q, k, v: (B*S, heads*64) each */
	void *ctx;                   /* (B*S, heads*64) */
};

/* hidden_states (B, S, hidden) is input 0; heads: this rank's slab of w_qkv */
static int attn_block_init(pkb_ctx *ctx, struct attn_block *a, size_t e)
{
	PKB_CK(pkb_ref_blas_init(ctx, &a->blas));
	PKB_CK(ring_init(ctx, &a->ring, ctx->in[0].shape[0], ctx->in[0].shape[1],
			 ctx->in[1].shape[0] / 3 / HD, e));
	PKB_CK_CUDA(ctx, cudaMalloc(&a->qkv, 3 * a->ring.x * e));
	PKB_CK_CUDA(ctx, cudaMalloc(&a->ctx, a->ring.x * e));
	return 0;
}

static void attn_block_fini(struct attn_block *a)
{
	ring_fini(&a->ring);
	pkb_ref_blas_fini(&a->blas);
	cudaFree(a->qkv);
	cudaFree(a->ctx);
}

template <typename T>
static int attn_block_run(pkb_ctx *ctx, struct attn_block *a, const void *x, int64_t hidden,
			  ncclComm_t comm, int cp, int c, int next, int prev, void *out)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	pkb_dtype dt = ctx->in[0].dtype;
	int64_t bs = a->ring.b * a->ring.s, local = a->ring.heads * HD;
	T *q = (T *)a->qkv, *k = q + a->ring.x, *v = k + a->ring.x;
	PKB_CK(pkb_ref_blas_bind(ctx, &a->blas, st));
	PKB_CK(pkb_ref_gemm_rm_batched(ctx, a->blas.h, 0, 1, bs, local, hidden, 1.0, x, hidden, 0,
				       ctx->in[1].data, hidden, local * hidden, 0.0, q, local,
				       a->ring.x, 3, dt));
	PKB_CK(ring_attention<T>(ctx, &a->ring, comm, cp, c, next, prev, q, k, v, (T *)a->ctx));
	PKB_CK(pkb_ref_gemm_rm(ctx, a->blas.h, 0, 1, bs, hidden, local, 1.0, a->ctx, local,
			       ctx->in[2].data, local, 0.0, out, hidden, dt));
	return 0;
}

#endif /* PKB_RING_BLOCK_CUH */
