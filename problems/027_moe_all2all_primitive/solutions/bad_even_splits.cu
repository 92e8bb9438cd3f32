/*
 * 027_moe_all2all_primitive, known-bad: ignores the split lists and moves
 * the original's default ones, M/W rows between every pair of ranks (the
 * remainder to the last) -- no metadata to read, and wrong for every
 * routing but the even one.
 * pkb-mutant-of: ok_symm_pull.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
	if (threadIdx.x < w) {
		int j = threadIdx.x;
		const int64_t *sent = (const int64_t *)(stage[j] + h);   /* rank j's input splits */
		int64_t o = 0;
		for (int d = 0; d < me; d++)
			o += sent[d];
		src_off[j] = o;
	}
	if (threadIdx.x == 0) {
		out_off[0] = 0;
		for (int j = 0; j < w; j++)
			out_off[j + 1] = out_off[j] + out_splits[j];
	}
/* pkb-with */
	if (threadIdx.x < w)
		src_off[threadIdx.x] = me * (rows / w);
	if (threadIdx.x == 0) {
		out_off[0] = 0;
		for (int j = 0; j < w; j++)
			out_off[j + 1] = out_off[j] + rows / w + (j == w - 1 ? rows % w : 0);
	}
/* pkb-end */
