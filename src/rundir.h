/*
 * rundir.h -- the run directory of `pkb generate` and `pkb agent`
 * (docs/GENERATE.md, docs/AGENT.md): durable files, the one-writer lock,
 * the temporary files a killed run leaves, and the run.json check that a
 * run goes on only with the arguments it was started with.
 */
#ifndef PKB_RUNDIR_H
#define PKB_RUNDIR_H

#include <jansson.h>
#include <stddef.h>

/* temp name in the same folder, fsync, rename, fsync the folder: a kill or
 * a power cut leaves the old file or the new one, never half of one.
 * 0, or -1 with errno set */
int rundir_write(const char *path, const void *buf, size_t len);
/* the same for a JSON value; -1 with an error printed */
int rundir_write_json(const char *path, json_t *v);
/* append one line (with its newline) in one write() and fsync it: a kill
 * leaves at most a torn last line, which rundir_read_jsonl drops */
int rundir_append_line(const char *path, const char *line);
/* the lines of a JSONL file that parse, in order (a torn last line is
 * left out); an empty array when the file does not exist; NULL (with an
 * error printed) when a line other than the last is not JSON */
json_t *rundir_read_jsonl(const char *path);
/* cut a JSONL file after its last newline: 1 if there was a torn line,
 * 0 if not (or no file), -1 on an error (printed) */
int rundir_trim_torn(const char *path);
/* 2026-11-22T10:00:00Z */
void rundir_utc_now(char *buf, size_t n);
/* One process per run directory: an flock on DIR/.lock, released by the
 * kernel when the process dies. The descriptor, or -1 if it is taken. */
int rundir_lock(const char *dir);
/* remove the temporary files (NAME.tmp.PID) a killed run left in dir:
 * safe under the lock */
void rundir_remove_stale(const char *dir);
/* Write DIR/run.json: {pkb_version, created, updated, args, (extra keys)}.
 * When one exists its args must equal `args` (else an error naming the
 * first that differs and -1), unless force. `extra` (may be NULL): other
 * keys, replaced every time (budgets that may change between runs). */
int rundir_open(const char *dir, json_t *args, json_t *extra, int force);
/* The full text of a prompt, once per distinct prompt, beside the samples
 * that were asked it: DIR/prompts/SHA.json = {prompt_sha256,
 * template_sha256, system, user}, where SHA is the sha256 of system, a NUL
 * byte, then user (the prompt_sha256 of every record that points at it).
 * Named by its content, so an existing file is kept. Its path relative to
 * DIR ("prompts/SHA.json", malloc'd), or NULL (error printed). */
char *rundir_store_prompt(const char *dir, const char *sha256, const char *template_sha256,
			  const char *system, const char *user);
/* every copy of key in s becomes [redacted] (*len follows): a server that
 * echoes the request must not put the key into a file */
void rundir_redact(char *s, size_t *len, const char *key);

#endif
