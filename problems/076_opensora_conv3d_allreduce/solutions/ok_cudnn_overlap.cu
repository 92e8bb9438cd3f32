/*
 * 076_opensora_conv3d_allreduce: the partial Conv3d with cuDNN (implicit
 * GEMM, fp32 accumulation, one rounding to the dtype -- what the original's
 * PyTorch calls), in NCHUNK slices of output channels. A slice of Cout is
 * contiguous in the NCDHW output, so cuDNN writes it straight into `out`,
 * and the slice's ncclAllReduce (in place) and bias add run on a second,
 * high-priority stream while cuDNN computes the next slice.
 *
 * Only the GEMM-family algorithms are allowed (no FFT or Winograd: they
 * change the arithmetic), picked by cudnnFindConvolutionForwardAlgorithm in
 * init. At fp32 the math is FMA only: no TF32.
 * pkb-backend: reference
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cudnn.h>
#include <nccl.h>
#include "pkb.h"

PKB_SOLUTION;

#define NCHUNK 4
#define THREADS 256
#define WS_BYTES (256u << 20)

struct state {
	cudnnHandle_t dnn;
	cudnnTensorDescriptor_t xd, yd;
	cudnnFilterDescriptor_t wd;
	cudnnConvolutionDescriptor_t cd;
	cudnnConvolutionFwdAlgo_t algo;
	size_t ws_bytes;
	void *ws;
	cudaStream_t side;     /* all-reduce + bias */
	cudaEvent_t conv_done[NCHUNK], side_done;
	int cout, cin, chunk;  /* output channels per slice */
	int64_t P;             /* output positions */
};

__device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f(float v) { return v; }
template <typename T> __device__ __forceinline__ T from_f(float v);
template <> __device__ __forceinline__ __nv_bfloat16 from_f(float v) { return __float2bfloat16(v); }
template <> __device__ __forceinline__ __half from_f(float v) { return __float2half(v); }
template <> __device__ __forceinline__ float from_f(float v) { return v; }

/* y[co][p] = round(y[co][p] + bias[co]) for the slice's channels; P is a
 * multiple of the 16-byte vector */
template <typename T>
__global__ void __launch_bounds__(THREADS)
add_bias(T *y, const T *bias, int64_t P, int nco)
{
	const int V = 16 / sizeof(T);
	int64_t nq = P / V, total = nq * nco;
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
	     i += (int64_t)gridDim.x * blockDim.x) {
		int co = (int)(i / nq);
		float b = to_f(bias[co]);
		uint4 u = ((uint4 *)y)[i];
		T *e = (T *)&u;
#pragma unroll
		for (int k = 0; k < V; k++)
			e[k] = from_f<T>(to_f(e[k]) + b);
		((uint4 *)y)[i] = u;
	}
}

static cudnnDataType_t dnn_type(pkb_dtype t)
{
	return t == PKB_BF16 ? CUDNN_DATA_BFLOAT16 : t == PKB_FP16 ? CUDNN_DATA_HALF
						      : CUDNN_DATA_FLOAT;
}

static ncclDataType_t nccl_type(pkb_dtype t)
{
	return t == PKB_BF16 ? ncclBfloat16 : t == PKB_FP16 ? ncclFloat16 : ncclFloat32;
}

