/*
 * 061_gsplat_3d_gaussian_splatting reference: all-gather the cameras, project
 * every local Gaussian into every camera, compact the visible pairs camera
 * by camera (CUB scan), and exchange them with NCCL send/recv.
 *
 * Math (problem.c has it in full): per (camera c, Gaussian g), in fp32 from
 * the bf16 inputs, Sigma = (R S)(R S)^T, p = V mean + t, Sigma_c = V Sigma
 * V^T, cov = J Sigma_c J^T + eps2d I with the clamped Jacobian, conic =
 * adj(cov)/det, mean2d = K p / tz, radius = ceil(3.33 sqrt(diag cov)),
 * culled outside (near, far) or off the image. Rank r returns camera r's
 * visible pairs, source by source, Gaussians in order; gaussian_id = local
 * index + r n (the receiver's offset: the original's quirk), camera_id 0;
 * then rows with ids -1 and zeros up to W n, and the count.
 *
 * A packed row is 32 bytes (local index, radii, 10 bf16 values). Why
 * fixed-capacity messages: the original reads the per-camera counts on the
 * host (.item()) to size its all_to_all, which stalls the stream and cannot
 * be captured in a CUDA graph. Here each rank sends every peer its n-row
 * slab (only the first count rows meaningful) and the count in one NCCL
 * group: (W-1) n 32 bytes out, 320 KB a peer at n = 10^4, the reference's
 * worst case, at no host round trip.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <math.h>
#include <nccl.h>
#include <stdint.h>
#include <stdlib.h>
#include <cub/cub.cuh>
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_ref.cuh"

PKB_SOLUTION;

#define THREADS 256

enum { IN_MEANS, IN_QUATS, IN_SCALES, IN_OPAC, IN_COLORS, IN_VIEW, IN_K };
enum { OUT_CAM, OUT_GID, OUT_RADII, OUT_MEANS2D, OUT_DEPTHS, OUT_CONICS, OUT_OPAC,
       OUT_COLORS, OUT_COUNT };

struct row {
	int32_t g;                 /* local index */
	int32_t rx, ry;
	__nv_bfloat16 v[10];       /* mean2d x y, depth, conic 3, opacity, color 3 */
};

struct params {
	float w, h, eps2d, near, far;
};

struct state {
	__nv_bfloat16 *views, *ks;   /* [W][16], [W][9]: the gathered cameras */
	struct row *rows;            /* [W][n]: pair (c, g)'s row where visible */
	int *flag, *pos;             /* [W n]: visible, and its exclusive scan */
	struct row *send, *recv;     /* [W][n]: per-camera slabs */
	int *send_n, *recv_n;        /* [W] */
	void *temp;
	size_t temp_bytes;
};

