/*
 * 080_dinov2_distributed_sinkhorn_knopp, known-bad: the prototype sums are
 * all-reduced in the first iteration only, and the next two iterations
 * normalise by the local sums (a third of the traffic). After the first
 * column normalisation the elements keep their spread (log-std ~0.14), so a
 * local sum over B samples still differs from the global one by
 * ~0.14/sqrt(B) per prototype: 0.6% rms at B = 512, far outside rtol ~5e-5.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_sums.cu
 */
/* pkb-replace */
		allreduce_small<<<pb, THREADS, 0, st>>>(ctx->dev, (float *const *)s->sums.peers_dev,
							s->sums_tot, p);
/* pkb-with */
		if (it == 0)
			allreduce_small<<<pb, THREADS, 0, st>>>(ctx->dev,
				(float *const *)s->sums.peers_dev, s->sums_tot, p);
		else
			cudaMemcpyAsync(s->sums_tot, sums, (size_t)p * sizeof(float),
					cudaMemcpyDeviceToDevice, st);
/* pkb-end */
