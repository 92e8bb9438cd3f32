/*
 * 017_rope_allgather, known-bad: the RoPE is right, the layout is not. Rank
 * r's block is written contiguously at offset r * B*S*512 -- the buffer a
 * flat all-gather (or torch.cat along dim 0) produces -- instead of at
 * positions [r*S, (r+1)*S) of every sequence b. Indistinguishable from the
 * right answer only when B = 1 (M < 128). Otherwise identical to
 * ok_symm_pull.cu.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_pull.cu
 */

/* pkb-replace */
		V *dst = (V *)(t ? ko : qo) + (b * ws + (int64_t)r * s + sp) * vpr;
/* pkb-with */
		V *dst = (V *)(t ? ko : qo) + ((int64_t)r * npos + pos) * vpr;   /* rank-major */
		(void)b; (void)sp; (void)ws;
/* pkb-end */
