/*
 * 056_ring_attention_pp -- a two-stage pipeline of attention blocks (QKV
 * projection, causal ring attention, output projection, no residual), the
 * sequence split over a context-parallel ring inside each stage.
 *
 * pp = 2, cp = W/2 (W even); rank = pp_idx*cp + cp_idx. The CP group of a
 * stage is its cp consecutive ranks; the PP pair of cp_idx c is {c, c+cp}.
 * B = max(1, M/64), T = max(1, N/64), S = max(1, T/cp); hidden 512 = 8
 * heads of 64. Rank (p, c) holds
 *     hidden_states (B, S, 512)  tokens [c*S, (c+1)*S): the same on both
 *                                stages (the original seeds it by cp_rank);
 *                                stage 1 never reads it
 *     w_qkv (1536, 512), w_o (512, 512)   stage p's block: the same on
 *                                every rank of the stage (seeded by pp_rank)
 * With the dtype T and every op rounded to T (fp32 inside),
 *     block_p(x) = T(T(ring attention over stage p's CP group of the q, k,
 *                  v slices of T(x w_qkv_p^T))) w_o_p^T)     (054's attention)
 * stage 0 returns y0 = block_0(hidden_states) and sends it to its PP
 * successor; stage 1 returns block_1(y0 of its PP predecessor). At W = 2
 * (cp = 1) the attention is local.
 *
 * Minimum traffic per rank: a stage-1 rank needs y0 (B*S*512 elements) or
 * stage 0's weights (1536*512 + 512*512) to recompute it from its own copy
 * of the hidden states, the smaller; with cp > 1 both stages also run
 * 054's ring, in + out >= 2 B*S*512. At the default a few hundred KiB:
 * latency.
 */
#include <math.h>
#include "pkb_problem.h"
#include "ring_host.h"
/* defines: HEADS, HEAD_DIM, struct ring_dims, attn_dims, next, normal, attn_check,
 * attn_fill */

#define PP 2
#define HIDDEN (HEADS * HEAD_DIM)

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	struct ring_dims g;
	if (attn_check(d, io) < 0)
		return -1;
	if (d->world % PP)
		return pkb_io_fail(io, "W = %d is odd: pp = 2 needs an even W", d->world);
	attn_dims(d, &g);
	/* N(0, 1); w = T(T(N(0, 1)) * 0.02) as the original: gen_host, so
	 * that the ranks of a group draw the same tensor */
	pkb_io_input(io, "hidden_states", d->dtype, PKB_HOSTGEN, PKB_SHAPE(g.b, g.s, HIDDEN));
	pkb_io_input(io, "w_qkv", d->dtype, PKB_HOSTGEN, PKB_SHAPE(3 * HIDDEN, HIDDEN));
	pkb_io_input(io, "w_o", d->dtype, PKB_HOSTGEN, PKB_SHAPE(HIDDEN, HIDDEN));
	pkb_io_param(io, "num_heads", HEADS);
	pkb_io_param(io, "softmax_scale", 0.125);
	pkb_io_param(io, "causal", 1);
	/* the original's cp_group and pp_group, by their sizes (layout above) */
	pkb_io_param(io, "cp_size", (double)g.cp);
	pkb_io_param(io, "pp_size", PP);

	/*
	 * One block rounds to T three times before its last rounding (q/k/v,
	 * ctx or the per-block partial outputs, and P if a tensor-core PV
	 * rounds it), any of which a fused candidate may keep in fp32, plus
	 * fp32 sums in any order (the projections, K = 512 twice, and 054's
	 * attention, Tg + 64 with Tg = cp*S): stage 0 terms = 4 + (1088 + Tg)
	 * 2^-24/u. Stage 1 carries stage 0's error (y0 itself rounded, or
	 * handed over in fp32) through a second block, which maps a relative
	 * error of its input to about the same of its output: twice that.
	 * Host simulation (numpy; bf16, fp16, fp32; W = 2, 4, 8; S = 4 to 64):
	 * P in T, per-block partials in T, or both blocks fused in fp32 with
	 * y0 in fp32 need <= 0.72 terms at stage 0 and 0.92 at stage 1, l2 <=
	 * 0.95 u (limits 4.5 u and 6 u); fp32 <= 9.3 terms. Wrong results need
	 * >= 653 terms in bf16 (5200 fp16, 4e7 fp32): stage 1 on its own
	 * hidden_states instead of y0 1220+ at every W, no ring 653+ at W >= 4.
	 */
	double u = pkb_dtype_unit_roundoff(d->dtype);
	double terms = 4 + (double)(2 * HIDDEN + HEAD_DIM + g.cp * g.s) * 0x1p-24 / u;
	int stage = d->rank / (int)g.cp;
	pkb_io_output(io, "stage_output", d->dtype, PKB_TOL_SUM(stage ? 2 * terms : terms),
		      PKB_SHAPE(g.b, g.s, HIDDEN));
	return 0;
}

