/*
 * pkb.h -- the solution ABI of pkb (ParallelKernelBench in C).
 *
 * The one header a reference or a candidate includes. A solution is one .cu
 * file compiled to a shared object; the harness loads it into every rank
 * process and calls three C entry points:
 *
 *   int pkb_init(pkb_ctx *ctx)   once per rank, untimed. Shapes are known,
 *                                tensor data pointers are NULL: inputs do not
 *                                exist yet. Allocate scratch and symmetric
 *                                memory, create handles.
 *   int pkb_run(pkb_ctx *ctx)    the timed call. Read ctx->in[i].data, write
 *                                ctx->out[i].data. Enqueue all work on
 *                                ctx->stream (or on your own streams joined
 *                                back to it before returning). Do not
 *                                synchronize the device. Called many times,
 *                                with different buffers and contents.
 *   int pkb_fini(pkb_ctx *ctx)   once per rank; free what init made.
 *
 * Each returns 0 on success; anything else is reported as a runtime error of
 * that rank. The file must also contain PKB_SOLUTION; (it exports the ABI
 * version that the loader checks).
 *
 * Rules (docs/ABI.md has the long form, docs/ANTI_CHEAT.md the reasons):
 *   - inputs are read-only; the harness checksums them around every call.
 *   - outputs are poisoned before every call: write every element.
 *   - every call gets fresh inputs; results may not be cached across calls.
 *   - the `cuda` backend gets no NCCL communicator and may not link NCCL.
 *
 * Compatible with C11 (host tools include it) and CUDA C++.
 */
#ifndef PKB_H
#define PKB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on any change to a struct layout or an entry point. */
#define PKB_ABI_VERSION 1

/* ------------------------------------------------------------------------ */
/* tensors */

typedef enum pkb_dtype {
	PKB_BF16 = 0,
	PKB_FP16,
	PKB_FP32,
	PKB_FP64,
	PKB_I8,
	PKB_U8,
	PKB_I32,
	PKB_I64,
	PKB_BOOL,       /* one byte, 0 or 1 */
	PKB_FP8_E4M3,
	PKB_FP8_E5M2,
	PKB_C64,        /* complex64: interleaved fp32 (re, im) */
	PKB_DTYPE_COUNT
} pkb_dtype;

#define PKB_MAX_DIMS 6

typedef struct pkb_tensor {
	void *data;                    /* device pointer; NULL inside pkb_init */
	const char *name;              /* the original's argument name */
	pkb_dtype dtype;
	int ndim;
	int64_t shape[PKB_MAX_DIMS];   /* row-major, contiguous */
	int64_t numel;
	size_t bytes;
} pkb_tensor;

/* A scalar argument of the problem (the original's non-tensor arguments,
 * such as dst=0 or eps=1e-5), in the original's positional order. */
typedef struct pkb_param {
	const char *name;
	double value;
} pkb_param;

/* ------------------------------------------------------------------------ */
/* symmetric memory and device-side synchronisation */

/* An allocation of the same size on every rank, mapped into this rank's
 * address space. peers[r] is rank r's buffer as seen from this GPU (over
 * NVLink); peers[rank] == local. `peers` is a host array, `peers_dev` the same
 * table in device memory, for kernels that index it at run time. */
typedef struct pkb_symm {
	void *local;
	void *const *peers;
	void *const *peers_dev;
	size_t bytes;
} pkb_symm;

/* Passed to kernels by value. Signal pads are harness-owned symmetric memory:
 * PKB_SIGNAL_SLOTS slots, each with one uint32 per source rank. A slot is
 * used by one thread block at a time (use the block index). pkb_device.cuh
 * has the barrier and the bounded wait that use it. */
#define PKB_SIGNAL_SLOTS 1024
typedef struct pkb_dev_comm {
	int rank;
	int world;
	uint32_t *const *pads;      /* device table [world]: each rank's pad */
	uint32_t *epochs;           /* this rank's per-slot barrier counters */
	uint32_t *err;              /* harness error word (PKB_DEV_ERR_*) */
	uint64_t timeout_ns;        /* a bounded wait gives up after this */
} pkb_dev_comm;

#define PKB_DEV_ERR_TIMEOUT 1u  /* a bounded spin-wait gave up */

/* ------------------------------------------------------------------------ */
/* the context */

typedef struct pkb_ctx pkb_ctx;

/* Harness services. symm_alloc, host_barrier and host_allgather are
 * collective: every rank calls them in the same order, and only from
 * pkb_init or pkb_fini (never from pkb_run). Memory from symm_alloc is freed
 * by the harness after pkb_fini. Each returns 0 on success. */
typedef struct pkb_services {
	int (*symm_alloc)(pkb_ctx *ctx, size_t bytes, pkb_symm *out);
	int (*host_barrier)(pkb_ctx *ctx);
	int (*host_allgather)(pkb_ctx *ctx, const void *send, void *recv,
			      size_t bytes_per_rank);
	void (*log)(pkb_ctx *ctx, const char *fmt, ...);
} pkb_services;

struct pkb_ctx {
	int abi_version;
	int rank;               /* global rank, 0 .. world-1 */
	int world;
	int local_rank;
	int device;             /* the CUDA device this rank owns */
	struct CUstream_st *stream;   /* == cudaStream_t */

	/* the problem instance */
	int problem_id;
	int64_t m, n;           /* the base shape (--m, --n) */
	pkb_dtype dtype;        /* the harness dtype (--dtype) */
	int n_in, n_out, n_params;
	pkb_tensor *in;         /* in the original's positional order */
	pkb_tensor *out;
	const pkb_param *params;

	/* services */
	const pkb_services *svc;
	pkb_dev_comm dev;       /* ready-made signal pads for this solution */
	void *nccl_comm;        /* ncclComm_t: references (and the nccl-device
				   backend) only; NULL for the cuda backend */

	void *user;             /* the solution's own state, set in pkb_init */
};

/* The entry points a solution defines. */
int pkb_init(pkb_ctx *ctx);
int pkb_run(pkb_ctx *ctx);
int pkb_fini(pkb_ctx *ctx);

#ifdef __cplusplus
#define PKB_SOLUTION extern "C" const int pkb_abi_version = PKB_ABI_VERSION
#else
#define PKB_SOLUTION const int pkb_abi_version = PKB_ABI_VERSION
#endif

/* ------------------------------------------------------------------------ */
/* small helpers */

static inline size_t pkb_dtype_size(pkb_dtype t)
{
	switch (t) {
	case PKB_BF16: case PKB_FP16: return 2;
	case PKB_FP32: case PKB_I32: return 4;
	case PKB_FP64: case PKB_I64: case PKB_C64: return 8;
	case PKB_I8: case PKB_U8: case PKB_BOOL:
	case PKB_FP8_E4M3: case PKB_FP8_E5M2: return 1;
	default: return 0;
	}
}

/* The value of scalar parameter `name`, or `dflt` when the problem has none. */
static inline double pkb_param_get(const pkb_ctx *ctx, const char *name, double dflt)
{
	for (int i = 0; i < ctx->n_params; i++) {
		const char *a = ctx->params[i].name, *b = name;
		while (*a && *a == *b) { a++; b++; }
		if (*a == 0 && *b == 0)
			return ctx->params[i].value;
	}
	return dflt;
}

#ifdef __cplusplus
}
#endif
#endif /* PKB_H */
