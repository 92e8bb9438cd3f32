/*
 * moe_ep_host.h -- the host side of the EP MoE layer: 049, 050 and 051 are
 * the same layer at three widths (E experts and top_k of them a token, from
 * W: moe_ep_width), whose describe, gen_host and cost are here whole, one
 * set a width (moe_ep_balanced_*, moe_ep_wide_*, moe_ep_narrow_*). 031
 * (eight experts over the whole world) and 032 (the same with LoRA terms)
 * draw their inputs alike and share the cost model, the LoRA rank and the
 * note's words for the weights taken as arguments.
 */
#ifndef PKB_MOE_EP_HOST_H
#define PKB_MOE_EP_HOST_H

#include <math.h>
#include <string.h>
#include "pkb_problem.h"

#define INTER 128

/* the original's EP group: the world if E >= W, else groups of E ranks */
static inline int group_size(int world, int experts)
{
	return experts >= world ? world : experts;
}


/* The layer's nine inputs in the original's order, for e experts: the
 * tokens and the router's weight and bias (moe_ep_gen_host's sixteenths),
 * then the MLP's weights and biases (nn.Linear's init: U(+-1/sqrt(fan_in))).
 * 031 and 032 (eight experts, the whole world) have the same. */
static inline void moe_ep_inputs(const struct pkb_dims *d, struct pkb_io *io, int e)
{
	double a = 1 / sqrt((double)d->n), b = 1 / sqrt((double)INTER);
	pkb_io_input(io, "hidden_states", d->dtype, PKB_HOSTGEN, PKB_SHAPE(d->m, d->n));
	pkb_io_input(io, "gate_weight", d->dtype, PKB_HOSTGEN, PKB_SHAPE(e, d->n));
	pkb_io_input(io, "gate_bias", d->dtype, PKB_HOSTGEN, PKB_SHAPE(e));
	pkb_io_input(io, "gate_proj.weight", d->dtype, PKB_UNIFORM(-a, a), PKB_SHAPE(INTER, d->n));
	pkb_io_input(io, "gate_proj.bias", d->dtype, PKB_UNIFORM(-a, a), PKB_SHAPE(INTER));
	pkb_io_input(io, "up_proj.weight", d->dtype, PKB_UNIFORM(-a, a), PKB_SHAPE(INTER, d->n));
	pkb_io_input(io, "up_proj.bias", d->dtype, PKB_UNIFORM(-a, a), PKB_SHAPE(INTER));
	pkb_io_input(io, "down_proj.weight", d->dtype, PKB_UNIFORM(-b, b), PKB_SHAPE(d->n, INTER));
	pkb_io_input(io, "down_proj.bias", d->dtype, PKB_UNIFORM(-b, b), PKB_SHAPE(d->n));
}

/*
 * describe() of the layer with e experts, top_k k: the checks, the inputs
 * in the original's order, the params and out's tolerance. The routing is
 * exact (the inputs are sixteenths). What a correct candidate may change:
 * the fp32 accumulation order of the three GEMMs (K = N, N, 128) and which
 * of the six roundings to T before the last add (gate, up, silu, the
 * product, the MLP output, the weighted output) it keeps in fp32: terms =
 * 6 + (N + 128) 2^-24/u (048's form), and rtol 2u for the last add. Each
 * problem's describe keeps its host simulation's measurements.
 */
static inline int moe_ep_describe(const struct pkb_dims *d, struct pkb_io *io, int e, int k)
{
	if (d->dtype != PKB_BF16 && d->dtype != PKB_FP16 && d->dtype != PKB_FP32)
		return pkb_io_fail(io, "dtype must be bf16, fp16 or fp32");
	if (d->m < 1 || d->n < 1)
		return pkb_io_fail(io, "M and N must be >= 1");
	if (d->n > 4096)
		return pkb_io_fail(io, "N must be <= 4096 (router logits exact in fp32)");
	moe_ep_inputs(d, io, e);
	pkb_io_param(io, "num_experts", e);
	pkb_io_param(io, "top_k", k);
	double u = pkb_dtype_unit_roundoff(d->dtype);
	double terms = 6 + (double)(d->n + INTER) * 0x1p-24 / u;
	pkb_io_output(io, "out", d->dtype, PKB_TOL_SUM(terms), PKB_SHAPE(d->m, d->n));
	return 0;
}

