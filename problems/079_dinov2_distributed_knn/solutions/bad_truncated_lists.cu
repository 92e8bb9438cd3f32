/*
 * 079_dinov2_distributed_knn, known-bad: the cheapest shortcut, k/W
 * candidates per shard (a W-fold smaller gather). The global top k holds
 * about k/W rows of each shard, binomially spread (+-6 at k = 200, W = 4),
 * so some shard nearly always has more than k/W in it: those rows are
 * replaced by lower ones (and at a W that does not divide k the last rows
 * are left at -inf).
 * pkb-mutant-of: ok_symm_merge.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
				if (head[r] >= k)
/* pkb-with */
				if (head[r] >= k / w)
/* pkb-end */
