/*
 * 049_moe_ep_balanced -- an expert-parallel MoE layer's forward with one
 * expert per rank (num_experts E = W, top_k = 2): router, dispatch
 * all-to-all, the experts' SwiGLU MLP, combine all-to-all, weighted sum.
 * 050 (two experts a rank) and 051 (EP sub-groups) are the same layer at
 * other widths: the host side (lib/moe_ep_host.h) and the reference
 * (lib/moe_ep_reference.cuh) are one, the solutions kept parallel.
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
 * The EP group is all W ranks (E >= W); it holds E/W experts a rank,
 * experts [q*E/W, (q+1)*E/W) on rank q, all of them run with rank q's MLP
 * (the original's one expert_forward per rank). Here E/W = 1.
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
/* defines: moe_ep_balanced_describe, _gen_host, _cost (the layer at E = W, top 2) */

/*
 * out's tolerance: moe_ep_describe's terms = 6 + (N + 128) 2^-24/u.
 * Host simulation (bf16, fp16, fp32; W = 2, 4, 8; the default
 * shape): another accumulation order needs <= 0.7 terms in bf16/fp16,
 * 11 in fp32; the whole chain fused in fp32 <= 1.1 (bf16/fp16); a
 * softmax by exp2f and a reciprocal changes no routing and needs <=
 * 1.4. Wrong results need >= 75 (bf16), 600 (fp16), 4e6 (fp32): every
 * expert on this rank's MLP (local only) 277+, the second expert
 * dropped 75+.
 */
const struct pkb_problem pkb_problem_049 = {
	.id = 49,
	.name = "moe_ep_balanced",
	.title = "EP MoE forward, one expert per rank",
	.category = "Expert Parallel",
	.origin = "VeOmni-style EP MoE (variant of 31; inferred)",
	.worlds = PKB_WORLDS_ANY,
	.describe = moe_ep_balanced_describe,
	.gen_host = moe_ep_balanced_gen_host,
	.cost = moe_ep_balanced_cost,
};
