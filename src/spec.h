/*
 * spec.h -- the problem SPEC of `pkb generate` and `pkb sweep`: "all", ids
 * and ranges ("1-8,13"), problem names ("allreduce", "001_allreduce") and
 * category names ("collective-primitive", "Tensor Parallel"), comma
 * separated, in any mix.
 */
#ifndef PKB_SPEC_H
#define PKB_SPEC_H

#include <stddef.h>
#include "pkb_problem.h"   /* defines: struct pkb_problem */

/* The problems SPEC names, in id order, each once: a malloc'd array of *n
 * entries (free() it). NULL with a one-line reason in err when an item
 * names nothing (an unknown id, name or category, a range with no problem,
 * an empty item). */
const struct pkb_problem **spec_parse(const char *spec, int *n, char *err, size_t errn);

#endif
