/*
 * 047_fsdp_step_e2e, known-bad: no communication. The parameter vector is
 * this rank's shard with zeros in every other rank's place, and the
 * gradient of the shard is this rank's own (as if the group were this
 * rank): the forward runs on the wrong weights and m, v are off by tens to
 * hundreds of their tolerance on every rank.
 * pkb-mutant-of: ok_symm_fsdp.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		const T *src = shards[j];
		for (int64_t i = e0 + threadIdx.x; i < e1; i += THREADS)
			full[j * s + i] = src[i];
/* pkb-with */
		for (int64_t i = e0 + threadIdx.x; i < e1; i += THREADS)
			full[j * s + i] = j == comm.rank ? mine[i] : pkb_from_float<T>(0.f);
/* pkb-end */

/* pkb-replace */
		for (int j = 0; j < comm.world; j++)
			acc += grads[j][base + i];
/* pkb-with */
		acc = grads[comm.rank][base + i] * comm.world;
/* pkb-end */
