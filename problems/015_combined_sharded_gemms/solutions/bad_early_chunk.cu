/*
 * 015_combined_sharded_gemms, known-bad: ok_push_once.cu with the GEMMs
 * enqueued before the kernel that gathers X, i.e. X consumed before its
 * barrier says every rank's rows have landed. GEMM 1 reads the fixed X as
 * the previous call's gather left it (never written, on the first call):
 * another trial's rows, since every trial's inputs are fresh. Wrong at any
 * W, every call, on every rank; the gather kernel and its one barrier run
 * as often and in the same order as in the ok_ file, so it cannot hang.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_push_once.cu
 */

/* pkb-replace */
	return gather(ctx, s) || mlp(ctx, s);
/* pkb-with */
	/* the bug: the GEMMs consume X before this call's rows are in it */
	return mlp(ctx, s) || gather(ctx, s);
/* pkb-end */
