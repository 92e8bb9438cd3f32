/*
 * problem.h -- the registry of problems (found by glob at build time: the
 * Makefile writes build/problems_table.c from problems/NNN_name/problem.c),
 * lookup by id or name, and instantiation at given dims.
 */
#ifndef PKB_PROBLEM_REG_H
#define PKB_PROBLEM_REG_H

#include "pkb_problem.h"   /* defines: struct pkb_problem, pkb_io, pkb_dims */

int problem_count(void);
const struct pkb_problem *problem_at(int i);
/* "1", "001", "001_allreduce", "allreduce"; NULL if none */
const struct pkb_problem *problem_find(const char *spec);
/* describe() with the harness's checks (shapes positive, names unique ...);
 * returns 0 or -1 with io->err set */
int problem_describe(const struct pkb_problem *p, const struct pkb_dims *d, struct pkb_io *io);
int problem_world_ok(const struct pkb_problem *p, int world);
/* The world sizes a solution file's header line "pkb-worlds: 4 6 8" limits
 * it to (a bad_ file whose shortcut exists only there), as bits 1..63 of
 * the result; bit 0 marks an entry outside 1..63. Every bit when the text
 * (the file's) has no such line; 0 when the line names none. */
uint64_t problem_solution_worlds(const char *text);
/* "2-63", "2,4,8" */
void problem_worlds_str(const struct pkb_problem *p, char *buf, size_t n);
/* folder: <root>/problems/NNN_name */
char *problem_dir(const struct pkb_problem *p);
char *problem_reference_path(const struct pkb_problem *p);
int64_t tensor_desc_numel(const struct pkb_tensor_desc *t);
size_t tensor_desc_bytes(const struct pkb_tensor_desc *t);
/* The params as one JSON object, {"lr": 0.001, "beta1": 0.9}, in describe()'s
 * order, each value the shortest text that reads back as the same double
 * (inf and NaN as Python's json reads them: Infinity, NaN): what `pkb run
 * --save` writes in its files' metadata (key "params"). Free it. */
char *problem_params_json(const struct pkb_io *io);
void tensor_desc_shape_str(const struct pkb_tensor_desc *t, char *buf, size_t n);

#endif
