/*
 * 061_gsplat_3d_gaussian_splatting -- gsplat's distributed projection step:
 * every rank projects its Gaussians into every rank's camera, culls them,
 * and sends each camera's visible ones to the rank that owns the camera.
 *
 * Rank r holds n Gaussians (means (n,3), quats (n,4), scales (n,3),
 * opacities (n,), colors (n,3)) and one camera (viewmats (1,4,4), Ks
 * (1,3,3)), all bf16 (pinned, whatever --dtype). The cameras are
 * all-gathered (camera c = rank c's). For every Gaussian g and camera c, in
 * fp32 from the bf16 values:
 *     q = quat / max(|quat|, 1e-12), R = R(q), S = diag(scale)
 *     Sigma = (R S)(R S)^T;  V = viewmats[c][:3,:3], t = viewmats[c][:3,3]
 *     p = V mean + t = (tx, ty, tz);  Sigma_c = V Sigma V^T
 *     J = [fx/tz, 0, -fx tx'/tz^2; 0, fy/tz, -fy ty'/tz^2], tx' = tz *
 *         clamp(tx/tz, -(cx/fx + 0.3 tf_x), (w-cx)/fx + 0.3 tf_x), tf_x =
 *         0.5 w/fx (ty' alike with fy, cy, h)
 *     cov = J Sigma_c J^T + eps2d I;  det = max(cov00 cov11 - cov01 cov10, 1e-10)
 *     conic = (cov11, -(cov01 + cov10)/2, cov00) / det
 *     mean2d = (K[0,:] p, K[1,:] p) / tz;  depth = tz
 *     radius = (ceil(3.33 sqrt(cov00)), ceil(3.33 sqrt(cov11))), set to
 *         (0, 0) unless near < tz < far, then to (0, 0) unless the box
 *         mean2d +- radius overlaps the open image (0, w) x (0, h)
 * A pair is visible when both radii are > 0. Rank r returns the pairs of
 * camera r, source rank by source rank, each source's in Gaussian order:
 * camera_ids (0: the camera's index minus the receiver's camera offset),
 * gaussian_ids (the local index plus r n: the RECEIVER's Gaussian offset,
 * a quirk of the original, so ids of different sources collide), radii,
 * means2d, depths, conics, opacities and colors of the Gaussian.
 *
 * The row count K depends on the data and shapes cannot: every output has
 * the capacity W n rows (the most camera r can receive), the K visible
 * pairs first, then rows with ids -1 and every other field 0; a ninth
 * output `count` holds K. The original's inputs never cull anything (all
 * Gaussians in front of identical cameras, K = W n always): here gen_host
 * draws cameras that differ per rank and Gaussians of which a known share
 * is culled (gen_host's comment), every decision clear by a margin.
 *
 * Sizes as the original: n = clamp(M, 1000, 10000), w = clamp(N, 64, 512),
 * h = clamp(M, 64, 512).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "pkb_problem.h"

#define EPS2D 0.3
#define NEAR 0.01
#define FAR 1e10
#define CORE 0.6          /* the share of Gaussians visible in every camera */

