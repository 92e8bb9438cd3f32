/*
 * 073_vocab_parallel_cross_entropy_loss, known-bad: no communication. Each
 * rank forms the loss over its own vocabulary shard only: log S misses the
 * other W-1 shards (about log W low) and the target logit counts only
 * where this rank holds it (0 elsewhere, ~3 off). 40x the element bound.
 * pkb-mutant-of: ok_symm_lse.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		if (lane < comm.world)
			v = ((const float2 *)(buf[lane] + off))[i];
/* pkb-with */
		if (lane == comm.rank)
			v = ((const float2 *)(buf[lane] + off))[i];
/* pkb-end */

/* pkb-replace */
			float t = ((const float *)(buf[owner] + tgt_off))[i];
/* pkb-with */
			float t = owner == comm.rank ? xt[i] : 0.f;
/* pkb-end */
