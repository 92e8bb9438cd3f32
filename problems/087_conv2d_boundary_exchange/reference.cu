/*
 * 087_conv2d_boundary_exchange reference: the halo rows by NCCL
 * point-to-point with the two neighbours, the convolution by cuDNN's graph
 * (backend) API -- the engines PyTorch's conv2d runs on Hopper -- in
 * channels-last layout, fp32 accumulation, then the bias as PyTorch adds
 * it (to the rounded conv, rounded again).
 *
 *   1. x (C, lh, 128) -> rows 1 .. lh of xp (lh+2, 128, C) (NHWC): a row of
 *      xp is then one contiguous run of 128 C elements, what NCCL sends;
 *   2. halo: one NCCL group: row 1 to rank r-1 and row lh to rank r+1, rows
 *      0 and lh+1 from them. Rank 0's row 0 and rank W-1's row lh+1 are
 *      never written: zero since init;
 *   3. weight (K, C, 3, 3) -> KRSC (K, 3, 3, C), per call (it is an input);
 *   4. cuDNN: y (lh, 128, K) = conv(xp, w), padding 0 along H (the halo
 *      rows are there) and 1 along W, stride 1, dilation 1;
 *   5. back to NCHW, + bias in fp32, rounded.
 *
 * The original all-gathers every rank's first and last rows ((W-1) 2 rows
 * received) and keeps two: point-to-point moves just those.
 *
 * The plan: init builds the one-operation graph, asks heuristic mode A for
 * engine configs (the fallback list if none fits), drops engines whose
 * numerical notes change the arithmetic (FFT, Winograd, reduced-precision
 * reduction; at fp32 also tensor cores and down-converted inputs: no
 * TF32), finalizes the first MAX_TRY of the rest, times each on scratch
 * data and keeps the fastest. Its buffers are fixed in init, so the
 * variant pack is too; pkb_run only enqueues. The transpose, the
 * descriptor bookkeeping and the engine filter are 076's too:
 * problems/lib/cudnn_conv.cuh.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cudnn.h>
#include <nccl.h>
#include <stdio.h>
#include <time.h>
#include "pkb.h"
#include "pkb_ref.cuh"
#include "pkb_device.cuh"   /* pkb_to_float, pkb_from_float */
#include "cudnn_conv.cuh"
/* defines: transpose, launch_transpose, scratch_fill, dnn_log, PKB_CK_DNN, dnn_type,
 * struct dnn_owned, dnn_own, dnn_drop, dnn_free_all, dnn_heur_configs, dnn_cfg_ok, now_s,
 * MAX_CFG, MAX_TRY, MAX_WS, SEARCH_S, UID_X, UID_W, UID_Y */

PKB_SOLUTION;

struct state {
	cudnnHandle_t dnn;
	cudnnBackendDescriptor_t graph, plan, vp;
	struct dnn_owned own;          /* every descriptor, in creation order */
	void *ws;
	size_t ws_bytes;
	void *xp, *wt, *yt;            /* (lh+2, 128, C), (K, 3, 3, C), (lh, 128, K) */
	cudaEvent_t tic, toc;
	int64_t c, lh, wd;
};

/* scratch operands for timing the plans: three steps of the hash */
template <typename T>
__global__ void fill_scratch(T *p, int64_t n, uint32_t seed)
{
	scratch_fill<T>(p, n, seed, 3);
}

static void fill(pkb_dtype t, void *p, size_t bytes, uint32_t seed, cudaStream_t st)
{
	size_t e = pkb_dtype_size(t);
	if (t == PKB_BF16)
		fill_scratch<__nv_bfloat16><<<1024, 256, 0, st>>>((__nv_bfloat16 *)p,
								    (int64_t)(bytes / e), seed);
	else if (t == PKB_FP16)
		fill_scratch<__half><<<1024, 256, 0, st>>>((__half *)p, (int64_t)(bytes / e), seed);
	else
		fill_scratch<float><<<1024, 256, 0, st>>>((float *)p, (int64_t)(bytes / e), seed);
}

/* ------------------------------------------------------------------------ */
/* cuDNN plumbing: errors are one log line with cuDNN's own message (PKB_CK_DNN) */

#define SET(ctx, d, attr, type, n, val) \
	PKB_CK_DNN(ctx, cudnnBackendSetAttribute(d, attr, type, n, val))

/* a 4-d channels-last tensor: dims {N, C, H, W}, strides {C H W, 1, W C, C}
 * (KRSC for a filter {K, C, R, S}) */
