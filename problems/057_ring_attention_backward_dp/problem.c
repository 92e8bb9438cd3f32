/*
 * 057_ring_attention_backward_dp -- the backward of (non-causal) ring
 * attention over a context-parallel group, then the gradients averaged
 * over a data-parallel pair (Megatron "cp-dp" order).
 *
 * dp = 2, cp = W/2 (W even); rank = dp_idx*cp + cp_idx. The CP group of a
 * replica is its cp consecutive ranks; the DP pair of cp_idx c is {c,
 * c+cp}. B = max(1, M/64), T = max(1, N/64), S = max(1, T/cp), 8 heads of
 * 64. Every rank holds its own dout, q, k, v (B, S, 8, 64) in the dtype T
 * (the original seeds them by (dp_rank, cp_rank)), and out (B, S, 8, 64)
 * T and softmax_lse (B, 8, S) fp32 computed from its LOCAL q, k, v only
 * (full attention within its own block, the original's quirk: not the
 * ring's forward). With scale = 1/8 and everything fp32, for every block j
 * of its CP group (the original's ring: K, V travel, and the dK, dV
 * accumulators travel with them back to their owner):
 *     P   = exp(q k_j^T * scale - lse)        (this rank's lse: no renormalising)
 *     dP  = dout v_j^T,  D = rowsum(dout * out),  dS = P * (dP - D)
 *     dq += dS k_j * scale                    (over the blocks in ring order)
 *     dk_j += dS^T q * scale,  dv_j += P^T dout   (summed over the CP group's
 *                                                  queries, at block j's owner)
 * then dq, dk, dv are cast to T, SUM all-reduced over the DP pair in T and
 * divided by 2 in T. Returns dq, dk, dv (B, S, 8, 64) T. At W = 2 (cp = 1)
 * the backward is local.
 *
 * out and softmax_lse are computed on the host (gen_host, in double from
 * the T inputs): B*S^2 <= 2^20 keeps that under a second.
 *
 * Minimum traffic per rank: the DP average of three (B, S, 8, 64)
 * tensors, 3X each way (X = B*S*8*64, two ranks); with cp > 1 the
 * blocks' K, V in or the final dK, dV of its own block from elsewhere,
 * >= 2X more in.
 */
#include <math.h>
#include <stdlib.h>
#include "pkb_problem.h"
#include "ring_host.h"
/* defines: HEADS, HEAD_DIM, struct ring_dims, attn_dims, next, normal, attn_check */

#define DP 2

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	struct ring_dims g;
	if (attn_check(d, io) < 0)
		return -1;
	if (d->world % DP)
		return pkb_io_fail(io, "W = %d is odd: dp = 2 needs an even W", d->world);
	attn_dims(d, &g);
	if (g.b * g.s * g.s > (1 << 20))
		return pkb_io_fail(io, "B*S^2 = %lld > 2^20 (out and softmax_lse are computed on "
				   "the host)", (long long)(g.b * g.s * g.s));
	int64_t x[] = { g.b, g.s, HEADS, HEAD_DIM };
	/* all from gen_host: out and softmax_lse are functions of q, k, v */
	pkb_io_input(io, "dout", d->dtype, PKB_HOSTGEN, 4, x);
	pkb_io_input(io, "q", d->dtype, PKB_HOSTGEN, 4, x);
	pkb_io_input(io, "k", d->dtype, PKB_HOSTGEN, 4, x);
	pkb_io_input(io, "v", d->dtype, PKB_HOSTGEN, 4, x);
	pkb_io_input(io, "out", d->dtype, PKB_HOSTGEN, 4, x);
	pkb_io_input(io, "softmax_lse", PKB_FP32, PKB_HOSTGEN, PKB_SHAPE(g.b, HEADS, g.s));
	pkb_io_param(io, "softmax_scale", 0.125);
	pkb_io_param(io, "causal", 0);
	/* the original's cp_group and dp_group, by their sizes (layout above) */
	pkb_io_param(io, "cp_size", (double)g.cp);
	pkb_io_param(io, "dp_size", DP);

	/*
	 * Each gradient is T(T(a) + T(b)) / 2 over the DP pair: a sum of two
	 * rounded terms (2; a candidate may add fp32 partials and round once),
	 * each the fp32 sum over the CP group's blocks of products of P and
	 * dS, which a tensor-core kernel rounds to T (flash-attention's
	 * backward: 2 more), with fp32 sums in any order over the 64 products
	 * of a score or dP and the Tg = cp*S keys or queries: terms = 4 + (Tg
	 * + 64) 2^-24/u. Host simulation (numpy; bf16, fp16, fp32; W = 2, 4,
	 * 8; S = 4 to 64): P and dS in T need <= 1.14 terms, fp32 DP partials
	 * 0.81, all blocks at once (another order) 0.19 in bf16 and 5.9 in
	 * fp32; l2 <= 0.95 u (limit 4.5 u). Wrong results need >= 254 terms in
	 * bf16 (2050 fp16, 1.7e7 fp32): the DP sum not divided by 2 254+, no
	 * DP average (this replica's gradients) 256+, local data only 256+,
	 * dK, dV left on the rank that holds the accumulator last (not
	 * returned to their owner) 348+ at W >= 4.
	 */
	double u = pkb_dtype_unit_roundoff(d->dtype);
	double terms = 4 + (double)(g.cp * g.s + HEAD_DIM) * 0x1p-24 / u;
	pkb_io_output(io, "dq", d->dtype, PKB_TOL_SUM(terms), 4, x);
	pkb_io_output(io, "dk", d->dtype, PKB_TOL_SUM(terms), 4, x);
	pkb_io_output(io, "dv", d->dtype, PKB_TOL_SUM(terms), 4, x);
	return 0;
}

