/* validated.h -- pkb list's gpu-validated and vs-original columns, from the
 * committed results of the GPU suite and of tools/crosscheck */
#ifndef PKB_VALIDATED_H
#define PKB_VALIDATED_H
#include "problem.h"
#include <stddef.h>
struct json_t;
/* The content a suite record of p was made with: SHA-256 (hex) over every
 * file under p's folder but its text (*.md) and every problems/lib header
 * they include (the closure), sorted by path relative to pkb's root, each
 * as "path\0" then its bytes then "\0". tools/test-gpu writes it into each
 * record ("problem_sha256", from `pkb list --json`); a record whose value
 * is not the problem's current one is no record. Computed once per problem
 * and kept in `newest` (validated_load's); NULL when the folder cannot be
 * read. */
const char *validated_sha(struct json_t *newest, const struct pkb_problem *p);
/* the newest outcome of every (problem, W, solution) at the default shape */
struct json_t *validated_load(void);
/* the world sizes at which every case of p passed: "2,4" or "-" in buf, and as an array */
struct json_t *validated_worlds(struct json_t *newest, const struct pkb_problem *p, char *buf,
				size_t len);
/* the newest tools/crosscheck result of every (problem, W) */
struct json_t *crosscheck_load(void);
/* "2,4" (W where it agrees with the original), "2 layout@4", or "-" in buf;
 * and {"W": result} */
struct json_t *crosscheck_worlds(struct json_t *newest, const struct pkb_problem *p, char *buf,
				 size_t len);
#endif
