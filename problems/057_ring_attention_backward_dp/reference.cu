/*
 * 057_ring_attention_backward_dp reference: the original's ring backward,
 * NCCL between the ranks, fused flash-attention style backward kernels,
 * then the DP average.
 *
 * D = rowsum(dout * out) once per call (fp32). Then cp ring steps: at step
 * s the rank holds the K, V of CP rank (c - s) mod cp and
 *   - dq: one kernel a 32-query tile walks the held block's keys in tiles
 *     of 32, recomputing P = exp(q k^T scale - lse) and dS = P (dO v^T - D)
 *     in shared memory, dq_tile += dS k; dq = dq + that * scale (fp32);
 *   - dk, dv: one kernel a 32-key tile walks this rank's queries,
 *     dk_tile += dS^T q, dv_tile += P^T dO, and writes block + accumulator
 *     (the accumulator received from rank c-1, as the original adds
 *     block_dk + next_dk) into the fp32 buffer that travels on;
 *   - grouped ncclSend / ncclRecv on a side stream: K, V to c+1 (cp-1
 *     times), and the fp32 dK, dV accumulators to c+1 after every step (cp
 *     times), so that after the last step each block's sum is back at its
 *     owner.
 * The two kernels recompute P instead of sharing it through HBM (as
 * flash-attention's backward does; S^2 probabilities never reach HBM). Why
 * fp32 on the CUDA cores: the original's matmuls are fp32 (no TF32).
 * Finally dq, dk, dv are cast to T, SUM all-reduced in place over the DP
 * pair (a communicator split in init) and halved in T, as the original's
 * all_reduce + div_(2). cp = 1: one local step, no ring.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <nccl.h>
#include <stdint.h>
#include <stdlib.h>
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_ref.cuh"

PKB_SOLUTION;

#define HD 64        /* head_dim */
#define TILE 32      /* queries or keys a tile */
#define NT 128       /* threads: 4 a row of the tile */
#define DP 2
#define THREADS 256

struct state {
	ncclComm_t cp_comm, dp_comm;
	int64_t b, s, heads, x;      /* x = B*S*H*64 */
	int cp, c, p;                /* CP size, cp_idx, dp_idx */
	cudaStream_t side;
	cudaEvent_t start, kv_got, computed, dkv_got;
	void *kv[2];                 /* K, V receive buffers: K then V, x each */
	float *dsum;                 /* D = rowsum(dout * out): (B, H, S) */
	float *dq;                   /* (B, S, H, 64) */
	float *dkv_cur, *dkv_recv;   /* dK then dV, x each: built here, received */
};

/* D[b, h, i] = sum_d dout * out, the original's row_dot (fp32) */
template <typename T>
__global__ void row_dot(const T *dout, const T *out, float *dsum, int s_len, int heads,
			int64_t rows)
{
	for (int64_t r = blockIdx.x * (int64_t)THREADS + threadIdx.x; r < rows;
	     r += (int64_t)gridDim.x * THREADS) {
		int64_t i = r % s_len, h = r / s_len % heads, b = r / s_len / heads;
		const int64_t at = ((b * s_len + i) * heads + h) * HD;
		float acc = 0;
		for (int d = 0; d < HD; d++)
			acc = fmaf(pkb_to_float(dout[at + d]), pkb_to_float(out[at + d]), acc);
		dsum[r] = acc;
	}
}

/* rows [r0, r0 + TILE) of a (B, S, H, 64) tensor, head h, into fp32 rows
 * of shared memory (zeros past s_len) */
template <typename T>
__device__ __forceinline__ void load_tile(float (*dst)[HD + 1], const T *src, int64_t base,
					  int64_t ts, int r0, int s_len)
{
	for (int i = threadIdx.x; i < TILE * HD; i += NT) {
		int r = i / HD, d = i % HD;
		dst[r][d] = r0 + r < s_len ? pkb_to_float(src[base + (r0 + r) * ts + d]) : 0.0f;
	}
}

