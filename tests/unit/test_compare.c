/*
 * test_compare.c -- the tolerance model, tested on both sides
 * (docs/TOLERANCE.md): every correct way of adding a bf16 sum over W ranks
 * passes; every wrong result fails.
 */
#include "t.h"
#include "compare.h"
#include "dtype.h"
#include "pkb_problem.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define N 200000

static uint64_t rng = 0x1234567;
static double randn(void)
{
	/* Box-Muller on a xorshift stream: deterministic, good enough here */
	rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
	double u1 = ((rng >> 11) + 1) * 0x1p-53;
	rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
	double u2 = (rng >> 11) * 0x1p-53;
	return sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
}

static float rb(float v) { return bf16_to_float(float_to_bf16(v)); }

static float fp8(float v)
{
	/* round to e4m3's 3 mantissa bits (range is no concern at N(0,1)) */
	if (v == 0)
		return 0;
	int e;
	frexpf(v, &e);
	float q = ldexpf(1, e - 4);
	return rintf(v / q) * q;
}

static float x[8][N];
static uint16_t ref[N], cand[N];

/* NCCL's ring order: start after rank s, bf16 rounding after every add */
static void sum_ring(int W)
{
	for (int i = 0; i < N; i++) {
		int s = i % W;
		float acc = x[(s + 1) % W][i];
		for (int k = 2; k <= W; k++)
			acc = rb(acc + x[(s + k) % W][i]);
		ref[i] = float_to_bf16(acc);
	}
}

enum way { FP32_ONCE, REVERSED_BF16, PAIRWISE_BF16, ZEROS, LOCAL_ONLY, MISSING_RANK,
	   SHIFTED, ONE_WRONG, FP8_PARTIALS, ONE_NAN, ONE_INF, SCALED_3PCT };

static void sum_way(int W, enum way w)
{
	for (int i = 0; i < N; i++) {
		float acc = 0;
		switch (w) {
		case FP32_ONCE:
			for (int r = 0; r < W; r++)
				acc += x[r][i];
			break;
		case REVERSED_BF16:
			acc = x[W - 1][i];
			for (int r = W - 2; r >= 0; r--)
				acc = rb(acc + x[r][i]);
			break;
		case PAIRWISE_BF16: {
			float t[8];
			for (int r = 0; r < W; r++)
				t[r] = x[r][i];
			for (int step = 1; step < W; step *= 2)
				for (int r = 0; r + step < W; r += 2 * step)
					t[r] = rb(t[r] + t[r + step]);
			acc = t[0];
			break;
		}
		case ZEROS: acc = 0; break;
		case LOCAL_ONLY: acc = x[0][i]; break;
		case MISSING_RANK:
			for (int r = 0; r < W - 1; r++)
				acc += x[r][i];
			break;
		case SHIFTED:
			for (int r = 0; r < W; r++)
				acc += x[r][(i + 1) % N];
			break;
		case FP8_PARTIALS:
			for (int r = 0; r < W; r++)
				acc += fp8(x[r][i]);
			break;
		case SCALED_3PCT:
			for (int r = 0; r < W; r++)
				acc += x[r][i];
			acc *= 1.03f;
			break;
		default:
			for (int r = 0; r < W; r++)
				acc += x[r][i];
		}
		cand[i] = float_to_bf16(acc);
	}
	if (w == ONE_WRONG)
		cand[N / 2] = float_to_bf16(bf16_to_float(cand[N / 2]) + 0.5f);
	if (w == ONE_NAN)
		cand[17] = 0x7fc0;
	if (w == ONE_INF)
		cand[17] = 0x7f80;
}

static const char *way_name[] = { "fp32_once", "reversed", "pairwise", "zeros", "local_only",
	"missing_rank", "shifted", "one_wrong", "fp8_partials", "one_nan", "one_inf",
	"scaled_3pct" };

static int allclose_failures(void)
{
	int bad = 0;
	for (int i = 0; i < N; i++) {
		double r = bf16_to_float(ref[i]), c = bf16_to_float(cand[i]);
		if (fabs(r - c) > 1e-2 + 1e-2 * fabs(c))
			bad++;
	}
	return bad;
}

