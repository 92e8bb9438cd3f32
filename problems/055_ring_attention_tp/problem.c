/*
 * 055_ring_attention_tp -- an attention block (QKV projection, causal ring
 * attention, output projection) with the heads split over tensor-parallel
 * pairs and the sequence over a context-parallel ring (Megatron "tp-cp"
 * order).
 *
 * tp = 2, cp = W/2 (W even); rank = cp_idx*2 + tp_idx. The TP groups are
 * the consecutive pairs {2c, 2c+1}; the CP group of tp_idx t is {t, t+2,
 * t+4, ...}. B = max(1, M/64), T = max(1, N/64), S = max(1, T/cp); hidden
 * 512 = 8 heads of 64, 4 heads a TP rank. Rank (c, t) holds
 *     hidden_states (B, S, 512)  tokens [c*S, (c+1)*S): the same on both
 *                                ranks of a TP group (the original seeds
 *                                it by cp_rank)
 *     w_qkv (768, 512), w_o (512, 256)   TP rank t's heads: the same on
 *                                every rank of a CP group (seeded by tp_rank)
 * and computes, each op rounded to the dtype T (fp32 inside):
 *     qkv  = T(hidden w_qkv^T) viewed (B, S, 3, 4, 64): q, k, v
 *     ctx  = T(causal ring attention of q over the CP group's k, v)  (054)
 *     part = T(ctx (B, S, 256) w_o^T)                           (B, S, 512)
 *     out  = T(part_t0 + part_t1)       the SUM all-reduce over the TP pair
 * At W = 2 (cp = 1) the attention is local (no ring).
 *
 * Minimum traffic per rank: the TP all-reduce of out, B*S*512 elements each
 * way (two ranks), plus, for cp > 1, X = B*S*256 for the ring (054's
 * argument: K, V of the earlier blocks in or Q out and partials back);
 * or the partner's weights gathered instead (768*512 + 512*256 elements,
 * all 8 heads in the ring, no all-reduce), the smaller: the all-reduce at
 * the default (192 KiB against 1.1 MiB at W = 4, bf16), the weights from
 * B*S > 2048 tokens a rank (1024 at cp = 1).
 */
#include <math.h>
#include "pkb_problem.h"
#include "ring_host.h"
/* defines: HEADS, HEAD_DIM, struct ring_dims, attn_dims, next, normal, attn_check,
 * attn_fill */

#define TP 2
#define HIDDEN (HEADS * HEAD_DIM)
#define LOCAL (HIDDEN / TP)          /* 256: a TP rank's 4 heads */

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	struct ring_dims g;
	if (attn_check(d, io) < 0)
		return -1;
	if (d->world % TP)
		return pkb_io_fail(io, "W = %d is odd: tp = 2 needs an even W", d->world);
	attn_dims(d, &g);
	/* N(0, 1); w = T(T(N(0, 1)) * 0.02) as the original: gen_host, so
	 * that the ranks of a group draw the same tensor */
	pkb_io_input(io, "hidden_states", d->dtype, PKB_HOSTGEN, PKB_SHAPE(g.b, g.s, HIDDEN));
	pkb_io_input(io, "w_qkv", d->dtype, PKB_HOSTGEN, PKB_SHAPE(3 * LOCAL, HIDDEN));
	pkb_io_input(io, "w_o", d->dtype, PKB_HOSTGEN, PKB_SHAPE(HIDDEN, LOCAL));
	pkb_io_param(io, "num_heads", HEADS);
	pkb_io_param(io, "softmax_scale", 0.125);
	pkb_io_param(io, "causal", 1);
	/* the original's tp_group and cp_group, by their sizes (layout above) */
	pkb_io_param(io, "tp_size", TP);
	pkb_io_param(io, "cp_size", (double)g.cp);

	/*
	 * out is a sum of the two TP ranks' T-rounded partials (order-free;
	 * a fused candidate may add fp32 partials and round once: 2 terms),
	 * each the end of a chain with four roundings to T a fused candidate
	 * may keep in fp32 or add (q/k/v, P for a tensor-core PV, ctx or the
	 * per-block partial outputs, the partial itself), plus fp32 sums in
	 * any order: the projections (K = 512, 256) and the attention (054:
	 * Tg + 64, Tg = cp*S keys): terms = 6 + (832 + Tg) 2^-24/u. Host
	 * simulation (numpy; bf16, fp16, fp32; W = 2, 4, 8; S = 4 to 64):
	 * per-block partials in T need <= 1.4 terms, P in T 1.3, P in T with
	 * fp32 TP partials 0.87, the whole block fused in fp32 0.85, l2 <=
	 * 1.07 u (limit 5.3 u); fp32 <= 11 terms. Wrong results need >= 198
	 * terms in bf16, 1600 in fp16, 1.3e7 in fp32: no TP all-reduce (this
	 * rank's partial) 198+, local data only (no ring either) 198+ at
	 * W = 2 and 785+ at W >= 4.
	 */
	double u = pkb_dtype_unit_roundoff(d->dtype);
	double terms = 6 + (double)(HIDDEN + LOCAL + HEAD_DIM + g.cp * g.s) * 0x1p-24 / u;
	pkb_io_output(io, "out", d->dtype, PKB_TOL_SUM(terms), PKB_SHAPE(g.b, g.s, HIDDEN));
	return 0;
}

