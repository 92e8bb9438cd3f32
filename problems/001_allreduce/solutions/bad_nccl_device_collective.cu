/*
 * 001_allreduce, known-bad under the `nccl-device` backend: it has the
 * communicator that backend hands out and simply calls the host
 * collective with it. The backend allows NCCL's windows and device API
 * only, so the loader must refuse it, naming ncclAllReduce.
 * pkb-backend: nccl-device
 * pkb-expect: load_refused
 */
#include <cuda_runtime.h>
#include <nccl.h>
#include "pkb.h"

PKB_SOLUTION;

extern "C" int pkb_init(pkb_ctx *ctx) { return !ctx->nccl_comm; }

extern "C" int pkb_run(pkb_ctx *ctx)
{
	ncclDataType_t t = ctx->in[0].dtype == PKB_FP32 ? ncclFloat32
			   : ctx->in[0].dtype == PKB_FP16 ? ncclFloat16 : ncclBfloat16;
	return ncclAllReduce(ctx->in[0].data, ctx->out[0].data, ctx->in[0].numel, t, ncclSum,
			     (ncclComm_t)ctx->nccl_comm, (cudaStream_t)ctx->stream) != ncclSuccess;
}

extern "C" int pkb_fini(pkb_ctx *ctx) { return 0; }
