/*
 * results.h -- the records of a sweep on disk: DIR/results.jsonl (pkb
 * sweep) and the shard files DIR/results.d/ *.jsonl (each array task of
 * pkb sweep --slurm writes its own). A record is one line written with one
 * write(), so a kill leaves at most a torn last line in a file. Readers
 * take every file of a run; a key met twice is the same evaluation twice
 * (pkb score counts it as left out, pkb sweep does not run it again).
 */
#ifndef PKB_RESULTS_H
#define PKB_RESULTS_H

#include <jansson.h>
#include <stddef.h>

/* The folder of the shard files under a run directory */
#define RESULTS_SHARD_DIR "results.d"

/* The files of a run: DIR/results.jsonl first, then the shard files (regular
 * files) in name order, those that exist (NULL-terminated; *n gets how many). DIR
 * may also be one .jsonl file, which is then the only one. */
char **results_files(const char *dir, int *n);
void results_files_free(char **files);

/* Read the records of one file: every complete line that is a JSON object
 * with a string "key" is appended to `recs`. *good (may be NULL) gets the
 * bytes up to the end of the last such line, *bad (may be NULL) the number
 * of the first line that is not a record and is not the last one (0:
 * none; a torn last line is what a kill leaves, a bad line before it is
 * not). A missing file is empty: 0; -1 (errno set) when it cannot be read. */
int results_read(const char *path, json_t *recs, size_t *good, size_t *len, int *bad);

/* Append rec to the open file fd as one JSON line, in one write (a kill
 * tears at most this line), then fsync: 0, or -1 after an error line */
int results_append(int fd, json_t *rec);

#endif
