/*
 * 068_gnn_sparse_feature_fetch_projection, known-bad: no peer is read or
 * written. Each owner serves only its own queries, so the (W-1)/W of the
 * rows owned by peers are never fetched: they keep whatever the emb
 * buffer held (zeros at first, other calls' rows later).
 * pkb-mutant-of: ok_symm_serve.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		if (o != me)
			continue;
/* pkb-with */
		if (o != me || s != me)
			continue;
/* pkb-end */
