/*
 * pkb_problem.h -- how a problem describes itself to the harness.
 *
 * Every folder problems/NNN_name/ has a problem.c (plain C11, compiled into
 * the pkb binary; the Makefile finds it by glob) that defines
 *
 *     const struct pkb_problem pkb_problem_NNN = { ... };
 *
 * The descriptor says what the problem is (id, name, category, origin), for
 * which world sizes it is valid, and -- through describe() -- the tensors each
 * rank holds at a given (W, M, N, dtype): names, dtypes and shapes in the
 * original's positional order, how the harness fills inputs, and how outputs
 * are compared. Nothing about a problem is written anywhere else.
 *
 * problems/README.md walks through adding one; docs/TOLERANCE.md explains
 * the comparison model behind struct pkb_tol. Code that sibling problems
 * share lives in problems/lib/ (on the include path of problem.c and of
 * references, not of candidates).
 */
#ifndef PKB_PROBLEM_H
#define PKB_PROBLEM_H

#include <math.h>
#include <stdint.h>
#include "pkb.h"   /* defines: pkb_dtype, PKB_MAX_DIMS */

#define PKB_MAX_TENSORS 16
#define PKB_MAX_PARAMS 16
#define PKB_NAME_MAX 48

/* How the harness fills an input, on the device, from a counter-based
 * generator keyed by (seed, problem, trial, rank, tensor). Values differ per
 * rank and per trial for every distribution. */
enum pkb_dist_kind {
	PKB_DIST_NORMAL = 0,  /* a = mean, b = standard deviation */
	PKB_DIST_UNIFORM,     /* uniform in [a, b) */
	PKB_DIST_RANDINT,     /* integers uniform in [a, b) (any dtype) */
	PKB_DIST_HOST,        /* the problem's gen_host() fills it on the host */
};

struct pkb_dist {
	enum pkb_dist_kind kind;
	double a, b;
};

/* Comparison of one output (docs/TOLERANCE.md). An element passes when
 *   |c - r| <= atol + rtol*|r| + terms * u * amax(ref)
 * with u the unit roundoff of the output dtype; NaN or Inf must match the
 * reference exactly. `terms` counts the rounded summands that may be added in
 * a different order (W for a sum over ranks). The whole output must also have
 * ||c - r||_2 <= l2 * ||r||_2 (a broad loss of precision fails even where each
 * element is inside its bound). Zero fields take the dtype's defaults;
 * exact = 1 asks for bit equality (integers, pure data movement).
 *
 * scale_axis = PKB_SCALE_AXIS(k): amax(ref) is taken per index of dimension
 * k (each channel its own scale) instead of over the whole output, for
 * outputs whose slices differ in scale by orders of magnitude (072's
 * per-channel filters): with one amax an error confined to the small
 * slices would hide under the large ones' slack. pkb_io_output fills
 * scale_len and scale_stride from the shape. */
struct pkb_tol {
	double rtol;
	double atol;
	double terms;
	double l2;
	int exact;
	int scale_axis;          /* 0: one amax; k + 1: per index of dimension k */
	int64_t scale_len;       /* filled in: shape[k] */
	int64_t scale_stride;    /* filled in: elements between indices of k */
};

struct pkb_tensor_desc {
	char name[PKB_NAME_MAX];
	pkb_dtype dtype;
	int ndim;
	int64_t shape[PKB_MAX_DIMS];
	struct pkb_dist dist;     /* inputs */
	int same_on_all_ranks;    /* inputs: the rank is left out of the key, so
				     every rank draws the same content (the
				     original seeded some inputs with rank 0) */
	struct pkb_tol tol;       /* outputs */
};

struct pkb_param_desc {
	char name[PKB_NAME_MAX];
	double value;
};

/* One problem instance: what describe() gets. */
struct pkb_dims {
	int world;
	int rank;        /* shapes may differ per rank (variable-length shards) */
	int64_t m, n;    /* the base shape */
	pkb_dtype dtype; /* the harness dtype */
	int trial;       /* a few problems change layout with the trial */
	uint64_t common_seed;   /* in gen_host only: the same on every rank, mixed
				   from --seed, the problem and the trial; for
				   structures the ranks must agree on (a routing's
				   split matrix) that still vary with --seed */
};

