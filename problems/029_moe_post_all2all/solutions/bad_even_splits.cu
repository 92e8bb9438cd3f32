/*
 * 029_moe_post_all2all, known-bad: reads the original's synthetic
 * metadata instead of the peers' counts -- 2M/8 rows per (rank, expert)
 * chunk on every rank, the remainder on the first chunks, which is what
 * the original's input generator passes whatever the routing. No metadata
 * to read; wrong for every routing but the even one.
 * pkb-mutant-of: ok_symm_pull.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		const int64_t *cnt = (const int64_t *)(stage[j] + h);   /* [W][E_l] */
/* pkb-with */
		int64_t cnt[EXPERTS];
		for (int c = 0; c < EXPERTS; c++)
			cnt[c] = rows / EXPERTS + (c < rows % EXPERTS);
/* pkb-end */

/* pkb-replace */
		const T *src = (const T *)(stage[j] + h + HDR) + (chunk_off[e] + i - start[e]) * n;
/* pkb-with */
		/* the synthetic counts need not sum to our 2M rows: stay in range */
		const T *src = (const T *)(stage[j] + h + HDR) + min(chunk_off[e] + i - start[e], rows - 1) * n;
/* pkb-end */
