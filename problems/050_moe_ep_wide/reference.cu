/*
 * 050_moe_ep_wide reference: 049_moe_ep_balanced's reference, which reads
 * the width (num_experts, top_k) from the params, so one file serves 049,
 * 050 and 051 (see its header for the algorithm).
 */
#include "../049_moe_ep_balanced/reference.cu"
