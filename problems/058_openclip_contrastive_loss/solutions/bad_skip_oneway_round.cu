/*
 * 058_openclip_contrastive_loss, known-bad: the exchange without its last,
 * one-way round. floor((W-1)/2) bidirectional rounds reach ranks r +- 1 ..
 * r +- (W-2)/2; when W is even the block of rank r + W/2 only comes with
 * the extra round the original adds for an odd W - 1. Skipping it drops
 * one negatives term, ~1/W of the loss: 50% at W = 2 (the only peer), 22%
 * at W = 4, 11% at W = 8, against rtol 3.1%, 4.7%, 7.8% in bf16. (At an
 * odd W there is no such round and this candidate is right.)
 * pkb-mutant-of: ok_gather_onegemm.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
	int64_t n = b * b;
/* pkb-with */
	int64_t n = w % 2 == 0 && j == (rank + w / 2) % w ? 0 : b * b;
/* pkb-end */
