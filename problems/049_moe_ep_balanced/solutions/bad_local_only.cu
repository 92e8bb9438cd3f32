/*
 * 049_moe_ep_balanced, known-bad: the peers' MLPs are pulled but never
 * used. Every expert runs on this rank's own MLP, as if the whole layer
 * lived here: only the token slots routed to this rank's own expert are
 * right.
 * pkb-mutant-of: ok_symm_weights.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		const char *wq = (const char *)s->weights + q * s->half;
/* pkb-with */
		const char *wq = (const char *)s->weights + (ctx->rank - s->base) * s->half;
/* pkb-end */
