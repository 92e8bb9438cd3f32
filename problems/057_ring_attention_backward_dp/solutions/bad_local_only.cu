/*
 * 057_ring_attention_backward_dp, known-bad: local data only. dq from the
 * own block's keys, dk and dv from the own queries (no CP exchange), and
 * no DP average: this replica's gradients of its own block, which differ
 * from the mean over the pair everywhere.
 * pkb-mutant-of: ok_symm_pull.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
	int j0 = 0, nblk = s->cp;   /* every block of the CP group */
/* pkb-with */
	int j0 = s->c, nblk = 1;
/* pkb-end */

/* pkb-replace */
			float sum = pkb_to_float(pkb_from_float<T>(pkb_to_float(mine[i]) + pkb_to_float(peer[i])));
/* pkb-with */
			float sum = 2 * pkb_to_float(mine[i]) + 0 * pkb_to_float(peer[i]);
/* pkb-end */
