/*
 * 026_moe_token_preprocess, known-bad: counts tokens, not (slot, token)
 * hits -- a token whose two slots picked the same expert counts once
 * (routing read as a set, as a bool routing map would). About 1/8 of the
 * tokens pick an expert twice, so every count is ~M/64 low.
 * pkb-mutant-of: ok_symm_push.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		for (int e = 0; e < EXPERTS; e++)
			for (int k = 0; k < TOPK; k++)
				c[e] += mask[((int64_t)e * TOPK + k) * m + t] != 0.f;
/* pkb-with */
		for (int e = 0; e < EXPERTS; e++)
			c[e] += mask[(int64_t)e * TOPK * m + t] != 0.f ||
				mask[((int64_t)e * TOPK + 1) * m + t] != 0.f;
/* pkb-end */