/* round(16 z) clamped to [-63, 63], z ~ N(0, 1) by Box-Muller: q/16 has at
 * most 6 significant bits, exact in bf16, fp16 and fp32 */
static inline int sixteenths(uint64_t *s)
{
	double q = 16 * pkb_rng_normal(s);
	q = q < -63 ? -63 : q > 63 ? 63 : q;
	return (int)lround(q);
}

/* hidden_states, gate_weight, gate_bias of a layer of e experts:
 * sixteenths, per rank and trial, in bf16, fp16 or fp32 */
static inline int moe_ep_gen_host(const struct pkb_dims *d, int e, int index, uint64_t seed,
				  void *buf, size_t bytes)
{
	size_t n = index == 0 ? (size_t)(d->m * d->n) : index == 1 ? (size_t)e * d->n
		 : index == 2 ? (size_t)e : 0;
	if (n == 0 || bytes != n * pkb_dtype_size(d->dtype))
		return -1;
	uint64_t s = seed;
	for (size_t i = 0; i < n; i++) {
		float v = (float)sixteenths(&s) / 16;
		uint32_t b;
		memcpy(&b, &v, sizeof b);
		if (d->dtype == PKB_FP32)
			((float *)buf)[i] = v;
		else if (d->dtype == PKB_BF16)   /* exact: the low 16 bits are 0 */
			((uint16_t *)buf)[i] = (uint16_t)(b >> 16);
		else                             /* exact: 2^-4 <= |v| < 4, or 0 */
			((uint16_t *)buf)[i] = (uint16_t)(((b >> 16) & 0x8000u) |
				(v == 0 ? 0 : (((b >> 23) & 0xffu) - 112) << 10 | (b & 0x7fffffu) >> 13));
	}
	return 0;
}

/*
 * Tokens: each of the M tokens goes to top_k experts; an expert is on
 * another rank of the G-rank group with probability (G-1)/G (routing
 * about uniform), and a token need cross once per distinct remote rank
 * (both of its experts may sit on one rank when E/G >= 2): out and back,
 * N*e bytes each way. Weights: the other G-1 ranks' MLPs, (3*128*N + 256
 * + N) e, with LoRA factors of rank r on each (032; r = 0: none) 3 r (N +
 * 128) e more. The bound takes the smaller; weights_note is the note's
 * words for the second. FLOPs: 6*128*N per routed token row (three GEMMs) and
 * 2*3 r (N + 128) for the six LoRA GEMMs, top_k*M rows, and the router's
 * 2*N*E per token. HBM: the default.
 */
static inline void moe_ep_cost(const struct pkb_dims *d, int e, int k, int lora_r,
			       const char *weights_note, struct pkb_cost *c)
{
	double g = group_size(d->world, e), el = e >= d->world ? (double)e / d->world : 1;
	double es = pkb_dtype_size(d->dtype), m = (double)d->m, n = (double)d->n;
	/* distinct ranks among a token's k experts, of e: both on one rank
	 * with probability (el - 1)/(e - 1) when k = 2 */
	double ranks = k == 2 && e > 1 ? 2 - (el - 1) / (e - 1) : k;
	double tokens = 2 * m * ranks * (g - 1) / g * n * es;
	double lora = 3.0 * lora_r * n + 3.0 * lora_r * INTER;
	double mlp = 3.0 * INTER * n + 2 * INTER + n + lora;
	double weights = (g - 1) * mlp * es;
	c->net_bytes = tokens < weights ? tokens : weights;
	c->flops = k * m * (6.0 * INTER * n + 2 * lora) + 2.0 * m * n * e;
	c->flop_kind = PKB_FLOPS_TENSOR;
	c->note = tokens < weights ? "routed tokens out and back, once per remote rank"
				   : weights_note;
}