static int64_t n_local(const struct pkb_dims *d)
{
	return d->m < 1000 ? 1000 : d->m > 10000 ? 10000 : d->m;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->m < 1 || d->n < 1)
		return pkb_io_fail(io, "M and N must be >= 1");
	int64_t n = n_local(d), cap = d->world * n;
	pkb_io_input(io, "means", PKB_BF16, PKB_HOSTGEN, PKB_SHAPE(n, 3));
	pkb_io_input(io, "quats", PKB_BF16, PKB_HOSTGEN, PKB_SHAPE(n, 4));
	pkb_io_input(io, "scales", PKB_BF16, PKB_HOSTGEN, PKB_SHAPE(n, 3));
	pkb_io_input(io, "opacities", PKB_BF16, PKB_UNIFORM(0.1, 0.9), PKB_SHAPE(n));
	pkb_io_input(io, "colors", PKB_BF16, PKB_UNIFORM(0, 1), PKB_SHAPE(n, 3));
	pkb_io_input(io, "viewmats", PKB_BF16, PKB_HOSTGEN, PKB_SHAPE(1, 4, 4));
	pkb_io_input(io, "Ks", PKB_BF16, PKB_HOSTGEN, PKB_SHAPE(1, 3, 3));
	pkb_io_param(io, "image_width", (double)clamp64(d->n, 64, 512));
	pkb_io_param(io, "image_height", (double)clamp64(d->m, 64, 512));
	pkb_io_param(io, "eps2d", EPS2D);
	pkb_io_param(io, "near_plane", NEAR);
	pkb_io_param(io, "far_plane", FAR);
	pkb_io_param(io, "camera_model", 0);   /* "pinhole", the only one */

	/*
	 * Ids, radii, opacities, colors and the count: exact. Ids and the
	 * copied values are moved, not computed. A radius is the ceil of an
	 * fp32 value and the culling compares fp32 values: gen_host keeps every
	 * 3.33 sqrt(cov) at least 0.02 from an integer, every edge of the box
	 * mean2d +- radius at least 0.05 px from the image's, every depth out
	 * of (-0.1, 0.5), so any fp32 order (or fp64) decides alike. Host
	 * simulation (W = 2, 4, 8; four shapes; 2.5M pairs; two fp32 orders
	 * against fp64): the ceil arguments differ by at most 3.3e-5 (600
	 * times under the margin), the box edges by 3.5e-4 px (140 times), no
	 * decision and no radius changes.
	 * means2d, depths, conics: fp32 results rounded once to bf16: the
	 * default (one ulp, and u amax for the cancellation in mean2d =
	 * (f tx + c tz)/tz and in the conic's off-diagonal). The host
	 * simulation of another fp32 order (Sigma_c as (V R S)(V R S)^T, with
	 * fma) uses at most 0.53 of the bound (conics; means2d and depths come
	 * out equal), l2 under 1e-4 (limit 0.011).
	 */
	pkb_io_output(io, "camera_ids", PKB_I64, PKB_TOL_EXACT, PKB_SHAPE(cap));
	pkb_io_output(io, "gaussian_ids", PKB_I64, PKB_TOL_EXACT, PKB_SHAPE(cap));
	pkb_io_output(io, "radii", PKB_I32, PKB_TOL_EXACT, PKB_SHAPE(cap, 2));
	pkb_io_output(io, "means2d", PKB_BF16, PKB_TOL_DEFAULT, PKB_SHAPE(cap, 2));
	pkb_io_output(io, "depths", PKB_BF16, PKB_TOL_DEFAULT, PKB_SHAPE(cap));
	pkb_io_output(io, "conics", PKB_BF16, PKB_TOL_DEFAULT, PKB_SHAPE(cap, 3));
	pkb_io_output(io, "opacities", PKB_BF16, PKB_TOL_EXACT, PKB_SHAPE(cap));
	pkb_io_output(io, "colors", PKB_BF16, PKB_TOL_EXACT, PKB_SHAPE(cap, 3));
	pkb_io_output(io, "count", PKB_I64, PKB_TOL_EXACT, 0, (int64_t[]){ 0 });
	return 0;
}

/* ---- the scene ---------------------------------------------------------------- */

/* uniform in (0, 1), both of Box-Muller's draws too */
static double unit(uint64_t *s)
{
	return pkb_rng_open(pkb_rng_next(s));
}

static double gauss(uint64_t *s)
{
	double u1 = unit(s), u2 = unit(s);
	return pkb_rng_box_muller(u1, u2);
}

/* v rounded to bf16, as the input holds it */
static double bf(double v)
{
	return pkb_bf16_to_float(pkb_float_to_bf16((float)v));
}

struct cam {
	double v[16];   /* viewmat, row-major */
	double k[9];
};

/*
 * Camera c, the same on every rank (from d->common_seed): a rotation of up
 * to 0.1 rad in yaw and pitch and 0.3 in roll, a shift of up to 0.1 along
 * each axis, focal 0.8 min(w, h) (the original's) times 0.9 .. 1.1, the
 * principal point within 5% of the image's centre. Rounded to bf16.
 */