/* What describe() fills, through the pkb_io_* helpers below. */
struct pkb_io {
	int n_in, n_out, n_params;
	struct pkb_tensor_desc in[PKB_MAX_TENSORS];
	struct pkb_tensor_desc out[PKB_MAX_TENSORS];
	struct pkb_param_desc params[PKB_MAX_PARAMS];
	char err[160];   /* why describe() refused these dims */
};

/*
 * The cost model of one rank (docs/ROOFLINE.md): what the best possible
 * algorithm must do on this rank, whatever it is. Lower bounds, not
 * estimates of the reference: a term a clever algorithm could avoid is left
 * out.
 */
enum pkb_flop_kind {
	PKB_FLOPS_TENSOR,     /* matrix math at the problem's dtype (fp32: no TF32) */
	PKB_FLOPS_VECTOR,     /* element-wise fp32 math on the CUDA cores */
};

struct pkb_cost {
	double net_bytes;     /* bytes this rank must move over the interconnect in
			       * its busier direction: the larger of what it must
			       * receive and what it must send (links carry the same
			       * bandwidth each way) */
	double hbm_bytes;     /* bytes it must move through its own HBM; < 0: the
			       * harness uses its input bytes + the output bytes
			       * beyond one L2 (outputs may still sit in L2 when
			       * the call ends) */
	double flops;         /* floating-point operations it must do */
	enum pkb_flop_kind flop_kind;
	const char *note;     /* the algorithm the bound assumes, in a few words */
};

struct pkb_problem {
	int id;
	const char *name;        /* folder name without the id: "allreduce" */
	const char *title;
	const char *category;    /* "Collective Primitive", "Tensor Parallel", ... */
	const char *origin;      /* the system the problem comes from */
	uint64_t worlds;         /* bit W set: valid at world size W */
	/* Fill io for dims d; return 0, or -1 with io->err set when d is not a
	 * valid instance (a W the problem cannot split by, say). */
	int (*describe)(const struct pkb_dims *d, struct pkb_io *io);
	/* Fill input `index` (dist PKB_DIST_HOST) in host memory: structured
	 * inputs such as routings or graphs. `seed` is already mixed with the
	 * problem, trial, rank and tensor. May be NULL. */
	int (*gen_host)(const struct pkb_dims *d, int index, uint64_t seed,
			void *buf, size_t bytes);
	/* The cost model of rank d->rank at dims d (describe() accepted them);
	 * c arrives zeroed with hbm_bytes = -1. May be NULL (no roofline). */
	void (*cost)(const struct pkb_dims *d, struct pkb_cost *c);
};

#define PKB_WORLD(w) (1ull << (w))
/* every world size from 2 to 63 */
#define PKB_WORLDS_ANY (~0ull & ~3ull & ~(1ull << 63))

/* ---- helpers for describe() ---------------------------------------------- */

struct pkb_tensor_desc *pkb_io_input(struct pkb_io *io, const char *name, pkb_dtype t,
				     struct pkb_dist dist, int ndim, const int64_t *shape);
struct pkb_tensor_desc *pkb_io_output(struct pkb_io *io, const char *name, pkb_dtype t,
				      struct pkb_tol tol, int ndim, const int64_t *shape);
