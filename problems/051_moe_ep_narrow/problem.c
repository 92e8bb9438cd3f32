/*
 * 051_moe_ep_narrow -- an expert-parallel MoE layer's forward on EP
 * sub-groups: fewer experts than ranks (num_experts E = the largest divisor
 * of W in [2, W/2], top_k = min(2, E)), one expert a rank, groups of E
 * consecutive ranks each running the layer on its own: router, dispatch
 * all-to-all, the experts' SwiGLU MLP, combine all-to-all, weighted sum.
 * 049 (one expert a rank, the whole world) and 050 (two a rank) are the
 * same layer at other widths: the host side (lib/moe_ep_host.h) and the
 * reference (lib/moe_ep_reference.cuh) are one, the solutions kept
 * parallel.
 *
 * Rank p holds tokens x (M, N), its own router (gate_weight (E, N),
 * gate_bias (E,)) and its own expert MLP (gate_proj, up_proj: N -> 128,
 * down_proj: 128 -> N, nn.Linear weights and biases). With T the dtype,
 * each op rounded to T:
 *     logits = T(x gate_weight^T + gate_bias)                 (M, E)
 *     p      = T(softmax(logits))
 *     (e_j, w_j) = the top_k of p per token (ties: the lower expert index)
 *     MLP_q(x) = T(T(T(silu(T(x Wg^T + bg))) * T(x Wu^T + bu)) Wd^T + bd)
 *     out[t] = T(sum over j of T(MLP_owner(e_j)(x[t]) * w_j))   (in T, the
 *              original's scatter_add into zeros)
 * The EP group of rank p is ranks [p/E*E, p/E*E + E) (E < W: the
 * original's lazily built dist.new_group sub-groups), expert e on its
 * member e; every expert runs with its rank's MLP. W = 4: E = 2, groups
 * {0, 1}, {2, 3}, every token visits both experts of its pair; W = 8:
 * E = 4. W = 2 and prime W give E = 1, groups of one rank, no
 * communication at all (out = MLP(x), weight 1): the problem is refused
 * there, since no candidate could be wrong by skipping the exchange.
 *
 * hidden_states and the router's weight and bias are N(0, 1) rounded to
 * multiples of 1/16 in [-63/16, 63/16] (the original: randn), so every
 * router logit is an exact fp32 sum in any order (products are multiples
 * of 2^-8 below 15.5, N <= 4096 of them stay below 2^16): the routing, a
 * discrete choice among bf16 near-ties, is then the same for every correct
 * candidate. The MLPs are U(+-1/sqrt(fan_in)), nn.Linear's default init.
 *
 * Minimum traffic per rank: either the tokens routed to other ranks out
 * and their results back, or the other ranks' expert weights in (3*128*N
 * + 256 + N elements each): the smaller (the weights at the default).
 */
#include "pkb_problem.h"
#include "moe_ep_host.h"
/* defines: moe_ep_narrow_describe, _gen_host, _cost (the layer at E = the
 * largest divisor of W in [2, W/2], top min(2, E); E = 1 refused) */

/*
 * out's tolerance: moe_ep_describe's terms = 6 + (N + 128) 2^-24/u.
 * Host simulation (bf16, fp16, fp32; W = 4, 8; the default
 * shape): another accumulation order needs <= 0.7 terms in bf16/fp16,
 * 11 in fp32; the whole chain fused in fp32 <= 1.1 (bf16/fp16); a
 * softmax by exp2f and a reciprocal changes no routing and needs <=
 * 1.4. Wrong results need >= 75 (bf16), 600 (fp16), 4e6 (fp32): every
 * expert on this rank's MLP (local only) 316+, the second expert
 * dropped 75+, experts on global ranks 0..E-1 (one world group, not
 * the sub-groups) 335+ on the ranks past the first group.
 */
const struct pkb_problem pkb_problem_051 = {
	.id = 51,
	.name = "moe_ep_narrow",
	.title = "EP MoE forward on EP sub-groups (fewer experts than ranks)",
	.category = "Expert Parallel",
	.origin = "VeOmni-style EP MoE with DP-over-EP groups (variant of 31; inferred)",
	/* composite W >= 4: at W = 2 or prime W the groups are single ranks */
	.worlds = PKB_WORLD(4) | PKB_WORLD(6) | PKB_WORLD(8) | PKB_WORLD(9) | PKB_WORLD(10) |
		  PKB_WORLD(12) | PKB_WORLD(14) | PKB_WORLD(15) | PKB_WORLD(16),
	.describe = moe_ep_narrow_describe,
	.gen_host = moe_ep_narrow_gen_host,
	.cost = moe_ep_narrow_cost,
};
