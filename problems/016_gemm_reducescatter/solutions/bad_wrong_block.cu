/*
 * 016_gemm_reducescatter, known-bad: the reduction is right, the row block
 * is not. Same as ok_fp32_partials.cu, but rank r returns the rows of rank
 * (r+1) % W -- a ring-index mix-up. Wrong on every rank.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_fp32_partials.cu
 */

/* pkb-replace */
/* whose rows this rank returns */
#define ROW_BLOCK(ctx) ((int64_t)(ctx)->rank)
/* pkb-with */
/* whose rows this rank returns: the next rank's */
#define ROW_BLOCK(ctx) ((int64_t)(((ctx)->rank + 1) % (ctx)->world))
/* pkb-end */
