/*
 * 079_dinov2_distributed_knn, known-bad: local data only. The owner merges
 * its own shard's list alone, so it returns the top k of Ntr train rows
 * instead of W Ntr: with W shards about (W-1)/W of the true neighbours
 * live elsewhere, and most of the (exactly compared) list is wrong.
 * pkb-mutant-of: ok_symm_merge.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
			for (int r = 0; r < w; r++) {
/* pkb-with */
			for (int r = comm.rank; r == comm.rank; r++) {
/* pkb-end */
