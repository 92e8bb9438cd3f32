/*
 * 031_fused_moe_fwd, known-bad: the peers' MLPs are pulled but never used.
 * Every expert runs on this rank's own MLP (the batched GEMMs see MLP
 * `rank` W times, stride 0), as if the whole layer lived here: only the
 * tokens whose both experts this rank owns come out right.
 * pkb-mutant-of: ok_symm_weights.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
	const char *mlps = (const char *)s->weights;
	size_t stride = s->half;
/* pkb-with */
	const char *mlps = (const char *)s->weights + ctx->rank * s->half;
	size_t stride = 0;   /* the bug: our MLP for every rank's experts */
/* pkb-end */
