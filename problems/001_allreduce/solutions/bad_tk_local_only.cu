/*
 * 001_allreduce, known-bad under the `parallelkittens` backend: the
 * ThunderKittens all-reduce of ok_tk_pgl.cu that reads only its own rank's
 * staging buffer and scales it by W -- the "right" answer if every rank
 * held the same data (bad_local_only.cu, with TK's tiles). Fails on every
 * element where the ranks' inputs differ, which they always do.
 * pkb-expect: mismatch
 * pkb-backend: parallelkittens
 * pkb-mutant-of: ok_tk_pgl.cu
 */

/* pkb-replace */
		for (int r = 0; r < W; r++) {
			warp::load(part, stage[r], {0, 0, t, 0});
			warp::add(acc, acc, part);
		}
/* pkb-with */
		for (int r = 0; r < 1; r++) {
			warp::load(part, stage[comm.rank], {0, 0, t, 0});
			warp::mul(acc, part, (float)W);
		}
/* pkb-end */

/* pkb-replace */
			for (int r = 0; r < W; r++)
				s += pkb_to_float(stage_raw[r][i]);
/* pkb-with */
			s = W * pkb_to_float(stage_raw[comm.rank][i]);
/* pkb-end */
