/*
 * 060_physicsnemo_distributed_irfft, known-bad: ok_symm_pull without the
 * Hermitian completion -- the one-sided spectrum zero-padded to Wd and
 * transformed as it is (columns 1 .. Wd/2-1 not doubled), the missing
 * conjugate half's contribution dropped: about half of every output's
 * variance is lost (simulated: 2e5x the element bound).
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_pull.cu
 */

/* pkb-replace */
			float f = k > 0 && k < half ? 2.f : 1.f;
/* pkb-with */
			float f = 1.f;
/* pkb-end */
