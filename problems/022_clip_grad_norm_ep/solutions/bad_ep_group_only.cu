/*
 * 022_clip_grad_norm_ep, known-bad: the cheapest wrong shortcut of the
 * two-stage reduce. The expert term is summed over the rank's EP group only
 * (the ep_size contiguous ranks r / ep_size * ep_size ...), skipping the
 * EP-FSDP stage that adds the other replicas: at W = 4 two of the four
 * ranks' expert sums are missing; at W = 2 (ep_size 1) the expert term is
 * this rank's alone. total_norm comes out several % low, beyond 1e-4.
 * pkb-mutant-of: ok_symm_scalars.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		for (int r = 0; r < comm.world; r++)
			ep += val[r][1];
/* pkb-with */
		for (int r = comm.rank / ep_size * ep_size;
		     r < (comm.rank / ep_size + 1) * ep_size && r < comm.world; r++)
			ep += val[r][1];
/* pkb-end */
