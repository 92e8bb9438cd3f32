/*
 * 035_ulysses_all_gather_variable_primitive reference: the size exchange,
 * then one ncclBroadcast per rank in a group -- what torch's all_gather does
 * with tensors of different sizes -- each rank's rows straight into their
 * place in out, so no concatenation after it:
 *     out[first_j : first_j + m_j] = x_j,   first_j = m_0 + ... + m_{j-1}
 *
 * The original all-gathers every rank's shape (an int64 (2,) all_gather and
 * a host sync) on every call. The shapes cannot change between calls of an
 * instance, and a call may not synchronise the device, so the exchange is
 * done once, in pkb_init, through the harness's host all-gather.
 *
 * Bytes each rank must receive: (total - m_r) * N*e (6.75 MiB on rank 0 at
 * M = N = 1024, bf16, W = 4).
 */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdlib.h>
#include "pkb.h"
#include "pkb_ref.cuh"

PKB_SOLUTION;

struct state {
	int64_t *rows;   /* [W]: every rank's row count */
};

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	s->rows = (int64_t *)calloc(ctx->world, sizeof *s->rows);
	if (!s->rows)
		return 1;
	int64_t mine = ctx->in[0].shape[0];
	if (ctx->svc->host_allgather(ctx, &mine, s->rows, sizeof mine)) {
		ctx->svc->log(ctx, "035 reference: host all-gather of the row counts failed");
		return 1;
	}
	int64_t total = 0;
	for (int j = 0; j < ctx->world; j++)
		total += s->rows[j];
	if (total != ctx->out[0].shape[0] || ctx->in[0].shape[1] != ctx->out[0].shape[1]) {
		ctx->svc->log(ctx, "035 reference: row counts do not add up to the output");
		return 1;
	}
	return 0;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	size_t row = (size_t)ctx->in[0].shape[1] * pkb_dtype_size(ctx->in[0].dtype);
	char *out = (char *)ctx->out[0].data;
	size_t first = 0;
	ncclResult_t r = ncclGroupStart();
	for (int j = 0; j < ctx->world && r == ncclSuccess; j++) {
		/* the send buffer is read on the root only */
		r = ncclBroadcast(ctx->in[0].data, out + first * row, (size_t)s->rows[j] * row,
				  ncclUint8, j, (ncclComm_t)ctx->nccl_comm,
				  (cudaStream_t)ctx->stream);
		first += (size_t)s->rows[j];
	}
	ncclResult_t e = ncclGroupEnd();
	if (r == ncclSuccess)
		r = e;
	if (r != ncclSuccess) {
		ctx->svc->log(ctx, "grouped broadcasts: %s", ncclGetErrorString(r));
		return 1;
	}
	return 0;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (s)
		free(s->rows);
	free(s);
	return 0;
}