/*
 * dq of a 32-query tile against the held block's keys: thread (row, sub)
 * scores keys sub, sub+4, ... of each key tile, then accumulates dims sub,
 * sub+4, ... of dS k. dq = (first ? 0 : dq) + that * scale.
 */
template <typename T>
__global__ void __launch_bounds__(NT)
bwd_dq(const T *q, const T *dout, const float *lse, const float *dsum, const T *k, const T *v,
       int s_len, int heads, float scale, int first, float *dq)
{
	__shared__ float qs[TILE][HD + 1], dos[TILE][HD + 1], ks[TILE][HD + 1], vs[TILE][HD + 1];
	__shared__ float dss[TILE][TILE + 1];
	int tid = threadIdx.x, row = tid >> 2, sub = tid & 3;
	int q0 = blockIdx.x * TILE, h = blockIdx.y, b = blockIdx.z, qi = q0 + row;
	int64_t ts = (int64_t)heads * HD, base = (int64_t)b * s_len * ts + (int64_t)h * HD;
	int64_t li = ((int64_t)b * heads + h) * s_len + qi;
	load_tile(qs, q, base, ts, q0, s_len);
	load_tile(dos, dout, base, ts, q0, s_len);
	float lse_r = qi < s_len ? lse[li] : 0.0f, d_r = qi < s_len ? dsum[li] : 0.0f;
	float acc[HD / 4];
#pragma unroll
	for (int i = 0; i < HD / 4; i++)
		acc[i] = 0;
	for (int k0 = 0; k0 < s_len; k0 += TILE) {
		__syncthreads();
		load_tile(ks, k, base, ts, k0, s_len);
		load_tile(vs, v, base, ts, k0, s_len);
		__syncthreads();
#pragma unroll
		for (int i = 0; i < TILE / 4; i++) {
			int kj = sub + 4 * i;
			float sc = 0, dp = 0;
#pragma unroll
			for (int d = 0; d < HD; d++) {
				sc = fmaf(qs[row][d], ks[kj][d], sc);
				dp = fmaf(dos[row][d], vs[kj][d], dp);
			}
			float p = qi < s_len && k0 + kj < s_len ? expf(sc * scale - lse_r) : 0.0f;
			dss[row][kj] = p * (dp - d_r);
		}
		__syncwarp();      /* a row's 4 threads share a warp */
		for (int kj = 0; kj < TILE; kj++) {
			float ds = dss[row][kj];
#pragma unroll
			for (int i = 0; i < HD / 4; i++)
				acc[i] = fmaf(ds, ks[kj][sub + 4 * i], acc[i]);
		}
	}
	if (qi >= s_len)
		return;
#pragma unroll
	for (int i = 0; i < HD / 4; i++) {
		int64_t at = base + qi * ts + sub + 4 * i;
		float blk = acc[i] * scale;
		dq[at] = first ? blk : dq[at] + blk;
	}
}

/*
 * dk, dv of a 32-key tile of the held block against this rank's queries:
 * thread (row = key, sub) scores queries sub, sub+4, ..., then accumulates
 * dims sub, sub+4, ... of dS^T q and P^T dO. Writes block + acc_in (acc_in
 * NULL: the block alone) to dkv: dK at [0, x), dV at [x, 2x).
 */
