/*
 * 012_allgather_gemm, known-bad under the `parallelkittens` backend: the
 * ThunderKittens all-gather + GEMM of ok_tk_gemm.cu whose gather reads its
 * own rank's shard for every w, so A_full is [A_r | A_r | ...] instead of
 * [A_0 | A_1 | ...]: the other W-1 shards of A never arrive. Fails on
 * every element (bad_local_only.cu, with TK's tiles).
 * pkb-expect: mismatch
 * pkb-backend: parallelkittens
 * pkb-mutant-of: ok_tk_gemm.cu
 */

/* pkb-replace */
			a_full[i * k + w * kl + j] = shards[w][{0, 0, i, j}];
/* pkb-with */
			a_full[i * k + w * kl + j] = shards[comm.rank][{0, 0, i, j}];
/* pkb-end */
