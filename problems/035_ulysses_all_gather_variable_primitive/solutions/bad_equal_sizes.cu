/*
 * 035_ulysses_all_gather_variable_primitive, known-bad: skips the size
 * exchange and takes every rank to hold total/W rows, as in 034 (the
 * original's harness never gives the ranks different shapes): rank p's rows
 * go to [p*total/W, ...), and as many are taken from every rank (cut to
 * this rank's own count, so every read stays inside its buffers). Only rank
 * 0's first rows land right. Otherwise identical to ok_symm_pull.cu.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_pull.cu
 */

/* pkb-replace */
		L.nu[p] = s->rows[p] * upr;
		L.first[p] = s->first[p] * upr;
/* pkb-with */
		int64_t even = ctx->out[0].shape[0] / ctx->world;   /* BUG: equal shapes */
		L.nu[p] = (even < s->rows[ctx->rank] ? even : s->rows[ctx->rank]) * upr;
		L.first[p] = p * even * upr;
/* pkb-end */