template <typename T>
__global__ void __launch_bounds__(NT)
bwd_dkv(const T *q, const T *dout, const float *lse, const float *dsum, const T *k, const T *v,
	int s_len, int heads, float scale, int64_t x, const float *acc_in, float *dkv)
{
	__shared__ float ks[TILE][HD + 1], vs[TILE][HD + 1], qs[TILE][HD + 1], dos[TILE][HD + 1];
	__shared__ float pt[TILE][TILE + 1], dst[TILE][TILE + 1], lse_s[TILE], d_s[TILE];
	int tid = threadIdx.x, row = tid >> 2, sub = tid & 3;
	int k0 = blockIdx.x * TILE, h = blockIdx.y, b = blockIdx.z, kj = k0 + row;
	int64_t ts = (int64_t)heads * HD, base = (int64_t)b * s_len * ts + (int64_t)h * HD;
	int64_t lbase = ((int64_t)b * heads + h) * s_len;
	load_tile(ks, k, base, ts, k0, s_len);
	load_tile(vs, v, base, ts, k0, s_len);
	float gk[HD / 4], gv[HD / 4];
#pragma unroll
	for (int i = 0; i < HD / 4; i++)
		gk[i] = gv[i] = 0;
	for (int q0 = 0; q0 < s_len; q0 += TILE) {
		__syncthreads();
		load_tile(qs, q, base, ts, q0, s_len);
		load_tile(dos, dout, base, ts, q0, s_len);
		if (tid < TILE) {
			lse_s[tid] = q0 + tid < s_len ? lse[lbase + q0 + tid] : 0.0f;
			d_s[tid] = q0 + tid < s_len ? dsum[lbase + q0 + tid] : 0.0f;
		}
		__syncthreads();
#pragma unroll
		for (int i = 0; i < TILE / 4; i++) {
			int qj = sub + 4 * i;
			float sc = 0, dp = 0;
#pragma unroll
			for (int d = 0; d < HD; d++) {
				sc = fmaf(qs[qj][d], ks[row][d], sc);
				dp = fmaf(dos[qj][d], vs[row][d], dp);
			}
			float p = kj < s_len && q0 + qj < s_len ? expf(sc * scale - lse_s[qj]) : 0.0f;
			pt[row][qj] = p;
			dst[row][qj] = p * (dp - d_s[qj]);
		}
		__syncwarp();
		for (int qj = 0; qj < TILE; qj++) {
			float p = pt[row][qj], ds = dst[row][qj];
#pragma unroll
			for (int i = 0; i < HD / 4; i++) {
				gv[i] = fmaf(p, dos[qj][sub + 4 * i], gv[i]);
				gk[i] = fmaf(ds, qs[qj][sub + 4 * i], gk[i]);
			}
		}
	}
	if (kj >= s_len)
		return;
#pragma unroll
	for (int i = 0; i < HD / 4; i++) {
		int64_t at = base + kj * ts + sub + 4 * i;
		float bk = gk[i] * scale, bv = gv[i];
		dkv[at] = acc_in ? bk + acc_in[at] : bk;
		dkv[x + at] = acc_in ? bv + acc_in[x + at] : bv;
	}
}

/* dq, dk, dv in fp32 to T */
template <typename T>
__global__ void finish(const float *dq, const float *dkv, int64_t x, T *gq, T *gk, T *gv)
{
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < x;
	     i += (int64_t)gridDim.x * THREADS) {
		gq[i] = pkb_from_float<T>(dq[i]);
		gk[i] = pkb_from_float<T>(dkv[i]);
		gv[i] = pkb_from_float<T>(dkv[x + i]);
	}
}

