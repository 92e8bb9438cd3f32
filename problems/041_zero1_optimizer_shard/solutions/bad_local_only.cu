/*
 * 041_zero1_optimizer_shard, known-bad: no communication. Every rank trains
 * on its own parameters (not rank 0's), steps its slice with its own
 * gradient, and fills every slice of the "gathered" parameters with its own
 * updated slice, as if the group were this rank: every output of every rank
 * but 0 is wrong, and rank 0's misses W-1 of the W gradient contributions
 * and W-1 of the slices.
 * pkb-mutant-of: ok_symm_shard.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
				((T *)sg.out[s])[i - sg.start[s]] = s0[i];
/* pkb-with */
				((T *)sg.out[s])[i - sg.start[s]] =
					((const T *)sg.in[s])[i - sg.start[s]];
/* pkb-end */

/* pkb-replace */
		for (int r = 0; r < comm.world; r++)
			sum += pkb_to_float(parts[r][base + j]);
/* pkb-with */
		sum = pkb_to_float(parts[comm.rank][base + j]) * comm.world;
/* pkb-end */

/* pkb-replace */
			*param_at<T>(sg, (int64_t)q * part + j) = slices[q][j];
/* pkb-with */
			*param_at<T>(sg, (int64_t)q * part + j) = mine[j];
/* pkb-end */
