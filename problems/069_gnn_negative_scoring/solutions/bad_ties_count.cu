/*
 * 069_gnn_negative_scoring, known-bad: counts the negatives at or above the
 * positive, not strictly above -- the place of an unstable sort that puts
 * the positive after its ties. In bf16 most rows hold such a tie, so most
 * ranks come out too large. Otherwise identical to ok_symm_count.cu.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_count.cu
 */

/* pkb-replace */
			c += sig_t(src[lay.nmax + i * k + j]) > p;
/* pkb-with */
			c += sig_t(src[lay.nmax + i * k + j]) >= p;   /* the bug: ties counted */
/* pkb-end */
