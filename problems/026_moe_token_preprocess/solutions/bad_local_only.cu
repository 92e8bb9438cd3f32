/*
 * 026_moe_token_preprocess, known-bad: no exchange. Each rank takes every
 * peer's counts of its experts to be its own (as if all ranks routed
 * alike): input_splits is right, the three received results are not.
 * pkb-mutant-of: ok_symm_push.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		box[j][half + me * el + l] = own[threadIdx.x];
/* pkb-with */
		box[me][half + j * el + l] = own[me * el + l];
/* pkb-end */
