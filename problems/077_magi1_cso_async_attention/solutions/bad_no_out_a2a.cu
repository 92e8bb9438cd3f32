/*
 * 077_magi1_cso_async_attention, known-bad: skips the output all-to-all.
 * The rank's attention results (R, W*spb, Hq/W, 128) -- its heads for all
 * positions of every range -- are written to out as they are, the same
 * number of elements as out's (R*spb, Hq, 128): the layout of the head
 * owners, not of the query owners. Right nowhere but by chance. Otherwise
 * identical to ok_symm_pull.cu.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_pull.cu
 */

/* pkb-replace */
		out[o] = src[((i * comm.world + me) * d.spb + s) * qu + u];
/* pkb-with */
		(void)src;   /* BUG: our own o_loc, unexchanged */
		out[o] = ((const int4 *)((const char *)stage[me] + o_off))[o];
/* pkb-end */
