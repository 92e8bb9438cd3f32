/*
 * 068_gnn_sparse_feature_fetch_projection, known-bad: the fetch is right
 * but the projection is applied transposed, emb @ proj^T: the shapes agree
 * (proj is square), the numbers do not.
 * pkb-mutant-of: ok_symm_serve.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
	return cublasGemmEx(s->blas, CUBLAS_OP_N, CUBLAS_OP_N, e, (int)s->q, e, &one,
/* pkb-with */
	return cublasGemmEx(s->blas, CUBLAS_OP_T, CUBLAS_OP_N, e, (int)s->q, e, &one,
/* pkb-end */
