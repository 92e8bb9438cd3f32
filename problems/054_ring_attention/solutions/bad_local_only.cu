/*
 * 054_ring_attention, known-bad: local data only. Each rank attends to its
 * own block (the diagonal, causally masked) and never to the earlier
 * ranks' keys: rank 0 is right, every other rank's queries miss r*S of
 * their keys.
 * pkb-mutant-of: ok_symm_pull.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
	for (int j = 0; j < nblk; j++) {
/* pkb-with */
	for (int j = rank; j < nblk; j++) {
/* pkb-end */
