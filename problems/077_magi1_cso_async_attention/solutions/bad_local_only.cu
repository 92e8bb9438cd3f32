/*
 * 077_magi1_cso_async_attention, known-bad: no communication. Every "peer"
 * read goes to the rank's own staging: its head group r attends to its own
 * block of keys only (repeated W times, which weighs like once), and out
 * gets that head group's results in every head group. Right nowhere: a
 * range's attention needs all W blocks of keys.
 * Otherwise identical to ok_symm_pull.cu.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_pull.cu
 */

/* pkb-replace */
	(void)me;
	return (const char *)stage[j];
/* pkb-with */
	(void)j;
	return (const char *)stage[me];   /* BUG: our own data for every peer's */
/* pkb-end */
