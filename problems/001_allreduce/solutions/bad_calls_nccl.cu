/*
 * 001_allreduce, known-bad: calls ncclAllReduce, which the cuda backend
 * forbids. It compiles (NCCL's header is on the include path, the library is
 * not linked); the loader must refuse it before it runs, naming the symbol.
 * pkb-expect: load_refused
 */
#include <cuda_runtime.h>
#include <nccl.h>
#include "pkb.h"

PKB_SOLUTION;

extern "C" int pkb_init(pkb_ctx *ctx) { (void)ctx; return 0; }
extern "C" int pkb_run(pkb_ctx *ctx)
{
	return ncclAllReduce(ctx->in[0].data, ctx->out[0].data, (size_t)ctx->in[0].numel,
			     ncclBfloat16, ncclSum, (ncclComm_t)ctx->nccl_comm,
			     (cudaStream_t)ctx->stream) != ncclSuccess;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
