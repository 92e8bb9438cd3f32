/*
 * 054_ring_attention, known-bad: the causal mask only inside the diagonal
 * block. Every rank attends to every block, the later ranks' (future)
 * keys included, as the ring would with causal=False off the diagonal:
 * only rank W-1 is right.
 * pkb-mutant-of: ok_symm_pull.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
	int nblk = ctx->rank + 1;   /* blocks 0..r: the earlier positions and ours */
/* pkb-with */
	int nblk = ctx->world;
/* pkb-end */
