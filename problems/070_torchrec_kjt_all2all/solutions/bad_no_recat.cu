/*
 * 070_torchrec_kjt_all2all, known-bad: the received rows are returned in
 * the order they arrive, (source s, feature f), without torchrec's recat to
 * (feature f, source s). The same thing on ranks that own one feature
 * (key_splits 1: ranks 0, 3, 6), wrong in lengths and values on the others.
 * pkb-mutant-of: ok_symm_pull.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		int f = threadIdx.x / w, s = threadIdx.x % w;
/* pkb-with */
		int s = threadIdx.x / ks_r, f = threadIdx.x % ks_r;
/* pkb-end */

/* pkb-replace */
			seg[q] = q % w;
/* pkb-with */
			seg[q] = q / ks_r;
/* pkb-end */

/* pkb-replace */
		int64_t fi = i / ((int64_t)w * bs), b = i % bs;
		int s = (int)((i / bs) % w);
/* pkb-with */
		int64_t fi = (i / bs) % ks_r, b = i % bs;
		int s = (int)(i / ((int64_t)ks_r * bs));
/* pkb-end */
