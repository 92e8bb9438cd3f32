/*
 * 069_gnn_negative_scoring, known-bad: the sigmoid is monotone, so the
 * raw scores are compared instead. But the original compares sigmoids
 * rounded to T, and in bf16 (and fp16) many distinct scores round to the
 * same sigmoid: those negatives tie with the positive and must not count.
 * Half the rows' ranks come out too high at the default (520 of 1027 rows
 * at W = 4, host simulation). (In fp32 the problem's score grid makes the
 * two the same.)
 * pkb-mutant-of: ok_symm_ranks.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
	float p = sigmoid_t(pos[row]);
	int c = 0;
	for (int64_t j = threadIdx.x; j < nneg; j += THREADS)
		c += sigmoid_t(neg[row * nneg + j]) > p;
/* pkb-with */
	float p = pkb_to_float(pos[row]);
	int c = 0;
	for (int64_t j = threadIdx.x; j < nneg; j += THREADS)
		c += pkb_to_float(neg[row * nneg + j]) > p;
/* pkb-end */