static int make_tensor(pkb_ctx *ctx, struct state *s, int64_t uid, cudnnDataType_t dt,
		       int64_t n, int64_t c, int64_t h, int64_t w, cudnnBackendDescriptor_t *out)
{
	int64_t dims[4] = { n, c, h, w }, strides[4] = { c * h * w, 1, w * c, c }, align = 16;
	bool is_virtual = false;
	cudnnBackendDescriptor_t t;
	if (dnn_own(ctx, &s->own, CUDNN_BACKEND_TENSOR_DESCRIPTOR, &t))
		return 1;
	SET(ctx, t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt);
	SET(ctx, t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims);
	SET(ctx, t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides);
	SET(ctx, t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
	SET(ctx, t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
	SET(ctx, t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
	PKB_CK_DNN(ctx, cudnnBackendFinalize(t));
	*out = t;
	return 0;
}

/* y = conv(x, w): cross-correlation, padding (0, 1), stride 1, fp32 compute */
static int make_graph(pkb_ctx *ctx, struct state *s, cudnnDataType_t dt)
{
	cudnnDataType_t comp = CUDNN_DATA_FLOAT;
	cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
	int64_t nsp = 2, pad[2] = { 0, 1 }, one[2] = { 1, 1 };
	float alpha = 1.f, beta = 0.f;
	cudnnBackendDescriptor_t xd, wd, yd, cd, op, g;
	if (make_tensor(ctx, s, UID_X, dt, 1, s->c, s->lh + 2, s->wd, &xd) ||
	    make_tensor(ctx, s, UID_W, dt, s->c, s->c, 3, 3, &wd) ||
	    make_tensor(ctx, s, UID_Y, dt, 1, s->c, s->lh, s->wd, &yd) ||
	    dnn_own(ctx, &s->own, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &cd))
		return 1;
	SET(ctx, cd, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
	SET(ctx, cd, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
	SET(ctx, cd, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &nsp);
	SET(ctx, cd, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, nsp, pad);
	SET(ctx, cd, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, nsp, pad);
	SET(ctx, cd, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, nsp, one);
	SET(ctx, cd, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, nsp, one);
	PKB_CK_DNN(ctx, cudnnBackendFinalize(cd));

	if (dnn_own(ctx, &s->own, CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, &op))
		return 1;
	SET(ctx, op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR,
	    1, &xd);
	SET(ctx, op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR,
	    1, &wd);
	SET(ctx, op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR,
	    1, &yd);
	SET(ctx, op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
	    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cd);
	SET(ctx, op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
	SET(ctx, op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
	PKB_CK_DNN(ctx, cudnnBackendFinalize(op));

	if (dnn_own(ctx, &s->own, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &g))
		return 1;
	SET(ctx, g, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op);
	SET(ctx, g, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &s->dnn);
	PKB_CK_DNN(ctx, cudnnBackendFinalize(g));
	s->graph = g;
	return 0;
}

/* the variant pack on this solution's fixed buffers and workspace ws */
static int make_pack(pkb_ctx *ctx, struct state *s, void *ws, cudnnBackendDescriptor_t *out)
{
	int64_t uids[3] = { UID_X, UID_W, UID_Y };
	void *ptrs[3] = { s->xp, s->wt, s->yt };
	cudnnBackendDescriptor_t vp;
	if (dnn_own(ctx, &s->own, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp))
		return 1;
	SET(ctx, vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids);
	SET(ctx, vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs);
	SET(ctx, vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
	PKB_CK_DNN(ctx, cudnnBackendFinalize(vp));
	*out = vp;
	return 0;
}

/*
 * Engine configs of heuristic `mode`: finalize up to MAX_TRY acceptable
 * ones, time each (a warm-up run, then the mean of two) on the scratch
 * operands, keep the fastest in s->plan and its workspace size. Losing
 * plans are destroyed; one a config cannot run is skipped.
 */
static int search(pkb_ctx *ctx, struct state *s, cudnnBackendHeurMode_t mode, pkb_dtype t)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	cudnnBackendDescriptor_t heur, cfg[MAX_CFG];
	int64_t got = 0;
	float best_ms = 0.f;
	int tried = 0;
	double t0 = now_s();
	if (dnn_own(ctx, &s->own, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur))
		return 1;
	SET(ctx, heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
	    &s->graph);
	SET(ctx, heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
	PKB_CK_DNN(ctx, cudnnBackendFinalize(heur));
	if (dnn_heur_configs(ctx, &s->own, heur, cfg, MAX_CFG, &got))
		return 1;
	for (int64_t i = 0; i < got && tried < MAX_TRY; i++) {
		int ok;
		int64_t ws = 0, n = 0;
		cudnnBackendDescriptor_t plan, vp;
		if (s->plan && now_s() - t0 > SEARCH_S)
			break;
		if (dnn_cfg_ok(ctx, &s->own, cfg[i], t, &ok, NULL))
			return 1;
		if (!ok)
			continue;
		if (dnn_own(ctx, &s->own, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan))
			return 1;
		SET(ctx, plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &s->dnn);
		SET(ctx, plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
		    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg[i]);
		if (cudnnBackendFinalize(plan) != CUDNN_STATUS_SUCCESS) {
			dnn_drop(&s->own, plan);   /* the engine refuses this problem */
			continue;
		}
		PKB_CK_DNN(ctx, cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
							 CUDNN_TYPE_INT64, 1, &n, &ws));
		if (ws < 0 || ws > MAX_WS) {
			dnn_drop(&s->own, plan);
			continue;
		}
		tried++;
		void *buf = NULL;
		PKB_CK_CUDA(ctx, cudaMalloc(&buf, ws > 0 ? (size_t)ws : 256));
		if (make_pack(ctx, s, buf, &vp))
			return 1;
		float ms = -1.f;
		if (cudnnBackendExecute(s->dnn, plan, vp) == CUDNN_STATUS_SUCCESS) {
			PKB_CK_CUDA(ctx, cudaEventRecord(s->tic, st));
			cudnnStatus_t r1 = cudnnBackendExecute(s->dnn, plan, vp);
			cudnnStatus_t r2 = cudnnBackendExecute(s->dnn, plan, vp);
			PKB_CK_CUDA(ctx, cudaEventRecord(s->toc, st));
			PKB_CK_CUDA(ctx, cudaEventSynchronize(s->toc));
			PKB_CK_CUDA(ctx, cudaEventElapsedTime(&ms, s->tic, s->toc));
			if (r1 != CUDNN_STATUS_SUCCESS || r2 != CUDNN_STATUS_SUCCESS)
				ms = -1.f;
		}
		PKB_CK_CUDA(ctx, cudaStreamSynchronize(st));
		dnn_drop(&s->own, vp);
		PKB_CK_CUDA(ctx, cudaFree(buf));
		if (ms >= 0.f && (!s->plan || ms < best_ms)) {
			if (s->plan)
				dnn_drop(&s->own, s->plan);
			s->plan = plan;
			s->ws_bytes = (size_t)ws;
			best_ms = ms;
		} else {
			dnn_drop(&s->own, plan);
		}
	}
	if (s->plan)
		ctx->svc->log(ctx, "087 reference: conv plan %.3f ms of %d tried (heuristic mode %d)",
			      0.5f * best_ms, tried, (int)mode);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* the entry points */

extern "C" int pkb_init(pkb_ctx *ctx)
{
	pkb_dtype t = ctx->in[0].dtype;
	struct state *s;
	PKB_CK(pkb_ref_float_state(ctx, &s));
	if (pkb_param_get(ctx, "stride", 1) != 1 || pkb_param_get(ctx, "padding", 1) != 1) {
		ctx->svc->log(ctx, "087 reference: only stride 1, padding 1");
		return 1;
	}
	const int64_t *xs = ctx->in[0].shape;
	s->c = xs[1];
	s->lh = xs[2];
	s->wd = xs[3];
	size_t e = pkb_dtype_size(t);
	if (xs[0] != 1 || (s->c * e) % 16) {
		ctx->svc->log(ctx, "087 reference: unsupported shapes");
		return 1;
	}
	cudaStream_t st = (cudaStream_t)ctx->stream;
	size_t xp_bytes = (size_t)(s->lh + 2) * s->wd * s->c * e;
	PKB_CK_CUDA(ctx, cudaMalloc(&s->xp, xp_bytes));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->wt, ctx->in[1].bytes));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->yt, ctx->out[0].bytes));
	PKB_CK_CUDA(ctx, cudaEventCreate(&s->tic));
	PKB_CK_CUDA(ctx, cudaEventCreate(&s->toc));

	/* scratch operands for timing (the real ones do not exist yet) */
	fill(t, s->xp, xp_bytes, 0x9e3779b9u + (uint32_t)ctx->rank, st);
	fill(t, s->wt, ctx->in[1].bytes, 0x85ebca6bu + (uint32_t)ctx->rank, st);
	PKB_CK_LAUNCH(ctx);

	PKB_CK_DNN(ctx, cudnnCreate(&s->dnn));
	PKB_CK_DNN(ctx, cudnnSetStream(s->dnn, st));
	if (make_graph(ctx, s, dnn_type(t)) || search(ctx, s, CUDNN_HEUR_MODE_A, t))
		return 1;
	if (!s->plan && search(ctx, s, CUDNN_HEUR_MODE_FALLBACK, t))
		return 1;
	if (!s->plan) {
		ctx->svc->log(ctx, "087 reference: cuDNN offers no engine that keeps the "
			      "arithmetic (no FFT, Winograd, reduced precision%s)",
			      t == PKB_FP32 ? ", TF32" : "");
		return 1;
	}
	PKB_CK_CUDA(ctx, cudaMalloc(&s->ws, s->ws_bytes > 0 ? s->ws_bytes : 256));
	if (make_pack(ctx, s, s->ws, &s->vp))
		return 1;
	/* the halo rows at the chain's ends stay zero: nothing writes them */
	PKB_CK_CUDA(ctx, cudaMemsetAsync(s->xp, 0, xp_bytes, st));
	PKB_CK_CUDA(ctx, cudaStreamSynchronize(st));
	return 0;
}

template <typename T>
static int run_t(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	ncclComm_t comm = (ncclComm_t)ctx->nccl_comm;
	const T *x = (const T *)ctx->in[0].data, *w = (const T *)ctx->in[1].data;
	const T *bias = (const T *)ctx->in[2].data;
	T *out = (T *)ctx->out[0].data, *xp = (T *)s->xp;
	int64_t row = s->wd * s->c, p = s->lh * s->wd;
	int me = ctx->rank, last = ctx->world - 1;
	ncclDataType_t nt;
	PKB_CK(pkb_ref_nccl_type(ctx, ctx->in[0].dtype, &nt));

	/* x (C, P) -> rows 1 .. lh of xp as (P, C); w (K, C, 9) -> (K, 9, C) */
	launch_transpose<T>(x, xp + row, s->c, p, s->c, 1, (const T *)nullptr, st);
	launch_transpose<T>(w, (T *)s->wt, s->c, 9, s->c, s->c, (const T *)nullptr, st);
	PKB_CK_LAUNCH(ctx);

	PKB_CK_NCCL(ctx, ncclGroupStart());
	if (me > 0) {
		PKB_CK_NCCL(ctx, ncclSend(xp + row, (size_t)row, nt, me - 1, comm, st));
		PKB_CK_NCCL(ctx, ncclRecv(xp, (size_t)row, nt, me - 1, comm, st));
	}
	if (me < last) {
		PKB_CK_NCCL(ctx, ncclSend(xp + s->lh * row, (size_t)row, nt, me + 1, comm, st));
		PKB_CK_NCCL(ctx, ncclRecv(xp + (s->lh + 1) * row, (size_t)row, nt, me + 1, comm, st));
	}
	PKB_CK_NCCL(ctx, ncclGroupEnd());

	PKB_CK_DNN(ctx, cudnnSetStream(s->dnn, st));
	PKB_CK_DNN(ctx, cudnnBackendExecute(s->dnn, s->plan, s->vp));
	/* y (P, K) -> out (K, P), + bias, rounded: PyTorch's add_ after the conv */
	launch_transpose<T>((const T *)s->yt, out, p, s->c, p, 1, bias, st);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	return PKB_REF_FLOAT_CALL(ctx->in[0].dtype, run_t, ctx, (struct state *)ctx->user);
}

static void release(struct state *s)
{
	dnn_free_all(&s->own);   /* newest first */
	if (s->dnn)
		cudnnDestroy(s->dnn);
	if (s->tic)
		cudaEventDestroy(s->tic);
	if (s->toc)
		cudaEventDestroy(s->toc);
	cudaFree(s->ws);
	cudaFree(s->xp);
	cudaFree(s->wt);
	cudaFree(s->yt);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	if (ctx->stream)   /* the plans' last runs are done with the buffers */
		cudaStreamSynchronize((cudaStream_t)ctx->stream);
	return pkb_ref_fini(ctx, release);
}
