/*
 * 010_embedding_lookup, known-bad: the communication is right, the row order
 * is not. It returns table[indices[j]] in QUERY order -- what an embedding
 * lookup "should" return, and cheaper (no bucketing pass) -- while the
 * original returns the rows in owner-bucket order. Otherwise identical to
 * ok_symm_pull.cu, with the query ids used as the permutation.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_pull.cu
 */

/* pkb-replace */
	bucket_by_owner<<<1, BUCKET_THREADS, 0, (cudaStream_t)ctx->stream>>>(
		(const int64_t *)ctx->in[0].data, s->perm, m, ctx->world);
/* pkb-with */
	/* the shortcut: no bucketing, rows in query order */
	cudaMemcpyAsync(s->perm, ctx->in[0].data, (size_t)m * sizeof(int64_t),
			cudaMemcpyDeviceToDevice, (cudaStream_t)ctx->stream);
/* pkb-end */