static void camera(const struct pkb_dims *d, int c, struct cam *o)
{
	uint64_t s = d->common_seed ^ (0x61c0ffee00000000ull + (uint64_t)c * 0x9e37ull);
	pkb_rng_next(&s);
	double yaw = 0.2 * (unit(&s) - 0.5), pitch = 0.2 * (unit(&s) - 0.5);
	double roll = 0.6 * (unit(&s) - 0.5);
	double cy_ = cos(yaw), sy = sin(yaw), cp = cos(pitch), sp = sin(pitch);
	double cr = cos(roll), sr = sin(roll);
	/* Rz(roll) Rx(pitch) Ry(yaw) */
	double ry[9] = { cy_, 0, sy, 0, 1, 0, -sy, 0, cy_ };
	double rx[9] = { 1, 0, 0, 0, cp, -sp, 0, sp, cp };
	double rz[9] = { cr, -sr, 0, sr, cr, 0, 0, 0, 1 };
	double a[9], r[9];
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++) {
			a[3 * i + j] = 0;
			for (int k = 0; k < 3; k++)
				a[3 * i + j] += rx[3 * i + k] * ry[3 * k + j];
		}
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++) {
			r[3 * i + j] = 0;
			for (int k = 0; k < 3; k++)
				r[3 * i + j] += rz[3 * i + k] * a[3 * k + j];
		}
	memset(o, 0, sizeof *o);
	for (int i = 0; i < 3; i++) {
		for (int j = 0; j < 3; j++)
			o->v[4 * i + j] = bf(r[3 * i + j]);
		o->v[4 * i + 3] = bf(0.2 * (unit(&s) - 0.5));
	}
	o->v[15] = 1;
	double w = (double)clamp64(d->n, 64, 512), h = (double)clamp64(d->m, 64, 512);
	double f = 0.8 * (w < h ? w : h) * (0.9 + 0.2 * unit(&s));
	o->k[0] = bf(f);
	o->k[4] = bf(f);
	o->k[2] = bf(w * (0.45 + 0.1 * unit(&s)));
	o->k[5] = bf(h * (0.45 + 0.1 * unit(&s)));
	o->k[8] = 1;
}

/* The projection of one Gaussian into one camera, in fp64. a[0], a[1]: the
 * arguments of the two ceils; box[4]: mean2d.x + rx, w - (mean2d.x - rx),
 * and the same in y (the culling needs all four > 0). */
struct proj {
	double depth, a[2], box[4];
	int rx, ry;
};

static void project(const double *m, const double *q4, const double *sc, const struct cam *c,
		    double w, double h, struct proj *o)
{
	double qn = sqrt(q4[0] * q4[0] + q4[1] * q4[1] + q4[2] * q4[2] + q4[3] * q4[3]);
	qn = qn > 1e-12 ? qn : 1e-12;
	double qw = q4[0] / qn, x = q4[1] / qn, y = q4[2] / qn, z = q4[3] / qn;
	double r[9] = {
		1 - 2 * (y * y + z * z), 2 * (x * y - qw * z), 2 * (x * z + qw * y),
		2 * (x * y + qw * z), 1 - 2 * (x * x + z * z), 2 * (y * z - qw * x),
		2 * (x * z - qw * y), 2 * (y * z + qw * x), 1 - 2 * (x * x + y * y),
	};
	double mm[9], sig[9], vs[9], sc_[9], p[3];
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++)
			mm[3 * i + j] = r[3 * i + j] * sc[j];
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++) {
			sig[3 * i + j] = 0;
			for (int k = 0; k < 3; k++)
				sig[3 * i + j] += mm[3 * i + k] * mm[3 * j + k];
		}
	for (int i = 0; i < 3; i++) {
		p[i] = c->v[4 * i + 3];
		for (int k = 0; k < 3; k++)
			p[i] += c->v[4 * i + k] * m[k];
	}
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++) {
			vs[3 * i + j] = 0;
			for (int k = 0; k < 3; k++)
				vs[3 * i + j] += c->v[4 * i + k] * sig[3 * k + j];
		}
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++) {
			sc_[3 * i + j] = 0;
			for (int k = 0; k < 3; k++)
				sc_[3 * i + j] += vs[3 * i + k] * c->v[4 * j + k];
		}
	double tx = p[0], ty = p[1], tz = p[2];
	double fx = c->k[0], fy = c->k[4], cx = c->k[2], cy = c->k[5];
	double tfx = 0.5 * w / fx, tfy = 0.5 * h / fy;
	double lxp = (w - cx) / fx + 0.3 * tfx, lxn = cx / fx + 0.3 * tfx;
	double lyp = (h - cy) / fy + 0.3 * tfy, lyn = cy / fy + 0.3 * tfy;
	double ux = tx / tz, uy = ty / tz;
	ux = ux < -lxn ? -lxn : ux > lxp ? lxp : ux;
	uy = uy < -lyn ? -lyn : uy > lyp ? lyp : uy;
	double j0[3] = { fx / tz, 0, -fx * (tz * ux) / (tz * tz) };
	double j1[3] = { 0, fy / tz, -fy * (tz * uy) / (tz * tz) };
	double c00 = 0, c11 = 0;
	for (int i = 0; i < 3; i++)
		for (int k = 0; k < 3; k++) {
			c00 += j0[i] * sc_[3 * i + k] * j0[k];
			c11 += j1[i] * sc_[3 * i + k] * j1[k];
		}
	c00 += EPS2D;
	c11 += EPS2D;
	double mx = (c->k[0] * tx + c->k[1] * ty + c->k[2] * tz) / tz;
	double my = (c->k[3] * tx + c->k[4] * ty + c->k[5] * tz) / tz;
	o->depth = tz;
	o->a[0] = 3.33 * sqrt(c00);
	o->a[1] = 3.33 * sqrt(c11);
	o->rx = (int)ceil(o->a[0]);
	o->ry = (int)ceil(o->a[1]);
	o->box[0] = mx + o->rx;
	o->box[1] = w - (mx - o->rx);
	o->box[2] = my + o->ry;
	o->box[3] = h - (my - o->ry);
}