/* hidden_states from (common_seed, cp_idx): the same on both stages;
 * w_qkv and w_o from (common_seed, pp_idx): the same on every rank of a
 * stage. Every key varies with --seed and the trial. */
static int gen_host(const struct pkb_dims *d, int index, uint64_t seed, void *buf, size_t bytes)
{
	struct ring_dims g;
	attn_dims(d, &g);
	(void)seed;
	int p = d->rank / (int)g.cp, c = d->rank % (int)g.cp;
	size_t n = index == 0 ? (size_t)(g.b * g.s * HIDDEN) : index == 1 ? 3 * HIDDEN * HIDDEN
		 : index == 2 ? HIDDEN * HIDDEN : 0;
	if (n == 0 || bytes != n * pkb_dtype_size(d->dtype))
		return -1;
	uint64_t st = pkb_rng_mix(d->common_seed ^ pkb_rng_mix(((uint64_t)index << 32) | (uint64_t)(index ? p : c)));
	attn_fill(d, buf, n, &st, index != 0);
	return 0;
}

/*
 * Net, with Y = B*S*512 and G = the ring's 2Y (in + out) when cp > 1: a
 * stage-1 rank must take in P = min(Y, stage 0's weights 1536*512 +
 * 512*512) and in + out >= P + G, so its busier direction carries >=
 * max(P, (P + G)/2); a stage-0 rank >= G/2 (it sends nothing if stage 1
 * recomputes). FLOPs: its stage's projections, 2*B*S*512*2048, and the
 * causal attention of 8 heads balanced over the CP group. HBM: the
 * stage's weights, and on stage 0 the hidden states (stage 1 never reads
 * its copy; the output may end in L2).
 */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	struct ring_dims g;
	attn_dims(d, &g);
	double bs = (double)g.b * g.s, y = bs * HIDDEN, tg = (double)g.cp * g.s;
	double ring = g.cp > 1 ? 2 * y : 0, wts = 4.0 * HIDDEN * HIDDEN;
	double p = y < wts ? y : wts, half = (p + ring) / 2;
	int stage = d->rank / (int)g.cp;
	c->net_bytes = (stage ? (p > half ? p : half) : ring / 2) * pkb_dtype_size(d->dtype);
	c->hbm_bytes = (wts + (stage ? 0 : y)) * pkb_dtype_size(d->dtype);
	c->flops = 2 * bs * HIDDEN * 4.0 * HIDDEN +
		   4.0 * HEAD_DIM * g.b * HEADS * tg * (tg + 1) / 2 / g.cp;
	c->flop_kind = PKB_FLOPS_TENSOR;
	c->note = y < wts ? "stage 0's output to stage 1 + a CP ring a stage"
			  : "stage 0's weights to stage 1 (recomputed there) + a CP ring a stage";
}

const struct pkb_problem pkb_problem_056 = {
	.id = 56,
	.name = "ring_attention_pp",
	.title = "Two-stage pipeline of ring-attention blocks",
	.category = "Pipeline Parallel",
	.origin = "Megatron-style PP x CP attention blocks with ring attention (inferred)",
	.worlds = 0x5555555555555554ull,   /* even W */
	.describe = describe,
	.gen_host = gen_host,
	.cost = cost,
};
