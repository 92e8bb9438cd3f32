/*
 * 032_fused_moe_fwd_lora, known-bad: the peers' MLPs and LoRA factors are
 * pulled but never used. Every expert runs on this rank's own (the batched
 * GEMMs see set `rank` W times, stride 0), as if the whole layer lived
 * here: only the tokens whose both experts this rank owns come out right.
 * pkb-mutant-of: ok_symm_weights.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
	const char *mlps = (const char *)s->weights;
	size_t stride = s->half;
/* pkb-with */
	const char *mlps = (const char *)s->weights + ctx->rank * s->half;
	size_t stride = 0;   /* the bug: ours for every rank's experts */
/* pkb-end */