/* hidden_states from (common_seed, cp_idx): the same on both ranks of a TP
 * pair; w_qkv and w_o from (common_seed, tp_idx): the same on every rank of
 * a CP group. Every key varies with --seed and the trial. */
static int gen_host(const struct pkb_dims *d, int index, uint64_t seed, void *buf, size_t bytes)
{
	struct ring_dims g;
	attn_dims(d, &g);
	(void)seed;
	int tp = d->rank % TP, c = d->rank / TP;
	size_t n = index == 0 ? (size_t)(g.b * g.s * HIDDEN) : index == 1 ? 3 * LOCAL * HIDDEN
		 : index == 2 ? HIDDEN * LOCAL : 0;
	if (n == 0 || bytes != n * pkb_dtype_size(d->dtype))
		return -1;
	uint64_t st = pkb_rng_mix(d->common_seed ^ pkb_rng_mix(((uint64_t)index << 32) | (uint64_t)(index ? tp : c)));
	attn_fill(d, buf, n, &st, index != 0);
	return 0;
}

/*
 * Net: the TP all-reduce, B*S*512 elements each way, plus X = B*S*256 for
 * the ring when cp > 1 (in + out >= 2X); the partner's weights and an
 * 8-head ring instead, (768*512 + 512*256) + 2X, if that is less. FLOPs
 * of the TP scheme (the smaller): the two projections, 2*B*S*512*(768 +
 * 256), and 4*64 per causal (query, key) pair of the 4 local heads,
 * balanced over the CP group. HBM: the default.
 */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	struct ring_dims g;
	attn_dims(d, &g);
	double bs = (double)g.b * g.s, x = bs * LOCAL, tg = (double)g.cp * g.s;
	double ring = g.cp > 1 ? x : 0;
	double tp = bs * HIDDEN + ring, gather = 3.0 * LOCAL * HIDDEN + HIDDEN * LOCAL + 2 * ring;
	c->net_bytes = (tp < gather ? tp : gather) * pkb_dtype_size(d->dtype);
	c->flops = 2 * bs * HIDDEN * (3.0 * LOCAL + LOCAL) +
		   4.0 * HEAD_DIM * g.b * (HEADS / TP) * tg * (tg + 1) / 2 / g.cp;
	c->flop_kind = PKB_FLOPS_TENSOR;
	c->note = tp < gather ? "TP all-reduce of out + CP ring (Q out, partials back)"
			      : "the partner's weights gathered, all heads local + CP ring";
}

const struct pkb_problem pkb_problem_055 = {
	.id = 55,
	.name = "ring_attention_tp",
	.title = "Attention block with TP heads x CP ring",
	.category = "Context Parallel",
	.origin = "Megatron-style TP x CP (order tp-cp) attention with ring attention (inferred)",
	.worlds = 0x5555555555555554ull,   /* even W */
	.describe = describe,
	.gen_host = gen_host,
	.cost = cost,
};
