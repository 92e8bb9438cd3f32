/*
 * cudnn_conv.cuh -- what 076's and 087's references share around their
 * cuDNN graph (backend API) convolutions in channels-last layout: the
 * tiled transpose in and out of NCHW / NCDHW (+ the bias on the way out),
 * the scratch operands the plan search times on, cuDNN's check macro, the
 * list of every descriptor a reference makes (for its pkb_fini), a
 * heuristic's engine configs and the filter on them that keeps the
 * reference's arithmetic, and the clock of the plan search. Included by
 * the two reference.cu files after pkb_ref.cuh and pkb_device.cuh.
 */
#ifndef PKB_CUDNN_CONV_CUH
#define PKB_CUDNN_CONV_CUH

#include <stdint.h>
#include <time.h>
#include <cuda_runtime.h>
#include <cudnn.h>

/* ---- the transpose --------------------------------------------------------- */

#define TR_TILE 32   /* transpose tiles: TR_TILE x TR_TILE, TR_TILE x 8 threads */

/*
 * Batched transpose: for each batch b, dst_b[c * ldd + r] = src_b[r * cols + c]
 * (+ bias[c] when bias is given), src_b being rows x cols; batches are
 * rows * cols apart in src and ldd * cols apart in dst. 32 x 32 tiles through
 * shared memory; grid (ceil(cols / 32), ceil(rows / 32), batches).
 */
template <typename T>
__global__ void __launch_bounds__(TR_TILE * 8)
transpose(const T *src, T *dst, int64_t rows, int64_t cols, int64_t ldd, const T *bias)
{
	__shared__ float tile[TR_TILE][TR_TILE + 1];
	const T *s = src + (int64_t)blockIdx.z * rows * cols;
	T *d = dst + (int64_t)blockIdx.z * ldd * cols;
	int64_t c0 = (int64_t)blockIdx.x * TR_TILE, r0 = (int64_t)blockIdx.y * TR_TILE;
	for (int k = threadIdx.y; k < TR_TILE; k += 8) {
		int64_t r = r0 + k, c = c0 + threadIdx.x;
		if (r < rows && c < cols)
			tile[k][threadIdx.x] = pkb_to_float(s[r * cols + c]);
	}
	__syncthreads();
	for (int k = threadIdx.y; k < TR_TILE; k += 8) {
		int64_t c = c0 + k, r = r0 + threadIdx.x;
		if (r < rows && c < cols) {
			float v = tile[threadIdx.x][k];
			if (bias)
				v += pkb_to_float(bias[c]);
			d[c * ldd + r] = pkb_from_float<T>(v);
		}
	}
}

template <typename T>
static void launch_transpose(const T *src, T *dst, int64_t rows, int64_t cols, int64_t ldd,
			     int64_t batches, const T *bias, cudaStream_t st)
{
	dim3 grid((unsigned)((cols + TR_TILE - 1) / TR_TILE),
		  (unsigned)((rows + TR_TILE - 1) / TR_TILE), (unsigned)batches);
	transpose<T><<<grid, dim3(TR_TILE, 8), 0, st>>>(src, dst, rows, cols, ldd, bias);
}

/* ---- scratch operands -------------------------------------------------------- */

/*
 * A fill_scratch kernel's body: p[i] uniform in [-1, 1) from a hash of i
 * and the seed, for timing the plans in init on data like the real (all-zero
 * operands would flatter the tensor cores' power). The hash is the first
 * `steps` of the five steps of Wellons' lowbias32 (076: all five; 087:
 * three), over a grid-stride loop.
 */
template <typename T>
__device__ __forceinline__ void scratch_fill(T *p, int64_t n, uint32_t seed, int steps)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x) {
		uint32_t h = (uint32_t)i * 2654435761u ^ seed;
		h ^= h >> 16;
		h *= 0x7feb352du;
		h ^= h >> 15;
		if (steps > 3) {
			h *= 0x846ca68bu;
			h ^= h >> 16;
		}
		p[i] = pkb_from_float<T>((float)(h >> 8) * (2.f / 16777216.f) - 1.f);
	}
}

/* ---- cuDNN: errors and descriptors ------------------------------------------ */

/* the plan search of both (076: for each slice shape) */
#define MAX_CFG 64                 /* heuristic results looked at */
#define MAX_TRY 8                  /* plans finalized and timed */
#define MAX_WS ((int64_t)512 << 20) /* a plan's workspace at most */
#define SEARCH_S 15.0              /* seconds a search may take: init has 60 s in all */
/* the operands' unique ids in the graph and the variant packs */
#define UID_X 'x'
#define UID_W 'w'
#define UID_Y 'y'

/* one log line: where, the call, cuDNN's status and its last error message */
static inline void dnn_log(pkb_ctx *ctx, const char *file, int line, const char *what,
			   cudnnStatus_t st)
{
	char msg[512];
	cudnnGetLastErrorString(msg, sizeof msg);
	for (char *c = msg; *c; c++)
		if (*c == '\n' || *c == '\r')
			*c = ' ';
	ctx->svc->log(ctx, "%s:%d %s: %s%s%s", file, line, what, cudnnGetErrorString(st),
		      *msg ? ": " : "", msg);
}

