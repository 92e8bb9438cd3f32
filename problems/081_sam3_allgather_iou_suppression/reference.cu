/*
 * 081_sam3_allgather_iou_suppression reference: the original's steps. The
 * local masks and scores are widened to fp32 into this rank's rows of the
 * outputs, and a group of in-place ncclBroadcasts, one per rank, fills the
 * others (torch's all_gather of a list of uneven tensors); the binary masks
 * go through cuBLAS SGEMM for the (n, n) intersections, a row sum gives the
 * areas, one block decides the suppression, and a last kernel overwrites the
 * suppressed masks with -10.
 *
 * Bytes per rank at W = 4, trial 0 (counts 1, 2, 3, 1; n = 7), bf16: it
 * receives up to 6 x 128 KiB of masks -- 7 x 256 KiB fp32 on the wire here,
 * as the original widens before gathering -- and the SGEMM reads the
 * 7 x 256 KiB binary masks.
 */
#include <stdio.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <nccl.h>
#include <cub/block/block_reduce.cuh>
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_ref.cuh"

PKB_SOLUTION;

#define THREADS 256
#define PIXELS (256 * 256)
#define NO_OBJ_LOGIT (-10.f)
#define MAX_WORLD 64

struct state {
	struct pkb_ref_blas blas;
	float *bin;       /* (n, PIXELS) 0/1 */
	float *inter;     /* (n, n) */
	float *area;      /* (n,) */
	int64_t off[MAX_WORLD + 1];
};

template <typename T>
__global__ void widen(const T *x, float *y, int64_t n)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x)
		y[i] = pkb_to_float(x[i]);
}

__global__ void binarize(const float *m, float *b, int64_t n)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x)
		b[i] = m[i] > 0.f ? 1.f : 0.f;
}

/* block per object: its area */
__global__ void __launch_bounds__(THREADS)
areas(const float *b, float *area)
{
	typedef cub::BlockReduce<float, THREADS> reduce;
	__shared__ typename reduce::TempStorage tmp;
	const float *row = b + (int64_t)blockIdx.x * PIXELS;
	float acc = 0.f;
	for (int i = threadIdx.x; i < PIXELS; i += THREADS)
		acc += row[i];
	acc = reduce(tmp).Sum(acc);
	if (threadIdx.x == 0)
		area[blockIdx.x] = acc;
}

/* one thread per object x: suppressed when some pair (x, y) overlaps and
 * cmp(lo_x, lo_y) with lo_y > -1 (the original's triu, both directions) */
__global__ void suppress(const float *inter, const float *area, const int64_t *lo, int n,
			 float thr, int reverse, bool *out)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x;
	if (x >= n)
		return;
	bool s = false;
	for (int y = 0; y < n && n > 1; y++) {
		if (y == x)
			continue;
		int i = x < y ? x : y, j = x < y ? y : x;
		float in = inter[i * n + j];
		float un = __fsub_rn(__fadd_rn(area[i], area[j]), in);
		float iou = __fdiv_rn(in, fmaxf(un, 1.f));
		bool later = reverse ? lo[x] < lo[y] : lo[x] > lo[y];
		if (iou >= thr && later && lo[y] > -1)
			s = true;
	}
	out[x] = s;
}

__global__ void overwrite(float *m, const bool *sup, int64_t n)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x)
		if (sup[i / PIXELS])
			m[i] = NO_OBJ_LOGIT;
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	PKB_CK(pkb_ref_max_world(ctx, MAX_WORLD));
	struct state *s;
	PKB_CK(pkb_ref_float_state(ctx, &s));
	for (int r = 0; r < ctx->world; r++) {
		char name[32];
		snprintf(name, sizeof name, "num_obj_per_gpu_%d", r);
		s->off[r + 1] = s->off[r] + (int64_t)pkb_param_get(ctx, name, 0);
	}
	int64_t n = ctx->out[0].shape[0];
	if (s->off[ctx->world] != n || s->off[ctx->rank + 1] - s->off[ctx->rank] !=
	    ctx->in[0].shape[0]) {
		ctx->svc->log(ctx, "081 reference: counts do not match the shapes");
		return 1;
	}
	PKB_CK(pkb_ref_blas_init(ctx, &s->blas));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->bin, (size_t)n * PIXELS * sizeof(float)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->inter, (size_t)n * n * sizeof(float)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->area, (size_t)n * sizeof(float)));
	return 0;
}

template <typename T>
static int launch(pkb_ctx *ctx, struct state *s, cudaStream_t st, ncclComm_t comm)
{
	int w = ctx->world, r = ctx->rank;
	int64_t n = ctx->out[0].shape[0], c = ctx->in[0].shape[0];
	float *masks = (float *)ctx->out[0].data, *scores = (float *)ctx->out[1].data;
	float thr = (float)pkb_param_get(ctx, "iou_threshold", 0.7);
	int reverse = pkb_param_get(ctx, "reverse", 0) != 0;

	widen<T><<<pkb_ref_blocks(c * PIXELS, THREADS, 1024), THREADS, 0, st>>>(
		(const T *)ctx->in[0].data, masks + s->off[r] * PIXELS, c * PIXELS);
	PKB_CK_LAUNCH(ctx);
	widen<T><<<1, THREADS, 0, st>>>((const T *)ctx->in[1].data, scores + s->off[r], c);
	PKB_CK_LAUNCH(ctx);
	PKB_CK_NCCL(ctx, ncclGroupStart());
	for (int src = 0; src < w; src++) {
		int64_t o = s->off[src], k = s->off[src + 1] - o;
		PKB_CK_NCCL(ctx, ncclBroadcast(masks + o * PIXELS, masks + o * PIXELS,
					       (size_t)(k * PIXELS), ncclFloat32, src, comm, st));
		PKB_CK_NCCL(ctx, ncclBroadcast(scores + o, scores + o, (size_t)k, ncclFloat32, src,
					       comm, st));
	}
	PKB_CK_NCCL(ctx, ncclGroupEnd());

	binarize<<<pkb_ref_blocks(n * PIXELS, THREADS, 2048), THREADS, 0, st>>>(masks, s->bin,
										  n * PIXELS);
	PKB_CK_LAUNCH(ctx);
	/* inter (n, n) = bin (n, P) @ bin (n, P)^T, fp32 without TF32 */
	PKB_CK(pkb_ref_blas_bind(ctx, &s->blas, st));
	PKB_CK(pkb_ref_gemm_rm(ctx, s->blas.h, 0, 1, n, n, PIXELS, 1.0, s->bin, PIXELS, s->bin,
			       PIXELS, 0.0, s->inter, n, PKB_FP32));
	areas<<<(unsigned)n, THREADS, 0, st>>>(s->bin, s->area);
	PKB_CK_LAUNCH(ctx);
	suppress<<<(unsigned)((n + 63) / 64), 64, 0, st>>>(s->inter, s->area,
		(const int64_t *)ctx->in[2].data, (int)n, thr, reverse, (bool *)ctx->out[2].data);
	PKB_CK_LAUNCH(ctx);
	overwrite<<<pkb_ref_blocks(n * PIXELS, THREADS, 2048), THREADS, 0, st>>>(
		masks, (const bool *)ctx->out[2].data, n * PIXELS);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

static void release(struct state *s)
{
	pkb_ref_blas_fini(&s->blas);
	cudaFree(s->bin);
	cudaFree(s->inter);
	cudaFree(s->area);
}

PKB_REF_FLOAT_RUN_FINI(struct state, launch, release)
