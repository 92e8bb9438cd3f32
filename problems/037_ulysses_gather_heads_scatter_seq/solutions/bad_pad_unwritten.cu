/*
 * 037_ulysses_gather_heads_scatter_seq, known-bad: moves the real positions
 * only and never writes the padding's zeros, so the output keeps whatever
 * was there (the harness's poison). Right whenever W divides T, as at the
 * default shape; evaluated at N = 320 (T = 5), where every W in {2, 4, 8}
 * pads. Otherwise identical to ok_symm_pull.cu.
 * pkb-expect: mismatch
 * pkb-args: --n 320
 * pkb-mutant-of: ok_symm_pull.cu
 */

/* pkb-replace */
						out[dst_at(L, me, u)] = v;
/* pkb-with */
						if (src_at(L, me, u) >= 0)   /* BUG: padding skipped */
							out[dst_at(L, me, u)] = v;
/* pkb-end */

/* pkb-replace */
				[&](int k, int64_t u, U v) { out[dst_at(L, rk[k], u)] = v; });
/* pkb-with */
				[&](int k, int64_t u, U v) {
					if (src_at(L, me, u) >= 0)   /* BUG: padding skipped */
						out[dst_at(L, rk[k], u)] = v;
				});
/* pkb-end */
