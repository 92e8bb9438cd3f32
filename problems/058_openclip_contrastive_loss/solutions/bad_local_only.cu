/*
 * 058_openclip_contrastive_loss, known-bad: local data only. The loss is
 * this rank's own term (positives and its own negatives): the W-1 peers'
 * negatives terms, each ~1/W of the loss with the clustered features, are
 * missing -- 50% low at W = 2, 75% at W = 4, against rtol = (2W + 4) u.
 * pkb-mutant-of: ok_gather_onegemm.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
	finish<T><<<1, 64, 0, st>>>(s->part, w, b, (T *)ctx->out[0].data);
/* pkb-with */
	finish<T><<<1, 64, 0, st>>>(s->part + ctx->rank * CHUNKS, 1, b, (T *)ctx->out[0].data);
/* pkb-end */
