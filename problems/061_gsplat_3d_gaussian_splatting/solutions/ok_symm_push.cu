/*
 * 061_gsplat_3d_gaussian_splatting, known-good: publish the camera, project
 * and push each camera's visible rows straight into its owner's slot.
 *
 * 1. One block picks this call's half of the symmetric slot (pkb_call_half),
 *    stores this rank's camera there as fp32 and meets every rank.
 * 2. Block c (W blocks of 1024) reads camera c from rank c's slot, projects
 *    the n local Gaussians into it, 1024 at a time, and places the visible
 *    ones by a block-wide scan (ballots) in Gaussian order, writing each
 *    32-byte row into rank c's slot at [this rank][position] over NVLink;
 *    then the count, and block c meets block c of every rank: after it,
 *    rank c holds every source's rows for its camera.
 * 3. The local slot, source by source, into the outputs; ids -1 and zeros
 *    past the count.
 * The covariance in camera space is taken as (V R S)(V R S)^T, with fma: a
 *    different fp32 order than the reference's V ((R S)(R S)^T) V^T.
 *
 * Back to back: a peer writes a half again two calls later, after the
 * barrier of step 1 of that call, which this rank reaches only once its
 * step 3 of this call is done (stream order): no trailing barrier.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include "pkb.h"
#include "pkb_device.cuh"

PKB_SOLUTION;

#define THREADS 256
#define PROJ 1024            /* step 2's block: 32 warps, one Gaussian a thread */
#define CAM_BYTES 256        /* 16 + 9 fp32: the camera */

enum { IN_MEANS, IN_QUATS, IN_SCALES, IN_OPAC, IN_COLORS, IN_VIEW, IN_K };
enum { OUT_CAM, OUT_GID, OUT_RADII, OUT_MEANS2D, OUT_DEPTHS, OUT_CONICS, OUT_OPAC,
       OUT_COLORS, OUT_COUNT };

struct row {
	int32_t g;                 /* local index at the source */
	int32_t rx, ry;
	__nv_bfloat16 v[10];       /* mean2d x y, depth, conic 3, opacity, color 3 */
};

struct params {
	float w, h, eps2d, near, far;
};

/* a half: [camera][W counts][W][n rows] */
struct layout {
	size_t cnt, rows, half;
};

struct state {
	pkb_symm slot;
	struct layout lay;
	uint32_t *calls;
	size_t *off;               /* this call's half, for steps 2 and 3 */
};

__global__ void publish(pkb_dev_comm comm, const __nv_bfloat16 *view, const __nv_bfloat16 *k,
			char *const *slots, size_t half, uint32_t *calls, size_t *off_out)
{
	size_t off = pkb_call_half(calls, half);
	float *cam = (float *)(slots[comm.rank] + off);
	int t = threadIdx.x;
	if (t < 16)
		cam[t] = __bfloat162float(view[t]);
	else if (t < 25)
		cam[t] = __bfloat162float(k[t - 16]);
	if (t == 0)
		*off_out = off;
	pkb_barrier_block(comm, 0);
}