/* g = T(g / 2), the original's div_(dp_size) in T */
template <typename T>
__global__ void halve(T *gq, T *gk, T *gv, int64_t x)
{
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < x;
	     i += (int64_t)gridDim.x * THREADS) {
		gq[i] = pkb_from_float<T>(pkb_to_float(gq[i]) * 0.5f);
		gk[i] = pkb_from_float<T>(pkb_to_float(gk[i]) * 0.5f);
		gv[i] = pkb_from_float<T>(pkb_to_float(gv[i]) * 0.5f);
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	PKB_CK(pkb_ref_float_dtype(ctx, ctx->in[0].dtype));
	if (ctx->world % DP)
		return 1;
	struct state *s;
	PKB_CK(pkb_ref_state(ctx, &s));
	s->b = ctx->in[1].shape[0];
	s->s = ctx->in[1].shape[1];
	s->heads = ctx->in[1].shape[2];
	s->x = ctx->in[1].numel;
	s->cp = ctx->world / DP;
	s->c = ctx->rank % s->cp;
	s->p = ctx->rank / s->cp;
	size_t e = pkb_dtype_size(ctx->in[1].dtype);
	ncclComm_t world = (ncclComm_t)ctx->nccl_comm;
	/* colour = the replica (CP ring) or the cp_idx (DP pair), key = the
	 * rank inside it */
	PKB_CK_NCCL(ctx, ncclCommSplit(world, s->p, s->c, &s->cp_comm, NULL));
	PKB_CK_NCCL(ctx, ncclCommSplit(world, s->c, s->p, &s->dp_comm, NULL));
	PKB_CK_CUDA(ctx, cudaStreamCreateWithFlags(&s->side, cudaStreamNonBlocking));
	cudaEvent_t *ev[] = { &s->start, &s->kv_got, &s->computed, &s->dkv_got };
	for (int i = 0; i < 4; i++)
		PKB_CK_CUDA(ctx, cudaEventCreateWithFlags(ev[i], cudaEventDisableTiming));
	for (int i = 0; i < 2; i++)
		PKB_CK_CUDA(ctx, cudaMalloc(&s->kv[i], 2 * s->x * e));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->dsum, s->x / HD * sizeof(float)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->dq, s->x * sizeof(float)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->dkv_cur, 2 * s->x * sizeof(float)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->dkv_recv, 2 * s->x * sizeof(float)));
	return 0;
}

