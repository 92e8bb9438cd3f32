/*
 * 047_fsdp_step_e2e, known-bad: the cheapest shortcut, no reduce-scatter.
 * The parameters are gathered, but each rank steps its shard with its own
 * gradient of it, as if every rank had seen the whole batch. The ranks'
 * batches differ, so g is off by about its own size: m needs 25-530 terms
 * of tolerance where W + 2 are given (host simulation, bf16, W = 2, 4, 8).
 * pkb-mutant-of: ok_symm_fsdp.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		for (int j = 0; j < comm.world; j++)
			acc += grads[j][base + i];
/* pkb-with */
		acc = grads[comm.rank][base + i] * comm.world;
/* pkb-end */