/* The projection of pair (c, g); false when culled. */
__global__ void project(const __nv_bfloat16 *means, const __nv_bfloat16 *quats,
			const __nv_bfloat16 *scales, const __nv_bfloat16 *opac,
			const __nv_bfloat16 *colors, const __nv_bfloat16 *views,
			const __nv_bfloat16 *ks, struct params pr, struct row *rows, int *flag,
			int64_t n, int64_t pairs)
{
	for (int64_t p = blockIdx.x * (int64_t)THREADS + threadIdx.x; p < pairs;
	     p += (int64_t)gridDim.x * THREADS) {
		int64_t c = p / n, g = p - c * n;
		const __nv_bfloat16 *V = views + 16 * c, *K = ks + 9 * c;
		float q[4], s[3], m[3];
		for (int i = 0; i < 4; i++)
			q[i] = __bfloat162float(quats[4 * g + i]);
		for (int i = 0; i < 3; i++) {
			s[i] = __bfloat162float(scales[3 * g + i]);
			m[i] = __bfloat162float(means[3 * g + i]);
		}
		float qn = fmaxf(sqrtf(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]),
				 1e-12f);
		float w = q[0] / qn, x = q[1] / qn, y = q[2] / qn, z = q[3] / qn;
		float r[9] = {
			1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
			2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
			2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y),
		};
		float mm[9], sig[9], vs[9], sc[9], v[9], t[3], pc[3];
		for (int i = 0; i < 3; i++) {
			for (int j = 0; j < 3; j++) {
				mm[3 * i + j] = r[3 * i + j] * s[j];
				v[3 * i + j] = __bfloat162float(V[4 * i + j]);
			}
			t[i] = __bfloat162float(V[4 * i + 3]);
		}
		/* Sigma = M M^T, Sigma_c = V Sigma V^T, p = V mean + t */
		for (int i = 0; i < 3; i++)
			for (int j = 0; j < 3; j++)
				sig[3 * i + j] = mm[3 * i] * mm[3 * j] + mm[3 * i + 1] * mm[3 * j + 1] +
						 mm[3 * i + 2] * mm[3 * j + 2];
		for (int i = 0; i < 3; i++)
			for (int j = 0; j < 3; j++)
				vs[3 * i + j] = v[3 * i] * sig[j] + v[3 * i + 1] * sig[3 + j] +
						v[3 * i + 2] * sig[6 + j];
		for (int i = 0; i < 3; i++) {
			for (int j = 0; j < 3; j++)
				sc[3 * i + j] = vs[3 * i] * v[3 * j] + vs[3 * i + 1] * v[3 * j + 1] +
						vs[3 * i + 2] * v[3 * j + 2];
			pc[i] = v[3 * i] * m[0] + v[3 * i + 1] * m[1] + v[3 * i + 2] * m[2] + t[i];
		}
		float k[9];
		for (int i = 0; i < 9; i++)
			k[i] = __bfloat162float(K[i]);
		float tx = pc[0], ty = pc[1], tz = pc[2];
		float fx = k[0], fy = k[4], cx = k[2], cy = k[5];
		float tfx = 0.5f * pr.w / fx, tfy = 0.5f * pr.h / fy;
		float ux = fminf(fmaxf(tx / tz, -(cx / fx + 0.3f * tfx)), (pr.w - cx) / fx + 0.3f * tfx);
		float uy = fminf(fmaxf(ty / tz, -(cy / fy + 0.3f * tfy)), (pr.h - cy) / fy + 0.3f * tfy);
		float tz2 = tz * tz;
		/* J's rows: (fx/tz, 0, a) and (0, fy/tz, b) */
		float j00 = fx / tz, a = -fx * (tz * ux) / tz2, j11 = fy / tz, b = -fy * (tz * uy) / tz2;
		/* cov = J Sigma_c J^T */
		float u0 = sc[0] * j00 + sc[2] * a, u1 = sc[3] * j00 + sc[5] * a,
		      u2 = sc[6] * j00 + sc[8] * a;     /* Sigma_c J0^T */
		float w0 = sc[1] * j11 + sc[2] * b, w1 = sc[4] * j11 + sc[5] * b,
		      w2 = sc[7] * j11 + sc[8] * b;     /* Sigma_c J1^T */
		float c00 = j00 * u0 + a * u2 + pr.eps2d;
		float c01 = j00 * w0 + a * w2;
		float c10 = j11 * u1 + b * u2;
		float c11 = j11 * w1 + b * w2 + pr.eps2d;
		float det = fmaxf(c00 * c11 - c01 * c10, 1e-10f);
		float mx = (k[0] * tx + k[1] * ty + k[2] * tz) / tz;
		float my = (k[3] * tx + k[4] * ty + k[5] * tz) / tz;
		float rx = ceilf(3.33f * sqrtf(c00)), ry = ceilf(3.33f * sqrtf(c11));
		bool vis = tz > pr.near && tz < pr.far && mx + rx > 0 && mx - rx < pr.w &&
			   my + ry > 0 && my - ry < pr.h;
		flag[p] = vis;
		if (!vis)
			continue;
		struct row o;
		o.g = (int32_t)g;
		o.rx = (int32_t)rx;
		o.ry = (int32_t)ry;
		o.v[0] = __float2bfloat16(mx);
		o.v[1] = __float2bfloat16(my);
		o.v[2] = __float2bfloat16(tz);
		o.v[3] = __float2bfloat16(c11 / det);
		o.v[4] = __float2bfloat16(-(c01 + c10) / 2.0f / det);
		o.v[5] = __float2bfloat16(c00 / det);
		o.v[6] = opac[g];
		for (int i = 0; i < 3; i++)
			o.v[7 + i] = colors[3 * g + i];
		rows[p] = o;
	}
}

/* visible rows to their camera's slab, in Gaussian order; the counts */
__global__ void compact(const struct row *rows, const int *flag, const int *pos,
			struct row *send, int *send_n, int64_t n, int64_t pairs)
{
	for (int64_t p = blockIdx.x * (int64_t)THREADS + threadIdx.x; p < pairs;
	     p += (int64_t)gridDim.x * THREADS) {
		int64_t c = p / n, g = p - c * n;
		int base = pos[c * n];
		if (flag[p])
			send[c * n + pos[p] - base] = rows[p];
		if (g == n - 1)
			send_n[c] = pos[p] + flag[p] - base;
	}
}

/* the received slabs, source by source, into the outputs; padding after */
__global__ void unpack(const struct row *recv, const int *recv_n, int64_t *cam, int64_t *gid,
		       int32_t *radii, __nv_bfloat16 *means2d, __nv_bfloat16 *depths,
		       __nv_bfloat16 *conics, __nv_bfloat16 *opac, __nv_bfloat16 *colors,
		       int64_t *count, int64_t n, int rank, int world)
{
	int64_t cap = (int64_t)world * n;
	for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < cap;
	     i += (int64_t)gridDim.x * THREADS) {
		int64_t j = i, total = 0;
		int s = -1;
		for (int k = 0; k < world; k++) {
			if (s < 0 && j < recv_n[k])
				s = k;
			else if (s < 0)
				j -= recv_n[k];
			total += recv_n[k];
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
		struct row o = recv[s * n + j];
		cam[i] = 0;
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
	struct state *s;
	PKB_CK(pkb_ref_state(ctx, &s));
	int64_t n = ctx->in[IN_MEANS].shape[0], pairs = ctx->world * n;
	PKB_CK_CUDA(ctx, cub::DeviceScan::ExclusiveSum(NULL, s->temp_bytes, (int *)NULL,
							(int *)NULL, (int)pairs));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->views, ctx->world * 16 * sizeof(__nv_bfloat16)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->ks, ctx->world * 9 * sizeof(__nv_bfloat16)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->rows, pairs * sizeof(struct row)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->flag, pairs * sizeof(int)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->pos, pairs * sizeof(int)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->send, pairs * sizeof(struct row)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->recv, pairs * sizeof(struct row)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->send_n, ctx->world * sizeof(int)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->recv_n, ctx->world * sizeof(int)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->temp, s->temp_bytes));
	return 0;
}