#define DNN_OR_FAIL(ctx, call)                                                             \
	do {                                                                               \
		cudnnStatus_t st_ = (call);                                                \
		if (st_ != CUDNN_STATUS_SUCCESS) {                                         \
			(ctx)->svc->log((ctx), "076: %s: %s", #call, cudnnGetErrorString(st_)); \
			return 1;                                                          \
		}                                                                          \
	} while (0)

extern "C" int pkb_init(pkb_ctx *ctx)
{
	pkb_dtype t = ctx->in[0].dtype;
	if (t != PKB_BF16 && t != PKB_FP16 && t != PKB_FP32)
		return 1;
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	if (pkb_param_get(ctx, "stride", 1) != 1 || pkb_param_get(ctx, "padding", 0) != 0 ||
	    pkb_param_get(ctx, "dilation", 1) != 1 || pkb_param_get(ctx, "groups", 1) != 1) {
		ctx->svc->log(ctx, "076: only stride 1, padding 0, dilation 1, groups 1");
		return 1;
	}
	const int64_t *xs = ctx->in[0].shape, *wsh = ctx->in[1].shape;
	s->cin = (int)xs[1];
	s->cout = (int)wsh[0];
	int to = (int)xs[2] - 2, ho = (int)xs[3] - 2, wo = (int)xs[4] - 2;
	s->P = (int64_t)to * ho * wo;
	s->chunk = s->cout / NCHUNK;
	int V = 16 / (int)pkb_dtype_size(t);
	if (xs[0] != 1 || s->cout % NCHUNK || s->P % V) {
		ctx->svc->log(ctx, "076: unsupported shapes");
		return 1;
	}

	cudnnDataType_t dt = dnn_type(t);
	DNN_OR_FAIL(ctx, cudnnCreate(&s->dnn));
	DNN_OR_FAIL(ctx, cudnnCreateTensorDescriptor(&s->xd));
	DNN_OR_FAIL(ctx, cudnnCreateTensorDescriptor(&s->yd));
	DNN_OR_FAIL(ctx, cudnnCreateFilterDescriptor(&s->wd));
	DNN_OR_FAIL(ctx, cudnnCreateConvolutionDescriptor(&s->cd));
	int xdim[5] = { 1, s->cin, (int)xs[2], (int)xs[3], (int)xs[4] };
	int xstr[5] = { s->cin * xdim[2] * xdim[3] * xdim[4], xdim[2] * xdim[3] * xdim[4],
			xdim[3] * xdim[4], xdim[4], 1 };
	DNN_OR_FAIL(ctx, cudnnSetTensorNdDescriptor(s->xd, dt, 5, xdim, xstr));
	int wdim[5] = { s->chunk, s->cin, 3, 3, 3 };
	DNN_OR_FAIL(ctx, cudnnSetFilterNdDescriptor(s->wd, dt, CUDNN_TENSOR_NCHW, 5, wdim));
	int ydim[5] = { 1, s->chunk, to, ho, wo };
	int ystr[5] = { s->chunk * to * ho * wo, to * ho * wo, ho * wo, wo, 1 };
	DNN_OR_FAIL(ctx, cudnnSetTensorNdDescriptor(s->yd, dt, 5, ydim, ystr));
	int pad[3] = { 0, 0, 0 }, one[3] = { 1, 1, 1 };
	DNN_OR_FAIL(ctx, cudnnSetConvolutionNdDescriptor(s->cd, 3, pad, one, one,
							  CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
	DNN_OR_FAIL(ctx, cudnnSetConvolutionMathType(
				 s->cd, t == PKB_FP32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH));

	/* the fastest GEMM-family algorithm that fits the workspace */
	cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
	int n = 0;
	DNN_OR_FAIL(ctx, cudnnFindConvolutionForwardAlgorithm(s->dnn, s->xd, s->wd, s->cd, s->yd,
								CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
								&n, perf));
	int pick = -1;
	for (int i = 0; i < n && pick < 0; i++) {
		cudnnConvolutionFwdAlgo_t a = perf[i].algo;
		int gemm = a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM ||
			   a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
			   a == CUDNN_CONVOLUTION_FWD_ALGO_GEMM;
		int fma_ok = t != PKB_FP32 || perf[i].mathType == CUDNN_FMA_MATH;
		if (perf[i].status == CUDNN_STATUS_SUCCESS && gemm && fma_ok &&
		    perf[i].memory <= WS_BYTES)
			pick = i;
	}
	if (pick < 0) {
		ctx->svc->log(ctx, "076: cuDNN offers no GEMM-family algorithm for this conv");
		return 1;
	}
	s->algo = perf[pick].algo;
	DNN_OR_FAIL(ctx, cudnnSetConvolutionMathType(s->cd, perf[pick].mathType));
	s->ws_bytes = perf[pick].memory;
	if (s->ws_bytes && cudaMalloc(&s->ws, s->ws_bytes))
		return 1;
	ctx->svc->log(ctx, "076: cuDNN algorithm %d (%.3f ms per slice in its own test), "
		      "workspace %zu bytes", (int)s->algo, perf[pick].time, s->ws_bytes);

	int least, greatest;
	if (cudaDeviceGetStreamPriorityRange(&least, &greatest) ||
	    cudaStreamCreateWithPriority(&s->side, cudaStreamNonBlocking, greatest) ||
	    cudaEventCreateWithFlags(&s->side_done, cudaEventDisableTiming))
		return 1;
	for (int c = 0; c < NCHUNK; c++)
		if (cudaEventCreateWithFlags(&s->conv_done[c], cudaEventDisableTiming))
			return 1;
	return 0;
}

template <typename T>
static int run_t(pkb_ctx *ctx, struct state *s)
{
	cudaStream_t st = (cudaStream_t)ctx->stream;
	const T *x = (const T *)ctx->in[0].data, *w = (const T *)ctx->in[1].data;
	const T *bias = (const T *)ctx->in[2].data;
	T *out = (T *)ctx->out[0].data;
	const float one = 1.f, zero = 0.f;
	int64_t wslice = (int64_t)s->chunk * s->cin * 27, yslice = (int64_t)s->chunk * s->P;
	const int V = 16 / sizeof(T);
	int64_t vecs = yslice / V;
	int blocks = (int)((vecs + THREADS - 1) / THREADS);
	blocks = blocks < 132 * 4 ? blocks : 132 * 4;

	DNN_OR_FAIL(ctx, cudnnSetStream(s->dnn, st));
	for (int c = 0; c < NCHUNK; c++) {
		T *y = out + c * yslice;
		DNN_OR_FAIL(ctx, cudnnConvolutionForward(s->dnn, &one, s->xd, x, s->wd,
							  w + c * wslice, s->cd, s->algo, s->ws,
							  s->ws_bytes, &zero, s->yd, y));
		if (cudaEventRecord(s->conv_done[c], st) ||
		    cudaStreamWaitEvent(s->side, s->conv_done[c], 0))
			return 1;
		ncclResult_t r = ncclAllReduce(y, y, (size_t)yslice, nccl_type(ctx->in[0].dtype),
					       ncclSum, (ncclComm_t)ctx->nccl_comm, s->side);
		if (r != ncclSuccess) {
			ctx->svc->log(ctx, "076: ncclAllReduce: %s", ncclGetErrorString(r));
			return 1;
		}
		add_bias<T><<<blocks, THREADS, 0, s->side>>>(y, bias + c * s->chunk, s->P,
							      s->chunk);
	}
	/* join: the harness reads `out` after what is on its stream */
	if (cudaEventRecord(s->side_done, s->side) || cudaStreamWaitEvent(st, s->side_done, 0))
		return 1;
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	switch (ctx->in[0].dtype) {
	case PKB_BF16: return run_t<__nv_bfloat16>(ctx, s);
	case PKB_FP16: return run_t<__half>(ctx, s);
	case PKB_FP32: return run_t<float>(ctx, s);
	default: return 1;
	}
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (!s)
		return 0;
	if (s->side)
		cudaStreamSynchronize(s->side);
	for (int c = 0; c < NCHUNK; c++)
		if (s->conv_done[c])
			cudaEventDestroy(s->conv_done[c]);
	if (s->side_done)
		cudaEventDestroy(s->side_done);
	if (s->side)
		cudaStreamDestroy(s->side);
	if (s->cd)
		cudnnDestroyConvolutionDescriptor(s->cd);
	if (s->wd)
		cudnnDestroyFilterDescriptor(s->wd);
	if (s->xd)
		cudnnDestroyTensorDescriptor(s->xd);
	if (s->yd)
		cudnnDestroyTensorDescriptor(s->yd);
	if (s->dnn)
		cudnnDestroy(s->dnn);
	cudaFree(s->ws);
	free(s);
	return 0;
}
