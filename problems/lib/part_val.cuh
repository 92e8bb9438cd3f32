/*
 * part_val.cuh -- the whole state of 021's, 022's and 024's references,
 * which reduce alike: blocks write partial sums (part), one warp folds them
 * into this rank's values (val), an fp32 all-reduce sums val over the
 * ranks in place, and a last kernel reads it. pkb_init is part_val_init,
 * pkb_fini frees the state with part_val_release (PKB_REF_FLOAT_RUN_FINI).
 */
#ifndef PKB_PART_VAL_CUH
#define PKB_PART_VAL_CUH

#include <stddef.h>
#include "pkb_ref.cuh"

struct part_val {
	float *part;   /* the blocks' partial sums */
	float *val;    /* this rank's values, all-reduced in place */
};

/* pkb_init: refuse a non-float in[0], then the state, with `parts` floats
 * of partial sums and `vals` values */
static inline int part_val_init(pkb_ctx *ctx, size_t parts, size_t vals)
{
	struct part_val *s;
	PKB_CK(pkb_ref_float_state(ctx, &s));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->part, parts * sizeof(float)));
	PKB_CK_CUDA(ctx, cudaMalloc(&s->val, vals * sizeof(float)));
	return 0;
}

static inline void part_val_release(struct part_val *s)
{
	cudaFree(s->part);
	cudaFree(s->val);
}

#endif /* PKB_PART_VAL_CUH */
