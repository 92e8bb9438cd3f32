/*
 * 070_torchrec_kjt_all2all, known-bad: no peer is read. Every "source" is
 * this rank itself: the W slots of each feature hold this rank's own rows
 * of that feature and their ids, W times over, instead of each rank's.
 * pkb-mutant-of: ok_symm_pull.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		const int64_t *foff = (const int64_t *)(slots[s] + *off);
/* pkb-with */
		const int64_t *foff = (const int64_t *)(slots[comm.rank] + *off);
		(void)s;
/* pkb-end */

/* pkb-replace */
			seg[q] = q % w;
/* pkb-with */
			seg[q] = comm.rank;
/* pkb-end */

/* pkb-replace */
		const int64_t *len = (const int64_t *)(slots[s] + o + head);
/* pkb-with */
		const int64_t *len = (const int64_t *)(slots[(int)seg[0]] + o + head);
		(void)s;
/* pkb-end */
