/*
 * 030_moe_epgroupgemm_lora_backward -- the gradient sync of an expert-parallel
 * grouped-GEMM LoRA backward: three LoRA gradients per rank, each sum
 * all-reduced over the world, all three returned.
 *
 * Every rank holds grad_fc1_1_lora_A (8, N), grad_fc1_2_lora_A (8, N) and
 * grad_fc2_lora_B (N, 8) -- rank 8 adapters of an N-wide layer -- and
 * returns the sum over ranks of each. The original all-reduces in place
 * and returns the inputs; here the sums are outputs of the same names and
 * shapes (inputs stay read-only). Inputs are N(0, 1), different per rank
 * and per trial (the original's randn). M is unused, as in the original.
 *
 * Tolerance: each output element is a sum of W rounded terms, in whatever
 * order a candidate adds them (PKB_TOL_SUM(W)). The catalog measured that
 * allclose fails a one-shot fp32 sum against NCCL's ring order on 1 of 8192
 * elements at W = 4: the sum tolerance is sized for exactly that freedom.
 *
 * Minimum traffic per rank: 3 * 2 (W-1)/W * 8N*e bytes received (one
 * reduce-scatter + all-gather of the three together), 36 KiB at N = 1024,
 * bf16, W = 4: the latency regime, where fusing the three NCCL calls into
 * one kernel is the whole game.
 */
#include "pkb_problem.h"

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	pkb_io_input(io, "grad_fc1_1_lora_A", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(8, d->n));
	pkb_io_input(io, "grad_fc1_2_lora_A", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(8, d->n));
	pkb_io_input(io, "grad_fc2_lora_B", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(d->n, 8));
	pkb_io_output(io, "grad_fc1_1_lora_A", d->dtype, PKB_TOL_SUM(d->world), PKB_SHAPE(8, d->n));
	pkb_io_output(io, "grad_fc1_2_lora_A", d->dtype, PKB_TOL_SUM(d->world), PKB_SHAPE(8, d->n));
	pkb_io_output(io, "grad_fc2_lora_B", d->dtype, PKB_TOL_SUM(d->world), PKB_SHAPE(d->n, 8));
	return 0;
}

/* As 001 for the three tensors together (24N elements): a reduce-scatter
 * then an all-gather, 2 (W-1)/W of the bytes received; (W-1)/W additions
 * per element on each rank. */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double w = d->world, n = 24.0 * d->n, bytes = n * pkb_dtype_size(d->dtype);
	c->net_bytes = 2 * (w - 1) / w * bytes;
	c->flops = (w - 1) / w * n;
	c->flop_kind = PKB_FLOPS_VECTOR;
	c->note = "reduce-scatter + all-gather of the three gradients together";
}

const struct pkb_problem pkb_problem_030 = {
	.id = 30,
	.name = "moe_epgroupgemm_lora_backward",
	.title = "All-reduce of three LoRA gradient tensors",
	.category = "Expert Parallel",
	.origin = "EP grouped-GEMM LoRA backward gradient sync (inferred)",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.cost = cost,
};
