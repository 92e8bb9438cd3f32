/*
 * 080_dinov2_distributed_sinkhorn_knopp, known-bad: local data only. The
 * "all-reduce" returns this rank's own sums, so total_batch is B, the mass
 * is local and every prototype is normalised by its sum over the local batch
 * only. The per-prototype factor is off by ~0.14/sqrt(B) (0.6% rms at
 * B = 512; the exp values have a log-std of 0.01/0.07), which the column
 * normalisation cannot remove: ~70x the tolerance.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_sums.cu
 */
/* pkb-replace */
	if (!pkb_barrier_block(comm, blockIdx.x))   /* every rank's sums written */
		return;
	int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x;
	if (i < n) {
		float acc = 0.f;
		for (int r = 0; r < comm.world; r++)
			acc += peers[r][i];
		tot[i] = acc;
	}
	pkb_barrier_block(comm, blockIdx.x);        /* every rank done reading */
/* pkb-with */
	int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x;
	if (i < n)
		tot[i] = peers[comm.rank][i];
/* pkb-end */