int main(void)
{
	for (int r = 0; r < 8; r++)
		for (int i = 0; i < N; i++)
			x[r][i] = rb((float)randn());

	int worlds[] = { 2, 4, 8 };
	for (size_t wi = 0; wi < 3; wi++) {
		int W = worlds[wi];
		sum_ring(W);
		struct cmp_result res;
		for (int w = FP32_ONCE; w <= SCALED_3PCT; w++) {
			sum_way(W, w);
			int good = w <= PAIRWISE_BF16;
			compare_buffers(PKB_BF16, ref, cand, N, PKB_TOL_SUM(W), &res);
			CHECKF(res.ok == good, "W=%d %s: ok=%d n_bad=%lld l2=%.3g (limit %.3g)",
			       W, way_name[w], res.ok, (long long)res.n_bad, res.l2_rel, res.l2_limit);
			if (w == FP32_ONCE && W == 4)
				/* the original's fixed allclose fails this correct kernel
				 * (37 of 200k elements at unit scale; 5% at GEMM scale) */
				CHECKF(allclose_failures() > 0, "allclose failures %d",
				       allclose_failures());
		}
	}

	/* the reference compared with itself passes, under every mode */
	sum_ring(4);
	struct cmp_result res;
	CHECK(compare_buffers(PKB_BF16, ref, ref, N, PKB_TOL_EXACT, &res));
	CHECK(compare_buffers(PKB_BF16, ref, ref, N, PKB_TOL_DEFAULT, &res));

	/* exact mode: one flipped bit fails, and the report names it */
	memcpy(cand, ref, sizeof ref);
	cand[1234] ^= 1;
	CHECK(!compare_buffers(PKB_BF16, ref, cand, N, PKB_TOL_EXACT, &res));
	CHECK(res.n_bad == 1 && res.worst == 1234);

	/* non-finite classes: NaN meets NaN, Inf must keep its sign */
	float a[4] = { NAN, INFINITY, -INFINITY, 1 }, b[4] = { NAN, INFINITY, -INFINITY, 1 };
	CHECK(compare_buffers(PKB_FP32, a, b, 4, PKB_TOL_DEFAULT, &res));
	b[1] = -INFINITY;
	CHECK(!compare_buffers(PKB_FP32, a, b, 4, PKB_TOL_DEFAULT, &res) && res.worst == 1);
	b[1] = INFINITY;
	b[3] = NAN;
	CHECK(!compare_buffers(PKB_FP32, a, b, 4, PKB_TOL_DEFAULT, &res) && res.worst == 3);

	/* integers are exact whatever the tolerance says; -0 equals +0 */
	int64_t ia[3] = { 1, 2, 3 }, ib[3] = { 1, 2, 4 };
	CHECK(!compare_buffers(PKB_I64, ia, ib, 3, PKB_TOL_SUM(8), &res) && res.worst == 2);
	float z0[1] = { 0.0f }, z1[1] = { -0.0f };
	CHECK(compare_buffers(PKB_FP32, z0, z1, 1, PKB_TOL_EXACT, &res));

	/* all-small outputs: the original's atol = 1e-2 passes anything below it,
	 * pkb's bound scales with the output */
	float s_ref[1000], s_bad[1000];
	for (int i = 0; i < 1000; i++) {
		s_ref[i] = (float)(randn() * 1e-4);
		s_bad[i] = -s_ref[i];
	}
	CHECK(!compare_buffers(PKB_FP32, s_ref, s_bad, 1000, PKB_TOL_DEFAULT, &res));
	CHECK(res.n_bad > 900);

	/* the look of a failure (pkb agent's feedback): never written, zeros,
	 * only this rank's slice right, partly written */
	memcpy(cand, ref, sizeof ref);
	CHECK(compare_buffers_own(PKB_BF16, ref, cand, N, PKB_TOL_DEFAULT, N / 4, N / 2, &res));
	CHECK(compare_look(&res) == NULL);
	memset(cand, 0xff, sizeof cand);
	CHECK(!compare_buffers(PKB_BF16, ref, cand, N, PKB_TOL_DEFAULT, &res));
	CHECK(res.n_bad_poison == N && !strcmp(compare_look(&res), "untouched"));
	memset(cand, 0, sizeof cand);
	CHECK(!compare_buffers(PKB_BF16, ref, cand, N, PKB_TOL_DEFAULT, &res));
	CHECK(res.n_zero == N && !strcmp(compare_look(&res), "zeros"));
	/* rank 1 of 4: its own quarter right, the peers' quarters untouched */
	memset(cand, 0xff, sizeof cand);
	memcpy(cand + N / 4, ref + N / 4, N / 4 * sizeof ref[0]);
	CHECK(!compare_buffers_own(PKB_BF16, ref, cand, N, PKB_TOL_DEFAULT, N / 4, N / 2, &res));
	CHECK(res.n_bad_own == 0 && res.n_bad == N - N / 4);
	CHECK(!strcmp(compare_look(&res), "local_only"));
	/* the same, as another rank sees it: not its slice that is right */
	CHECK(!compare_buffers_own(PKB_BF16, ref, cand, N, PKB_TOL_DEFAULT, 0, N / 4, &res));
	CHECK(!strcmp(compare_look(&res), "partly_untouched"));
	/* one wrong element inside a right output: nothing to say */
	memcpy(cand, ref, sizeof ref);
	cand[7] ^= 0x40;
	CHECK(!compare_buffers_own(PKB_BF16, ref, cand, N, PKB_TOL_EXACT, 0, N / 4, &res));
	CHECK(compare_look(&res) == NULL && res.n_bad == 1 && res.n_bad_own == 1);

	/* defaults */
	struct pkb_tol t = compare_tol_resolve(PKB_BF16, PKB_TOL_DEFAULT);
	CHECK(t.rtol == 0x1p-7 && t.terms == 1 && !t.exact);
	CHECK(compare_tol_resolve(PKB_I32, PKB_TOL_DEFAULT).exact);
	/* the whole-output bound's absolute floor: a 0-dim fp32 loss whose
	 * reference is 0 (or near it) accepts an error within atol, as its
	 * element bound does, and still fails one beyond it; with atol 0 the
	 * bound stays relative */
	{
		float ref0 = 0.0f, c1 = 3e-7f, c2 = 3e-5f, refs = 1e-6f, cs = 1.5e-6f;
		struct pkb_tol tol = { .atol = 1e-6 };
		struct cmp_result cr;
		CHECK(compare_buffers(PKB_FP32, &ref0, &c1, 1, tol, &cr) && !cr.l2_failed);
		CHECK(!compare_buffers(PKB_FP32, &ref0, &c2, 1, tol, &cr) && cr.n_bad == 1);
		CHECK(compare_buffers(PKB_FP32, &refs, &cs, 1, tol, &cr));
		CHECKF(cr.l2_limit > 1 && fabs(cr.l2_rel - 0.5) < 1e-3, "%g %g", cr.l2_rel, cr.l2_limit);
		struct pkb_tol rel = { .rtol = 1e-6 };
		CHECK(!compare_buffers(PKB_FP32, &ref0, &c1, 1, rel, &cr));
		/* many elements each inside atol, systematically: the floor is
		 * atol * sqrt(n), so a bias of 0.9 atol on a zero reference passes
		 * and an output biased by 10 x atol fails the element bound */
		static float z[1000], zb[1000];
		for (int i = 0; i < 1000; i++)
			zb[i] = 0.9e-6f;
		CHECK(compare_buffers(PKB_FP32, z, zb, 1000, tol, &cr));
		for (int i = 0; i < 1000; i++)
			zb[i] = 1e-5f;
		CHECK(!compare_buffers(PKB_FP32, z, zb, 1000, tol, &cr) && cr.n_bad == 1000);
	}
	/* float -> fp16 (gen_host's dtype_store), against the compiler's own
	 * _Float16 conversion (gcc; clang 14 lacks it on x86, hence ours) over
	 * a stride through every float bit pattern and every fp16 boundary */
	{
		int bad16 = 0;
		for (uint64_t k = 0; k <= 0xffffffffull && bad16 < 5; k += 997) {
			uint32_t bits = (uint32_t)k;
			float f;
			memcpy(&f, &bits, 4);
			_Float16 g = (_Float16)f;
			uint16_t want;
			memcpy(&want, &g, 2);
			uint16_t got = float_to_fp16(f);
			int both_nan = isnan(f) && (got & 0x7c00) == 0x7c00 && (got & 0x3ff);
			if (got != want && !both_nan) {
				bad16++;
				fprintf(stderr, "  fp16(%a): %04x, want %04x\n", f, got, want);
			}
		}
		for (uint32_t h = 0; h < 0x7c00 && bad16 < 5; h++) {
			/* each value, and the points halfway to its neighbours */
			float lo = fp16_to_float((uint16_t)h), hi = fp16_to_float((uint16_t)(h + 1));
			float pts[3] = { lo, (float)(((double)lo + hi) / 2), -lo };
			for (int q = 0; q < 3; q++) {
				_Float16 g = (_Float16)pts[q];
				uint16_t want;
				memcpy(&want, &g, 2);
				if (float_to_fp16(pts[q]) != want) {
					bad16++;
					fprintf(stderr, "  fp16(%a): %04x, want %04x\n", pts[q],
						float_to_fp16(pts[q]), want);
				}
			}
		}
		CHECK(bad16 == 0);
		uint16_t st[4];
		dtype_store(PKB_FP16, st, 0, 65504.0);
		dtype_store(PKB_FP16, st, 1, 1e6);
		dtype_store(PKB_BF16, st, 2, 1.0);
		dtype_store(PKB_FP16, st, 3, -5.960464477539063e-08);
		CHECK(st[0] == 0x7bff && st[1] == 0x7c00 && st[2] == 0x3f80 && st[3] == 0x8001);
	}
	/* a per-dimension scale (scale_axis): a (4, 2) fp32 output whose
	 * column 0 is ~1000 and column 1 ~1; terms 2^20 makes the slack
	 * 2^20 * 2^-24 * amax = amax / 16. An error of 0.5 in the small
	 * column hides under one amax (slack 62.5) but not under its column's
	 * own (slack 0.0625); one in the large column is judged alike (l2 set
	 * loose: the element bound is under test) */
	{
		struct pkb_io io;
		memset(&io, 0, sizeof io);
		struct pkb_tol one = { .terms = 1 << 20, .l2 = 1 }, tl = one;
		tl.scale_axis = PKB_SCALE_AXIS(1);
		struct pkb_tensor_desc *o = pkb_io_output(&io, "y", PKB_FP32, tl, PKB_SHAPE(4, 2));
		CHECK(o->tol.scale_len == 2 && o->tol.scale_stride == 1 && !io.err[0]);
		float ry[8] = { 1000, 1, 900, 1, 800, 1, 700, 1 }, cy[8];
		memcpy(cy, ry, sizeof cy);
		cy[3] += 0.5f;
		CHECK(compare_buffers(PKB_FP32, ry, cy, 8, one, &res));
		CHECK(!compare_buffers(PKB_FP32, ry, cy, 8, o->tol, &res) && res.worst == 3);
		CHECK(res.amax_ref == 1000);
		cy[3] = 1;
		cy[2] += 50;   /* inside column 0's own slack of 62.5 */
		CHECK(compare_buffers(PKB_FP32, ry, cy, 8, o->tol, &res));
		/* dimension 0 of (4, 2): stride 2, four groups */
		tl.scale_axis = PKB_SCALE_AXIS(0);
		o = pkb_io_output(&io, "z", PKB_FP32, tl, PKB_SHAPE(4, 2));
		CHECK(o->tol.scale_len == 4 && o->tol.scale_stride == 2);
		/* complex64: an element's two reals share its group */
		tl.scale_axis = PKB_SCALE_AXIS(1);
		o = pkb_io_output(&io, "c", PKB_C64, tl, PKB_SHAPE(1, 2));
		float rc[4] = { 1000, 1000, 1, 1 }, cc[4] = { 1000, 1000, 1, 1.5f };
		CHECK(!compare_buffers(PKB_C64, rc, cc, 2, o->tol, &res) && res.worst == 3);
		CHECK(compare_buffers(PKB_C64, rc, cc, 2, one, &res));
		/* an axis the shape lacks is the problem's error */
		tl.scale_axis = PKB_SCALE_AXIS(2);
		pkb_io_output(&io, "w", PKB_FP32, tl, PKB_SHAPE(4, 2));
		CHECKF(strstr(io.err, "output 'w': scale axis 2, but 2 dimensions") != NULL, "%s",
		       io.err);
	}
	return t_done("test_compare");
}
