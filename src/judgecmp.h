/*
 * judgecmp.h -- the judge's outputs: copied to its host and compared
 * (compare.c's tolerance model) into the JSON records of docs/RESULTS.md
 * (issue 39: out of rank.c, below both rank.c and timing.c).
 */
#ifndef PKB_JUDGECMP_H
#define PKB_JUDGECMP_H

#include "rank_env.h"  /* defines: struct rank_env */

#include <jansson.h>

/* the outputs dev[] into the host buffers host[], waited for */
void copy_outputs(struct rank_env *E, void *const *dev, void **host);
/* E->host_out against E->host_ref; the mismatches appended to outs */
int compare_outputs(struct rank_env *E, json_t *outs);
/* the same into `scratch`; the records of the first comparison that fails
 * (*ok still 1) go to outs, and *ok becomes 0 */
void compare_keep_first(struct rank_env *E, json_t *scratch, json_t *outs, int *ok);

#endif