void pkb_io_param(struct pkb_io *io, const char *name, double value);
int pkb_io_fail(struct pkb_io *io, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define PKB_SHAPE(...) (sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), \
	((const int64_t[]){__VA_ARGS__})
#define PKB_NORMAL(mean, std) ((struct pkb_dist){ PKB_DIST_NORMAL, (mean), (std) })
#define PKB_UNIFORM(lo, hi)  ((struct pkb_dist){ PKB_DIST_UNIFORM, (lo), (hi) })
#define PKB_RANDINT(lo, hi)  ((struct pkb_dist){ PKB_DIST_RANDINT, (lo), (hi) })
#define PKB_HOSTGEN          ((struct pkb_dist){ PKB_DIST_HOST, 0, 0 })
#define PKB_TOL_DEFAULT      ((struct pkb_tol){ 0 })
#define PKB_TOL_EXACT        ((struct pkb_tol){ .exact = 1 })
/* a sum of `k` rounded terms, in any order (a reduction over k ranks) */
#define PKB_TOL_SUM(k)       ((struct pkb_tol){ .terms = (k) })
/* struct pkb_tol's scale_axis for dimension k */
#define PKB_SCALE_AXIS(k)    ((k) + 1)

/* ---- dtypes on the host, for describe() and gen_host --------------------- */
/* The harness's own (src/dtype.c), so that a problem rounds exactly as the
 * harness compares. */

/* 2^-8 bf16, 2^-11 fp16, 2^-24 fp32, 2^-53 fp64, fp8's; 0 for integers */
double pkb_dtype_unit_roundoff(pkb_dtype t);
/* element i of a float buffer of dtype t (fp32, fp64, bf16, fp16) = v,
 * rounded to nearest even */
void pkb_dtype_store(pkb_dtype t, void *buf, int64_t i, double v);
uint16_t pkb_float_to_bf16(float f);   /* round to nearest even */
float pkb_bf16_to_float(uint16_t h);
uint16_t pkb_float_to_fp16(float f);   /* round to nearest even, subnormals,
					  +-Inf past 65504 */
float pkb_fp16_to_float(uint16_t h);

/* v rounded to t and back, for bf16 and fp16 (any other t: v) */
static inline float pkb_round_to(pkb_dtype t, float v)
{
	return t == PKB_BF16 ? pkb_bf16_to_float(pkb_float_to_bf16(v))
	     : t == PKB_FP16 ? pkb_fp16_to_float(pkb_float_to_fp16(v)) : v;
}

/* sqrt without libm, x >= 0: Newton from above, 64 steps (tolerances) */
static inline double pkb_sqrt_pos(double x)
{
	double r = x > 1 ? x : 1;
	for (int i = 0; i < 64; i++)
		r = 0.5 * (r + x / r);
	return r;
}

/* ---- host random numbers, for gen_host ------------------------------------ */
/* splitmix64 (Steele, Lea and Flood 2014): the one generator behind every
 * problem's host inputs. What a problem draws is part of its inputs, so none
 * of these may change its arithmetic (every seed's inputs would change; the
 * dtype and the order of operations are part of the contract). */
#define PKB_RNG_GAMMA 0x9e3779b97f4a7c15ull   /* 2^64 over the golden ratio */

/* the splitmix64 finaliser of x + gamma: a hash of a key or a counter */
static inline uint64_t pkb_rng_mix(uint64_t x)
{
	x += PKB_RNG_GAMMA;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* the next draw of the stream whose state is *s */
static inline uint64_t pkb_rng_next(uint64_t *s)
{
	uint64_t x = *s;
	*s += PKB_RNG_GAMMA;
	return pkb_rng_mix(x);
}

/* the top 53 bits of a draw on the grid k 2^-53: uniform in [0, 1) */
static inline double pkb_rng_unit(uint64_t x)
{
	return (double)(x >> 11) * 0x1p-53;
}

/* the midpoints of that grid: uniform in (0, 1), safe under log() */
static inline double pkb_rng_open(uint64_t x)
{
	return ((double)(x >> 11) + 0.5) * 0x1p-53;
}

/* Box-Muller: N(0, 1) from u1 in (0, 1] and u2 in [0, 1) */
static inline double pkb_rng_box_muller(double u1, double u2)
{
	return sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
}

/* N(0, 1) from the next two draws of *s (u1 open, so log(u1) is finite) */
static inline double pkb_rng_normal(uint64_t *s)
{
	double u1 = pkb_rng_open(pkb_rng_next(s));
	double u2 = pkb_rng_unit(pkb_rng_next(s));
	return pkb_rng_box_muller(u1, u2);
}

#endif /* PKB_PROBLEM_H */