template <typename T>
static int launch(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	ncclDataType_t nt;
	PKB_CK(pkb_ref_nccl_type(ctx, ctx->in[1].dtype, &nt));
	const T *dout = (const T *)ctx->in[0].data, *q = (const T *)ctx->in[1].data;
	const T *ck = (const T *)ctx->in[2].data, *cv = (const T *)ctx->in[3].data;
	const T *out = (const T *)ctx->in[4].data;
	const float *lse = (const float *)ctx->in[5].data;
	T *gq = (T *)ctx->out[0].data, *gk = (T *)ctx->out[1].data, *gv = (T *)ctx->out[2].data;
	float scale = (float)pkb_param_get(ctx, "softmax_scale", 0.125);
	int cp = s->cp, next = (s->c + 1) % cp, prev = (s->c + cp - 1) % cp;
	int64_t x = s->x;
	dim3 grid((unsigned)((s->s + TILE - 1) / TILE), (unsigned)s->heads, (unsigned)s->b);

	row_dot<T><<<pkb_ref_blocks(x / HD, THREADS, 1024), THREADS, 0, st>>>(
		dout, out, s->dsum, (int)s->s, (int)s->heads, x / HD);
	PKB_CK_LAUNCH(ctx);
	PKB_CK_CUDA(ctx, cudaEventRecord(s->start, st));
	PKB_CK_CUDA(ctx, cudaStreamWaitEvent(s->side, s->start, 0));
	for (int step = 0; step < cp; step++) {
		T *nk = NULL, *nv = NULL;
		if (step + 1 < cp) {
			/* the side stream waited for the last step's kernels, which
			 * read this buffer, before the last dK, dV exchange */
			nk = (T *)s->kv[step % 2];
			nv = nk + x;
			PKB_CK_NCCL(ctx, ncclGroupStart());
			PKB_CK_NCCL(ctx, ncclSend(ck, x, nt, next, s->cp_comm, s->side));
			PKB_CK_NCCL(ctx, ncclSend(cv, x, nt, next, s->cp_comm, s->side));
			PKB_CK_NCCL(ctx, ncclRecv(nk, x, nt, prev, s->cp_comm, s->side));
			PKB_CK_NCCL(ctx, ncclRecv(nv, x, nt, prev, s->cp_comm, s->side));
			PKB_CK_NCCL(ctx, ncclGroupEnd());
			PKB_CK_CUDA(ctx, cudaEventRecord(s->kv_got, s->side));
		}
		/* the accumulator from rank c-1 is in, and ours has left */
		if (step > 0)
			PKB_CK_CUDA(ctx, cudaStreamWaitEvent(st, s->dkv_got, 0));
		bwd_dq<T><<<grid, NT, 0, st>>>(q, dout, lse, s->dsum, ck, cv, (int)s->s,
					       (int)s->heads, scale, step == 0, s->dq);
		PKB_CK_LAUNCH(ctx);
		bwd_dkv<T><<<grid, NT, 0, st>>>(q, dout, lse, s->dsum, ck, cv, (int)s->s,
						(int)s->heads, scale, x,
						step > 0 ? s->dkv_recv : NULL, s->dkv_cur);
		PKB_CK_LAUNCH(ctx);
		if (cp > 1) {
			PKB_CK_CUDA(ctx, cudaEventRecord(s->computed, st));
			PKB_CK_CUDA(ctx, cudaStreamWaitEvent(s->side, s->computed, 0));
			PKB_CK_NCCL(ctx, ncclGroupStart());
			PKB_CK_NCCL(ctx, ncclSend(s->dkv_cur, 2 * x, ncclFloat32, next, s->cp_comm,
						  s->side));
			PKB_CK_NCCL(ctx, ncclRecv(s->dkv_recv, 2 * x, ncclFloat32, prev, s->cp_comm,
						  s->side));
			PKB_CK_NCCL(ctx, ncclGroupEnd());
			PKB_CK_CUDA(ctx, cudaEventRecord(s->dkv_got, s->side));
		}
		if (step + 1 < cp) {
			PKB_CK_CUDA(ctx, cudaStreamWaitEvent(st, s->kv_got, 0));
			ck = nk;
			cv = nv;
		}
	}
	/* after cp exchanges each block's dK, dV sum is back at its owner */
	if (cp > 1)
		PKB_CK_CUDA(ctx, cudaStreamWaitEvent(st, s->dkv_got, 0));
	finish<T><<<pkb_ref_blocks(x, THREADS, 2048), THREADS, 0, st>>>(
		s->dq, cp > 1 ? s->dkv_recv : s->dkv_cur, x, gq, gk, gv);
	PKB_CK_LAUNCH(ctx);
	PKB_CK_NCCL(ctx, ncclGroupStart());
	PKB_CK_NCCL(ctx, ncclAllReduce(gq, gq, x, nt, ncclSum, s->dp_comm, st));
	PKB_CK_NCCL(ctx, ncclAllReduce(gk, gk, x, nt, ncclSum, s->dp_comm, st));
	PKB_CK_NCCL(ctx, ncclAllReduce(gv, gv, x, nt, ncclSum, s->dp_comm, st));
	PKB_CK_NCCL(ctx, ncclGroupEnd());
	halve<T><<<pkb_ref_blocks(x, THREADS, 2048), THREADS, 0, st>>>(gq, gk, gv, x);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	return PKB_REF_FLOAT_CALL(ctx->in[1].dtype, launch, ctx, (struct state *)ctx->user);
}

static void release(struct state *s)
{
	if (s->side) {
		cudaStreamSynchronize(s->side);
		cudaStreamDestroy(s->side);
	}
	cudaEvent_t ev[] = { s->start, s->kv_got, s->computed, s->dkv_got };
	for (int i = 0; i < 4; i++)
		if (ev[i])
			cudaEventDestroy(ev[i]);
	if (s->cp_comm)
		ncclCommDestroy(s->cp_comm);
	if (s->dp_comm)
		ncclCommDestroy(s->dp_comm);
	void *bufs[] = { s->kv[0], s->kv[1], s->dsum, s->dq, s->dkv_cur, s->dkv_recv };
	for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
		cudaFree(bufs[i]);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_ref_fini(ctx, release);
}