/* Gaussian g in camera (v, t, k): its row, and whether it is visible */
__device__ bool project_one(const __nv_bfloat16 *means, const __nv_bfloat16 *quats,
			    const __nv_bfloat16 *scales, const __nv_bfloat16 *opac,
			    const __nv_bfloat16 *colors, const float *cam, struct params pr,
			    int64_t g, struct row *o)
{
	float q[4], s[3], m[3];
	for (int i = 0; i < 4; i++)
		q[i] = __bfloat162float(quats[4 * g + i]);
	for (int i = 0; i < 3; i++) {
		s[i] = __bfloat162float(scales[3 * g + i]);
		m[i] = __bfloat162float(means[3 * g + i]);
	}
	float inv = 1.0f / fmaxf(sqrtf(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]),
				 1e-12f);
	float w = q[0] * inv, x = q[1] * inv, y = q[2] * inv, z = q[3] * inv;
	float r[9] = {
		1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
		2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
		2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y),
	};
	/* A = V R S: Sigma_c = A A^T; p = V mean + t */
	float a[9], p[3];
	for (int i = 0; i < 3; i++) {
		const float *vi = cam + 4 * i;
		for (int j = 0; j < 3; j++)
			a[3 * i + j] = fmaf(vi[0], r[j], fmaf(vi[1], r[3 + j], vi[2] * r[6 + j])) * s[j];
		p[i] = fmaf(vi[0], m[0], fmaf(vi[1], m[1], fmaf(vi[2], m[2], vi[3])));
	}
	float sc[9];
	for (int i = 0; i < 3; i++)
		for (int j = i; j < 3; j++)
			sc[3 * i + j] = sc[3 * j + i] =
				fmaf(a[3 * i], a[3 * j], fmaf(a[3 * i + 1], a[3 * j + 1],
							    a[3 * i + 2] * a[3 * j + 2]));
	const float *k = cam + 16;
	float tx = p[0], ty = p[1], tz = p[2];
	float fx = k[0], fy = k[4], cx = k[2], cy = k[5];
	float tfx = 0.5f * pr.w / fx, tfy = 0.5f * pr.h / fy;
	float ux = fminf(fmaxf(tx / tz, -(cx / fx + 0.3f * tfx)), (pr.w - cx) / fx + 0.3f * tfx);
	float uy = fminf(fmaxf(ty / tz, -(cy / fy + 0.3f * tfy)), (pr.h - cy) / fy + 0.3f * tfy);
	float rz = 1.0f / tz;
	/* J = [fx/tz, 0, ja; 0, fy/tz, jb], tx' = tz ux: -fx tx'/tz^2 = -fx ux/tz */
	float j0 = fx * rz, ja = -fx * ux * rz, j1 = fy * rz, jb = -fy * uy * rz;
	float c00 = j0 * j0 * sc[0] + 2 * j0 * ja * sc[2] + ja * ja * sc[8] + pr.eps2d;
	float c01 = j0 * j1 * sc[1] + j0 * jb * sc[2] + ja * j1 * sc[5] + ja * jb * sc[8];
	float c11 = j1 * j1 * sc[4] + 2 * j1 * jb * sc[5] + jb * jb * sc[8] + pr.eps2d;
	float det = fmaxf(c00 * c11 - c01 * c01, 1e-10f);
	float mx = (k[0] * tx + k[1] * ty + k[2] * tz) / tz;
	float my = (k[3] * tx + k[4] * ty + k[5] * tz) / tz;
	float rx = ceilf(3.33f * sqrtf(c00)), ry = ceilf(3.33f * sqrtf(c11));
	bool vis = tz > pr.near && tz < pr.far && mx + rx > 0 && mx - rx < pr.w &&
		   my + ry > 0 && my - ry < pr.h;
	o->g = (int32_t)g;
	o->rx = (int32_t)rx;
	o->ry = (int32_t)ry;
	o->v[0] = __float2bfloat16(mx);
	o->v[1] = __float2bfloat16(my);
	o->v[2] = __float2bfloat16(tz);
	o->v[3] = __float2bfloat16(c11 / det);
	o->v[4] = __float2bfloat16(-c01 / det);
	o->v[5] = __float2bfloat16(c00 / det);
	o->v[6] = opac[g];
	for (int i = 0; i < 3; i++)
		o->v[7 + i] = colors[3 * g + i];
	return vis;
}

__global__ void __launch_bounds__(PROJ)
project_push(pkb_dev_comm comm, const __nv_bfloat16 *means, const __nv_bfloat16 *quats,
	     const __nv_bfloat16 *scales, const __nv_bfloat16 *opac,
	     const __nv_bfloat16 *colors, char *const *slots, const size_t *off_p,
	     struct layout lay, struct params pr, int64_t n)
{
	__shared__ float cam[25];
	__shared__ int wsum[PROJ / 32];
	int c = blockIdx.x, t = threadIdx.x, lane = t & 31, warp = t >> 5;
	char *dst = slots[c] + *off_p;
	if (t < 25)
		cam[t] = ((const float *)dst)[t];
	__syncthreads();
	struct row *rows = (struct row *)(dst + lay.rows) + (int64_t)comm.rank * n;
	int base = 0;
	for (int64_t g0 = 0; g0 < n; g0 += PROJ) {
		int64_t g = g0 + t;
		struct row o;
		bool vis = g < n && project_one(means, quats, scales, opac, colors, cam, pr, g, &o);
		unsigned ball = __ballot_sync(0xffffffffu, vis);
		if (lane == 0)
			wsum[warp] = __popc(ball);
		__syncthreads();
		if (warp == 0) {
			int v = wsum[lane];
			for (int d = 1; d < 32; d <<= 1) {
				int u = __shfl_up_sync(0xffffffffu, v, d);
				if (lane >= d)
					v += u;
			}
			wsum[lane] = v;   /* inclusive */
		}
		__syncthreads();
		int before = (warp ? wsum[warp - 1] : 0) + __popc(ball & ((1u << lane) - 1));
		if (vis)
			rows[base + before] = o;
		base += wsum[PROJ / 32 - 1];
		__syncthreads();   /* wsum is rewritten next round */
	}
	if (t == 0)
		((int *)(dst + lay.cnt))[comm.rank] = base;
	pkb_barrier_block(comm, 1 + c);
}

