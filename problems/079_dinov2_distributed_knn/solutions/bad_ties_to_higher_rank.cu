/*
 * 079_dinov2_distributed_knn, known-bad: equal similarities merged in the
 * wrong order (the later shard first). bf16 similarities of ~0.15 have an
 * ulp of 2^-10, so most of a list's neighbours are tied with another shard's
 * row: the similarities still match, the labels do not.
 * pkb-mutant-of: ok_symm_merge.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
				if (best < 0 || v > bv) {
/* pkb-with */
				if (best < 0 || v >= bv) {
/* pkb-end */