/* Visible (1), culled (0), or too close to a decision to be sure (-1). */
static int classify(const struct proj *p)
{
	if (p->depth > -0.1 && p->depth < 0.5)
		return -1;
	if (p->depth < 0)
		return 0;
	for (int i = 0; i < 2; i++) {
		double f = p->a[i] - floor(p->a[i]);
		if (f < 0.02 || f > 0.98)
			return -1;
	}
	int in = 1;
	for (int i = 0; i < 4; i++) {
		if (fabs(p->box[i]) < 0.05)
			return -1;
		in &= p->box[i] > 0;
	}
	return in;
}

/*
 * The n Gaussians of rank d->rank (from d->common_seed and the rank: the
 * three tensors are drawn together). Quats and scales are the original's
 * (randn; U(0, 0.02)); means come in three kinds:
 *   60% the original's box, x, y in [-0.75, 0.75), z in [2, 4), and drawn
 *       again until visible in every camera;
 *   15% behind the cameras, x, y in [-1, 1), z in [-3, -0.5): culled by depth;
 *   25% to the side, |x| in [0.75, 3), y in [-1.5, 1.5), z in [0.5, 4):
 *       in some cameras' images, out of others' (about 2/3 of the pairs
 *       culled).
 * The kinds come in these exact shares, shuffled. A Gaussian any of whose
 * projections is too close to a decision (classify) is drawn again, in its
 * kind. At M = N = 1024 this culls ~32% of the pairs (20% at h = 64), the
 * cameras' counts a few percent apart.
 */