/* dout, q, k, v: N(0, 1) in T from (common_seed, rank, tensor); out and
 * softmax_lse: the full attention of the rank's q over its own k, v, in
 * double from the T values (the original's fp32 matmuls and logsumexp),
 * rounded to T and fp32 */
static int draw(const struct pkb_dims *d, int index, float *v, size_t n)
{
	uint64_t st = pkb_rng_mix(d->common_seed ^ pkb_rng_mix(((uint64_t)index << 32) | (uint64_t)d->rank));
	for (size_t i = 0; i < n; i++)
		v[i] = pkb_round_to(d->dtype, (float)normal(&st));
	return 0;
}

static int gen_host(const struct pkb_dims *d, int index, uint64_t seed, void *buf, size_t bytes)
{
	struct ring_dims g;
	attn_dims(d, &g);
	(void)seed;
	size_t n = (size_t)(g.b * g.s * HEADS * HEAD_DIM), e = pkb_dtype_size(d->dtype);
	if (index < 0 || index > 5 || bytes != (index == 5 ? n / HEAD_DIM * 4 : n * e))
		return -1;
	if (index < 4) {
		float *v = malloc(n * sizeof *v);
		if (!v)
			return -1;
		draw(d, index, v, n);
		for (size_t i = 0; i < n; i++)
			pkb_dtype_store(d->dtype, buf, i, v[i]);
		free(v);
		return 0;
	}
	float *q = malloc(n * sizeof *q), *k = malloc(n * sizeof *k), *v = malloc(n * sizeof *v);
	double *p = malloc((size_t)g.s * sizeof *p);
	int rc = -1;
	if (!q || !k || !v || !p)
		goto out;
	draw(d, 1, q, n);
	draw(d, 2, k, n);
	draw(d, 3, v, n);
	int64_t ts = HEADS * HEAD_DIM;
	for (int64_t b = 0; b < g.b; b++)
		for (int64_t h = 0; h < HEADS; h++)
			for (int64_t i = 0; i < g.s; i++) {
				const float *qi = q + (b * g.s + i) * ts + h * HEAD_DIM;
				double mx = -INFINITY, l = 0;
				for (int64_t j = 0; j < g.s; j++) {
					const float *kj = k + (b * g.s + j) * ts + h * HEAD_DIM;
					double dot = 0;
					for (int c = 0; c < HEAD_DIM; c++)
						dot += (double)qi[c] * kj[c];
					p[j] = dot * 0.125;
					mx = p[j] > mx ? p[j] : mx;
				}
				for (int64_t j = 0; j < g.s; j++)
					l += p[j] = exp(p[j] - mx);
				if (index == 5) {
					((float *)buf)[(b * HEADS + h) * g.s + i] = (float)(mx + log(l));
					continue;
				}
				for (int c = 0; c < HEAD_DIM; c++) {
					double o = 0;
					for (int64_t j = 0; j < g.s; j++)
						o += p[j] * v[(b * g.s + j) * ts + h * HEAD_DIM + c];
					pkb_dtype_store(d->dtype, buf, ((b * g.s + i) * ts + h * HEAD_DIM + c),
					      (float)(o / l));
				}
			}
	rc = 0;
out:
	free(q);
	free(k);
	free(v);
	free(p);
	return rc;
}

/*
 * Net: the DP average of dq, dk, dv, 3X each way (two ranks), plus >= 2X
 * in when cp > 1: the other blocks' K, V, or its own block's dK, dV summed
 * elsewhere. FLOPs: per (query, key) pair of the CP group 10*64 (QK^T, dP,
 * dQ, dK, dV), cp blocks of S^2 a rank. HBM: the default.
 */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	struct ring_dims g;
	attn_dims(d, &g);
	double x = (double)g.b * g.s * HEADS * HEAD_DIM;
	c->net_bytes = (3 + (g.cp > 1 ? 2 : 0)) * x * pkb_dtype_size(d->dtype);
	c->flops = 10.0 * HEAD_DIM * g.b * HEADS * g.s * (double)g.s * g.cp;
	c->flop_kind = PKB_FLOPS_TENSOR;
	c->note = "DP all-reduce of dq, dk, dv + the CP group's K, V (or dK, dV) in";
}

const struct pkb_problem pkb_problem_057 = {
	.id = 57,
	.name = "ring_attention_backward_dp",
	.title = "Ring-attention backward (CP) + DP gradient averaging",
	.category = "Context Parallel",
	.origin = "ring-flash-attention backward with Megatron cp-dp layout (inferred)",
	.worlds = 0x5555555555555554ull,   /* even W */
	.describe = describe,
	.gen_host = gen_host,
	.cost = cost,
};