/* ---- 049, 050, 051: the layer at three widths ------------------------------ */

/* how many experts at world W: 049 one a rank (E = W), 050 two (E = 2W),
 * 051 EP sub-groups (E = the largest divisor of W in [2, W/2], 1 where
 * there is none) */
enum moe_ep_layout { MOE_EP_BALANCED, MOE_EP_WIDE, MOE_EP_NARROW };

/* the layout's width at world W: E experts, top_k of them a token */
static inline void moe_ep_width(int world, enum moe_ep_layout l, int *experts, int *top_k)
{
	*top_k = 2;
	if (l == MOE_EP_BALANCED) {
		*experts = world;
	} else if (l == MOE_EP_WIDE) {
		*experts = 2 * world;
	} else {
		/* the original's _moe_narrow_num_experts */
		*experts = 1;
		for (int e = world / 2; e > 1; e--)
			if (world % e == 0) {
				*experts = e;
				break;
			}
		*top_k = *experts < 2 ? *experts : 2;
	}
}

/* describe, gen_host and cost of layout l: moe_ep_describe (051 refuses a
 * W without an EP sub-group of 2 ranks after it: its first reason is the
 * same in both orders), moe_ep_gen_host, moe_ep_cost */
static inline int moe_ep_layout_describe(const struct pkb_dims *d, struct pkb_io *io,
					 enum moe_ep_layout l)
{
	int e, k;
	moe_ep_width(d->world, l, &e, &k);
	if (moe_ep_describe(d, io, e, k) < 0)
		return -1;
	if (l == MOE_EP_NARROW && e < 2)
		return pkb_io_fail(io, "W = %d has no EP sub-group of 2 or more ranks "
				   "(E = 1: no communication)", d->world);
	return 0;
}

static inline int moe_ep_layout_gen_host(const struct pkb_dims *d, enum moe_ep_layout l,
					 int index, uint64_t seed, void *buf, size_t bytes)
{
	int e, k;
	moe_ep_width(d->world, l, &e, &k);
	return moe_ep_gen_host(d, e, index, seed, buf, bytes);
}

static inline void moe_ep_layout_cost(const struct pkb_dims *d, enum moe_ep_layout l,
				      struct pkb_cost *c)
{
	int e, k;
	moe_ep_width(d->world, l, &e, &k);
	moe_ep_cost(d, e, k, 0, "the group's expert weights gathered, tokens stay", c);
}

/* moe_ep_NAME_describe, moe_ep_NAME_gen_host and moe_ep_NAME_cost: layout
 * l's three, for its problem's struct pkb_problem */
#define MOE_EP_LAYOUT(name, l)                                                          \
	static inline int moe_ep_##name##_describe(const struct pkb_dims *d,            \
						   struct pkb_io *io)                   \
	{                                                                               \
		return moe_ep_layout_describe(d, io, l);                                \
	}                                                                               \
	static inline int moe_ep_##name##_gen_host(const struct pkb_dims *d, int index, \
						   uint64_t seed, void *buf,            \
						   size_t bytes)                        \
	{                                                                               \
		return moe_ep_layout_gen_host(d, l, index, seed, buf, bytes);           \
	}                                                                               \
	static inline void moe_ep_##name##_cost(const struct pkb_dims *d,               \
						struct pkb_cost *c)                     \
	{                                                                               \
		moe_ep_layout_cost(d, l, c);                                            \
	}

MOE_EP_LAYOUT(balanced, MOE_EP_BALANCED)   /* 049 */
MOE_EP_LAYOUT(wide, MOE_EP_WIDE)           /* 050 */
MOE_EP_LAYOUT(narrow, MOE_EP_NARROW)       /* 051 */

#endif /* PKB_MOE_EP_HOST_H */
