/*
 * symm.h -- symmetric memory of a rank process (CUDA IPC over NVLink; the
 * file's header says how), used by the judge (its alignment barrier,
 * timing.c) and the solution process (solhost.c).
 */
#ifndef PKB_SYMM_H
#define PKB_SYMM_H

#include "rank_env.h"  /* defines: struct rank_env, struct symm_block */

#include <stddef.h>
#include <stdint.h>

/* one buffer of `bytes` on every rank, each mapped into every other; -1
 * with E->symm_err saying why. Collective: every rank calls it. */
int symm_make(struct rank_env *E, size_t bytes, struct symm_block *b);
void symm_free(struct rank_env *E, struct symm_block *b);
/* a device barrier's signal pads, epochs and error word, as a pkb_dev_comm */
int make_dev_comm(struct rank_env *E, struct symm_block *pads, uint32_t **epochs,
		  uint32_t **err, pkb_dev_comm *c);

#endif