/* pkb_ref.cuh's PKB_CK_* for cuDNN: log, then return 1 */
#define PKB_CK_DNN(ctx, call) do { cudnnStatus_t e_ = (call); if (e_ != CUDNN_STATUS_SUCCESS) { \
	dnn_log((ctx), __FILE__, __LINE__, #call, e_); return 1; } } while (0)

static inline cudnnDataType_t dnn_type(pkb_dtype t)
{
	return t == PKB_BF16 ? CUDNN_DATA_BFLOAT16 : t == PKB_FP16 ? CUDNN_DATA_HALF
						      : CUDNN_DATA_FLOAT;
}

#define DNN_MAX_OWNED 1024   /* descriptors a reference may hold at once */

/* Every descriptor a reference makes, in creation order: dnn_free_all
 * destroys them newest first in pkb_fini (a plan before the config and
 * graph it was built from). */
struct dnn_owned {
	cudnnBackendDescriptor_t d[DNN_MAX_OWNED];
	int n;
};

/* a new descriptor, remembered for pkb_fini */
static inline int dnn_own(pkb_ctx *ctx, struct dnn_owned *o, cudnnBackendDescriptorType_t type,
			  cudnnBackendDescriptor_t *d)
{
	*d = NULL;
	if (o->n == DNN_MAX_OWNED) {
		ctx->svc->log(ctx, "problem %d reference: more than %d cuDNN descriptors",
			      ctx->problem_id, DNN_MAX_OWNED);
		return 1;
	}
	PKB_CK_DNN(ctx, cudnnBackendCreateDescriptor(type, d));
	o->d[o->n++] = *d;
	return 0;
}

/* destroy a descriptor made by dnn_own() before pkb_fini (a losing plan, a
 * scratch variant pack); the newest slots are reused, so the creation
 * order that pkb_fini destroys in holds */
static inline void dnn_drop(struct dnn_owned *o, cudnnBackendDescriptor_t d)
{
	for (int i = o->n - 1; i >= 0; i--)
		if (o->d[i] == d) {
			cudnnBackendDestroyDescriptor(d);
			o->d[i] = NULL;
			break;
		}
	while (o->n > 0 && !o->d[o->n - 1])
		o->n--;
}

static inline void dnn_free_all(struct dnn_owned *o)
{
	for (int i = o->n - 1; i >= 0; i--)
		if (o->d[i])
			cudnnBackendDestroyDescriptor(o->d[i]);
}

/* The engine configs the finalized heuristic heur offers, at most max:
 * descriptors made in cfg[0 .. max), *got of them filled */
static inline int dnn_heur_configs(pkb_ctx *ctx, struct dnn_owned *o, cudnnBackendDescriptor_t heur,
				   cudnnBackendDescriptor_t *cfg, int64_t max, int64_t *got)
{
	int64_t count = 0;
	*got = 0;
	PKB_CK_DNN(ctx, cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
						 CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, NULL));
	if (count > max)
		count = max;
	for (int64_t i = 0; i < count; i++)
		if (dnn_own(ctx, o, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfg[i]))
			return 1;
	if (count > 0)
		PKB_CK_DNN(ctx, cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
							 CUDNN_TYPE_BACKEND_DESCRIPTOR, count, got,
							 cfg));
	if (*got > count)
		*got = count;
	return 0;
}

/* Whether engine config cfg keeps the reference's arithmetic: no FFT, no
 * Winograd, no reduced-precision reduction; at fp32 no tensor cores (TF32)
 * and no down-converted inputs. *idx (when idx is not NULL) gets the
 * engine's global index. */
static inline int dnn_cfg_ok(pkb_ctx *ctx, struct dnn_owned *o, cudnnBackendDescriptor_t cfg,
			     pkb_dtype t, int *ok, int64_t *idx)
{
	cudnnBackendDescriptor_t eng;
	cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
	int64_t n = 0;
	*ok = 0;
	if (idx)
		*idx = -1;
	if (dnn_own(ctx, o, CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng))
		return 1;
	PKB_CK_DNN(ctx, cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE,
						 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &eng));
	if (idx)
		PKB_CK_DNN(ctx, cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX,
							 CUDNN_TYPE_INT64, 1, &n, idx));
	n = 0;
	PKB_CK_DNN(ctx, cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
						 CUDNN_TYPE_NUMERICAL_NOTE,
						 CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n, notes));
	dnn_drop(o, eng);
	if (n > CUDNN_NUMERICAL_NOTE_TYPE_COUNT)
		n = CUDNN_NUMERICAL_NOTE_TYPE_COUNT;
	*ok = 1;
	for (int64_t i = 0; i < n; i++)
		switch (notes[i]) {
		case CUDNN_NUMERICAL_NOTE_FFT:
		case CUDNN_NUMERICAL_NOTE_WINOGRAD:
		case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4:
		case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6:
		case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13:
		case CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION:
			*ok = 0;
			break;
		case CUDNN_NUMERICAL_NOTE_TENSOR_CORE:
		case CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS:
			if (t == PKB_FP32)
				*ok = 0;
			break;
		default:
			break;
		}
	return 0;
}

/* the plan search's clock (it stops after a budget of seconds) */
static inline double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif /* PKB_CUDNN_CONV_CUH */
