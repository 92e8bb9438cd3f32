/*
 * 009_layernorm_backward, known-bad: the all-reduce is right, the outputs are
 * returned as (d_beta, d_gamma) -- the order the original computes them in,
 * and the usual (dbias, dweight) slip -- instead of (d_gamma, d_beta).
 * Otherwise identical to ok_symm_fp32_partials.cu.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_fp32_partials.cu
 */

/* pkb-replace */
		(T *)ctx->out[0].data, (T *)ctx->out[1].data, s->chunks, n);
/* pkb-with */
		(T *)ctx->out[1].data, (T *)ctx->out[0].data, s->chunks, n);   /* swapped */
/* pkb-end */
