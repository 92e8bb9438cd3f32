/*
 * 002_allgather, known-bad: ok_ll_push.cu with its epoch frozen at 1, the
 * slip of a flagged-line protocol whose epoch is not advanced per call.
 * From the second call on, every line of the receive area already carries
 * epoch 1 from the call before, so a rank takes the peers' previous inputs
 * for the new ones wherever a line has not been overwritten yet: stale data,
 * caught because every call has fresh inputs.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_ll_push.cu
 */

/* pkb-replace */
	const uint32_t e0 = pkb_ll_epochs(ll);
/* pkb-with */
	const uint32_t e0 = 1;   /* never advanced */
/* pkb-end */
