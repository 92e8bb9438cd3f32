/*
 * 049_moe_ep_balanced, known-bad: the router's product rounded to T before its
 * bias is added, logits = T(T(x Wr^T) + br), where F.linear's is one
 * rounding, T(x Wr^T + br). Where a token's logits are a few units apart,
 * the moved ulp (0.25 at a logit of 40) moves its weights by up to 0.12.
 *
 * The original's router came out so under torch 2.11 on H200 (crosscheck
 * at W = 2, seed 20261128: this model reproduces its count and worst
 * element exactly): cuBLASLt takes a split-K algorithm for the skinny
 * (1024 x 1024) x (1024 x E) GEMM, and its bias epilogue adds the bias to
 * the split sum already rounded to bf16 (pytorch/pytorch#180875). A
 * candidate gets it from cuBLAS with the bias as C and beta = 1
 * (lib/linear.cuh). Host simulation (bf16, W = 2, seeds 1-20, trials 0
 * and 1): 39 of the 40 (seed, trial) pairs fail on a rank,
 * the worst element 1.0 to 4.8 times its bound; eval's 3 trials miss it
 * with odds about 2e-5.
 * In fp32 the two roundings are one: the suite runs it in bf16.
 * pkb-mutant-of: ok_symm_weights.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
		p[i] = rt<T>(acc[t * e + i] + pkb_to_float(br[i]));
/* pkb-with */
		p[i] = rt<T>(rt<T>(acc[t * e + i]) + pkb_to_float(br[i]));
/* pkb-end */