__global__ void unpack(const char *mine, const size_t *off_p, struct layout lay,
		       int64_t *cam, int64_t *gid, int32_t *radii, __nv_bfloat16 *means2d,
		       __nv_bfloat16 *depths, __nv_bfloat16 *conics, __nv_bfloat16 *opac,
		       __nv_bfloat16 *colors, int64_t *count, int64_t n, int rank, int world)
{
	const char *h = mine + *off_p;
	const int *cnt = (const int *)(h + lay.cnt);
	const struct row *rows = (const struct row *)(h + lay.rows);
	int64_t cap = (int64_t)world * n;
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < cap;
	     i += (int64_t)gridDim.x * THREADS) {
		int64_t j = i, total = 0;
		int s = -1;
		for (int k = 0; k < world; k++) {
			int c = cnt[k];
			if (s < 0 && j < c)
				s = k;
			else if (s < 0)
				j -= c;
			total += c;
		}
		if (i == 0)
			*count = total;
		if (s < 0) {
			__nv_bfloat16 zero = __float2bfloat16(0.0f);
			cam[i] = -1;
			gid[i] = -1;
			radii[2 * i] = radii[2 * i + 1] = 0;
			means2d[2 * i] = means2d[2 * i + 1] = zero;
			depths[i] = zero;
			conics[3 * i] = conics[3 * i + 1] = conics[3 * i + 2] = zero;
			opac[i] = zero;
			colors[3 * i] = colors[3 * i + 1] = colors[3 * i + 2] = zero;
			continue;
		}
		struct row o = rows[s * n + j];
		cam[i] = 0;
		/* the receiver's offset, as the original */
		gid[i] = (int64_t)rank * n + o.g;
		radii[2 * i] = o.rx;
		radii[2 * i + 1] = o.ry;
		means2d[2 * i] = o.v[0];
		means2d[2 * i + 1] = o.v[1];
		depths[i] = o.v[2];
		for (int k = 0; k < 3; k++) {
			conics[3 * i + k] = o.v[3 + k];
			colors[3 * i + k] = o.v[7 + k];
		}
		opac[i] = o.v[6];
	}
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	struct state *s = (struct state *)calloc(1, sizeof *s);
	if (!s)
		return 1;
	ctx->user = s;
	int64_t n = ctx->in[IN_MEANS].shape[0];
	s->lay.cnt = CAM_BYTES;
	s->lay.rows = CAM_BYTES + ((size_t)ctx->world * sizeof(int) + 255) / 256 * 256;
	s->lay.half = s->lay.rows + (size_t)ctx->world * n * sizeof(struct row);
	if (ctx->svc->symm_alloc(ctx, 2 * s->lay.half, &s->slot))
		return 1;
	if (cudaMalloc(&s->calls, sizeof(uint32_t)) != cudaSuccess ||
	    cudaMalloc(&s->off, sizeof(size_t)) != cudaSuccess ||
	    cudaMemset(s->calls, 0, sizeof(uint32_t)) != cudaSuccess)
		return 1;
	return 0;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	cudaStream_t st = (cudaStream_t)ctx->stream;
	int world = ctx->world;
	int64_t n = ctx->in[IN_MEANS].shape[0];
	struct params pr = {
		.w = (float)pkb_param_get(ctx, "image_width", 512),
		.h = (float)pkb_param_get(ctx, "image_height", 512),
		.eps2d = (float)pkb_param_get(ctx, "eps2d", 0.3),
		.near = (float)pkb_param_get(ctx, "near_plane", 0.01),
		.far = (float)pkb_param_get(ctx, "far_plane", 1e10),
	};
	char *const *slots = (char *const *)s->slot.peers_dev;
	int meet = (world + 31) / 32 * 32;
	publish<<<1, meet < 32 ? 32 : meet, 0, st>>>(
		ctx->dev, (const __nv_bfloat16 *)ctx->in[IN_VIEW].data,
		(const __nv_bfloat16 *)ctx->in[IN_K].data, slots, s->lay.half, s->calls, s->off);
	project_push<<<world, PROJ, 0, st>>>(
		ctx->dev, (const __nv_bfloat16 *)ctx->in[IN_MEANS].data,
		(const __nv_bfloat16 *)ctx->in[IN_QUATS].data,
		(const __nv_bfloat16 *)ctx->in[IN_SCALES].data,
		(const __nv_bfloat16 *)ctx->in[IN_OPAC].data,
		(const __nv_bfloat16 *)ctx->in[IN_COLORS].data, slots, s->off, s->lay, pr, n);
	int64_t cap = world * n;
	unsigned grid = (unsigned)((cap + THREADS - 1) / THREADS);
	unpack<<<grid < 1024 ? grid : 1024, THREADS, 0, st>>>(
		(const char *)s->slot.local, s->off, s->lay, (int64_t *)ctx->out[OUT_CAM].data,
		(int64_t *)ctx->out[OUT_GID].data, (int32_t *)ctx->out[OUT_RADII].data,
		(__nv_bfloat16 *)ctx->out[OUT_MEANS2D].data,
		(__nv_bfloat16 *)ctx->out[OUT_DEPTHS].data,
		(__nv_bfloat16 *)ctx->out[OUT_CONICS].data,
		(__nv_bfloat16 *)ctx->out[OUT_OPAC].data,
		(__nv_bfloat16 *)ctx->out[OUT_COLORS].data, (int64_t *)ctx->out[OUT_COUNT].data,
		n, ctx->rank, world);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	struct state *s = (struct state *)ctx->user;
	if (s) {
		cudaFree(s->calls);
		cudaFree(s->off);
	}
	free(s);
	return 0;
}
