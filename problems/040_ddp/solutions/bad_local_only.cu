/*
 * 040_ddp, known-bad: no communication. Every rank trains on its own inputs
 * (its own random parameters and moments, not rank 0's) and steps with its
 * own gradient, as if the group were this rank: every output of every rank
 * but 0 is wrong, and rank 0's moments and parameters miss W-1 of the W
 * gradient contributions.
 * pkb-mutant-of: ok_symm_oneshot.cu
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
			sum += pkb_to_float(parts[r][i]);
/* pkb-with */
		sum = pkb_to_float(parts[comm.rank][i]) * comm.world;
/* pkb-end */
