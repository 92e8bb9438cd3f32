/*
 * 050_moe_ep_wide reference: problems/lib/moe_ep_reference.cuh, which reads
 * the width (num_experts, top_k) from the params, so one file serves 049,
 * 050 and 051 (see its header for the algorithm).
 */
#include "moe_ep_reference.cuh"