static int gaussians(const struct pkb_dims *d, double *means, double *quats, double *scales)
{
	int64_t n = n_local(d);
	int world = d->world;
	double w = (double)clamp64(d->n, 64, 512), h = (double)clamp64(d->m, 64, 512);
	struct cam cams[64];
	if (world > 64)
		return -1;
	for (int c = 0; c < world; c++)
		camera(d, c, &cams[c]);
	uint64_t s = d->common_seed ^ (0x6105eed000000000ull + (uint64_t)d->rank * 0x9e3779b1ull);
	pkb_rng_next(&s);
	/* the kinds in exact shares, shuffled: a redraw keeps its kind, so
	 * the core share stays 60% whatever the cameras reject */
	unsigned char *kinds = malloc((size_t)n);
	if (!kinds)
		return -1;
	int64_t core = (int64_t)ceil(CORE * (double)n), behind = (int64_t)(0.15 * (double)n);
	for (int64_t g = 0; g < n; g++)
		kinds[g] = g < core ? 0 : g < core + behind ? 1 : 2;
	for (int64_t g = n - 1; g > 0; g--) {
		int64_t k = (int64_t)(pkb_rng_next(&s) % (uint64_t)(g + 1));
		unsigned char t = kinds[g];
		kinds[g] = kinds[k];
		kinds[k] = t;
	}
	for (int64_t g = 0; g < n; g++) {
		double m[3], q[4], sc[3];
		int tries = 0, ok = 0, kind = kinds[g];
		while (!ok) {
			if (++tries > 10000) {
				free(kinds);
				return -1;
			}
			if (kind == 0) {
				m[0] = 1.5 * (unit(&s) - 0.5);
				m[1] = 1.5 * (unit(&s) - 0.5);
				m[2] = 2 + 2 * unit(&s);
			} else if (kind == 1) {
				m[0] = 2 * (unit(&s) - 0.5);
				m[1] = 2 * (unit(&s) - 0.5);
				m[2] = -3 + 2.5 * unit(&s);
			} else {
				double side = unit(&s) < 0.5 ? -1 : 1;
				m[0] = side * (0.75 + 2.25 * unit(&s));
				m[1] = 3 * (unit(&s) - 0.5);
				m[2] = 0.5 + 3.5 * unit(&s);
			}
			double qn = 0;
			for (int i = 0; i < 4; i++) {
				q[i] = bf(gauss(&s));
				qn += q[i] * q[i];
			}
			for (int i = 0; i < 3; i++) {
				m[i] = bf(m[i]);
				sc[i] = bf(0.02 * unit(&s));
			}
			if (qn < 0.01)
				continue;
			ok = 1;
			for (int c = 0; c < world && ok; c++) {
				struct proj p;
				project(m, q, sc, &cams[c], w, h, &p);
				int v = classify(&p);
				ok = v >= 0 && (kind != 0 || v == 1);
			}
		}
		for (int i = 0; i < 3; i++) {
			if (means)
				means[3 * g + i] = m[i];
			if (scales)
				scales[3 * g + i] = sc[i];
		}
		for (int i = 0; quats && i < 4; i++)
			quats[4 * g + i] = q[i];
	}
	free(kinds);
	return 0;
}

static int gen_host(const struct pkb_dims *d, int index, uint64_t seed, void *buf, size_t bytes)
{
	(void)seed;   /* drawn from d->common_seed: the cameras are shared */
	int64_t n = n_local(d);
	const int64_t per[7] = { 3, 4, 3, 1, 3, 16, 9 };
	if (index < 0 || index > 6 || index == 3 || index == 4)
		return -1;
	int64_t count = index < 5 ? n * per[index] : per[index];
	if (bytes != (size_t)count * 2)
		return -1;
	if (index >= 5) {
		struct cam c;
		camera(d, d->rank, &c);
		for (int64_t i = 0; i < count; i++)
			pkb_dtype_store(PKB_BF16, buf, i, index == 5 ? c.v[i] : c.k[i]);
		return 0;
	}
	double *v = malloc((size_t)count * sizeof *v);
	if (!v)
		return -1;
	int rc = gaussians(d, index == 0 ? v : NULL, index == 1 ? v : NULL,
			   index == 2 ? v : NULL);
	for (int64_t i = 0; rc == 0 && i < count; i++)
		pkb_dtype_store(PKB_BF16, buf, i, v[i]);
	free(v);
	return rc;
}

/*
 * Camera r's visible pairs must reach rank r: at least the core 60% of each
 * peer's n Gaussians, in some form -- the 28 bytes of a Gaussian's inputs
 * (to project at the receiver) or the 30 of a projected row (radii as int16,
 * mean2d, depth, conic, opacity, color, a 2-byte index) -- so at least
 * 0.6 (W-1) n 28 bytes arrive (and as many leave). HBM: the default. FLOPs:
 * W n projections (whichever rank does them), ~150 fp32 operations each
 * (two 3x3 congruences, the Jacobian, the conic); the covariance once per
 * Gaussian is left out.
 */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double n = (double)n_local(d), w = d->world;
	c->net_bytes = CORE * (w - 1) * n * 28;
	c->flops = 150 * w * n;
	c->flop_kind = PKB_FLOPS_VECTOR;
	c->note = "each peer's visible Gaussians (at least 60%), 28 bytes each";
}

const struct pkb_problem pkb_problem_061 = {
	.id = 61,
	.name = "gsplat_3d_gaussian_splatting",
	.title = "Distributed 3D Gaussian projection + per-camera redistribution",
	.category = "Geometric / Spatial",
	.origin = "gsplat distributed rasterization (fully_fused_projection + all_to_all)",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.gen_host = gen_host,
	.cost = cost,
};