static int run(pkb_ctx *ctx, struct state *s, cudaStream_t st, ncclComm_t comm)
{
	int world = ctx->world;
	int64_t n = ctx->in[IN_MEANS].shape[0], pairs = world * n;
	struct params pr = {
		.w = (float)pkb_param_get(ctx, "image_width", 512),
		.h = (float)pkb_param_get(ctx, "image_height", 512),
		.eps2d = (float)pkb_param_get(ctx, "eps2d", 0.3),
		.near = (float)pkb_param_get(ctx, "near_plane", 0.01),
		.far = (float)pkb_param_get(ctx, "far_plane", 1e10),
	};

	PKB_CK_NCCL(ctx, ncclGroupStart());
	PKB_CK_NCCL(ctx, ncclAllGather(ctx->in[IN_VIEW].data, s->views, 16, ncclBfloat16, comm, st));
	PKB_CK_NCCL(ctx, ncclAllGather(ctx->in[IN_K].data, s->ks, 9, ncclBfloat16, comm, st));
	PKB_CK_NCCL(ctx, ncclGroupEnd());

	unsigned grid = pkb_ref_blocks(pairs, THREADS, 1024);
	project<<<grid, THREADS, 0, st>>>(
		(const __nv_bfloat16 *)ctx->in[IN_MEANS].data,
		(const __nv_bfloat16 *)ctx->in[IN_QUATS].data,
		(const __nv_bfloat16 *)ctx->in[IN_SCALES].data,
		(const __nv_bfloat16 *)ctx->in[IN_OPAC].data,
		(const __nv_bfloat16 *)ctx->in[IN_COLORS].data, s->views, s->ks, pr, s->rows,
		s->flag, n, pairs);
	PKB_CK_LAUNCH(ctx);
	size_t tb = s->temp_bytes;
	PKB_CK_CUDA(ctx, cub::DeviceScan::ExclusiveSum(s->temp, tb, s->flag, s->pos, (int)pairs, st));
	compact<<<grid, THREADS, 0, st>>>(s->rows, s->flag, s->pos, s->send, s->send_n, n, pairs);
	PKB_CK_LAUNCH(ctx);

	/* camera c's slab and count to rank c; every source's to us */
	size_t slab = (size_t)n * sizeof(struct row);
	PKB_CK_NCCL(ctx, ncclGroupStart());
	for (int p = 0; p < world; p++) {
		PKB_CK_NCCL(ctx, ncclSend(s->send_n + p, 1, ncclInt32, p, comm, st));
		PKB_CK_NCCL(ctx, ncclRecv(s->recv_n + p, 1, ncclInt32, p, comm, st));
		PKB_CK_NCCL(ctx, ncclSend((char *)s->send + p * slab, slab, ncclUint8, p, comm, st));
		PKB_CK_NCCL(ctx, ncclRecv((char *)s->recv + p * slab, slab, ncclUint8, p, comm, st));
	}
	PKB_CK_NCCL(ctx, ncclGroupEnd());

	unpack<<<grid, THREADS, 0, st>>>(
		s->recv, s->recv_n, (int64_t *)ctx->out[OUT_CAM].data,
		(int64_t *)ctx->out[OUT_GID].data, (int32_t *)ctx->out[OUT_RADII].data,
		(__nv_bfloat16 *)ctx->out[OUT_MEANS2D].data,
		(__nv_bfloat16 *)ctx->out[OUT_DEPTHS].data,
		(__nv_bfloat16 *)ctx->out[OUT_CONICS].data,
		(__nv_bfloat16 *)ctx->out[OUT_OPAC].data,
		(__nv_bfloat16 *)ctx->out[OUT_COLORS].data, (int64_t *)ctx->out[OUT_COUNT].data,
		n, ctx->rank, world);
	PKB_CK_LAUNCH(ctx);
	return 0;
}

static void release(struct state *s)
{
	void *p[] = { s->views, s->ks, s->rows, s->flag, s->pos, s->send, s->recv, s->send_n,
		      s->recv_n, s->temp };
	for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
		cudaFree(p[i]);
}

PKB_REF_RUN_FINI(struct state, run, release)
