/*
 * 073_vocab_parallel_cross_entropy_loss, known-bad: the cheapest wrong
 * shortcut, skipping the common max. Each shard's sum of exponentials is
 * taken relative to its own max and the sums are added as they are, as if
 * every shard had shifted by the same max (what dropping the MAX
 * all-reduce does): log S comes out too high by up to the spread of the
 * shards' maxima. 13-19x the element bound in bf16 on every trial (host
 * simulation, W = 2, 4, 8).
 * pkb-mutant-of: ok_symm_lse.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		float s = lane < comm.world ? v.y * expf(v.x - mx) : 0.f;
/* pkb-with */
		float s = lane < comm.world ? v.y : 0.f;
/* pkb-end */
