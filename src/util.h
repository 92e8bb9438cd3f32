/*
 * util.h -- error reporting (git's die/error/BUG), allocation that cannot
 * fail, growable strings and argvs, SHA-256, clocks and small file helpers
 * shared by every module.
 *
 * How a failure is reported (one rule for the host code, issue 22):
 *  - a user's error (bad input, a missing file, a refused option) in any
 *    module: `return error("...")` (prints "error: ...", returns -1), with
 *    hint() for what to do next; the caller passes -1 up. Only cmd_* turn
 *    -1 into a documented exit code (docs/EXIT_CODES.md).
 *  - where the message must also land in a result record (a verdict's
 *    message, roofline's "error" key), a module fills a caller's char
 *    err[n] and returns -1 instead of printing; the caller prints or stores.
 *  - a harness bug (an impossible state, out of memory): BUG(), which exits
 *    with PKB_EXIT_INTERNAL. Never for something a user or candidate can do.
 *  - die() only in main.c and cmd_*, where nothing is left to clean up.
 *  - other stderr lines go through warning() and hint(), never a bare
 *    fprintf(stderr); the exceptions are raw tool output passed on as it
 *    came (nvcc's log) and job_progress's "pkb: ..." lines.
 */
#ifndef PKB_UTIL_H
#define PKB_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdnoreturn.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* "error: ..." on stderr; returns -1 so that `return error(...)` works */
int error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void hint(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* one line on stderr: prefix, the message, a newline (error's, warning's,
 * and each command's progress lines: "pkb: ", "agent: ") */
void vreport(const char *prefix, const char *fmt, va_list ap);
/* "fatal: ..." and exit(PKB_EXIT_INPUT); for main and cmd_* only */
noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* a harness bug: file and line, exit(PKB_EXIT_INTERNAL) */
#define BUG(...) bug_at(__FILE__, __LINE__, __VA_ARGS__)
noreturn void bug_at(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrfmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *xstrvfmt(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* A string that grows (git's strbuf, smaller): `s` is NULL until something
 * is added, then NUL-terminated; `len` excludes the NUL. */
struct strbuf {
	char *s;
	size_t len, cap;
};
#define STRBUF_INIT { 0 }
void strbuf_add(struct strbuf *b, const void *data, size_t n);
void strbuf_addstr(struct strbuf *b, const char *str);
void strbuf_addf(struct strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* the string, the caller's to free ("" when nothing was added); b is empty again */
char *strbuf_take(struct strbuf *b);
void strbuf_free(struct strbuf *b);

/* An argv that grows (git's strvec): v[0..n) are copies, v[n] is NULL once
 * anything was pushed. Free with strvec_free (or each v[i], then v). */
struct strvec {
	char **v;
	size_t n, cap;
};
#define STRVEC_INIT { 0 }
void strvec_push(struct strvec *a, const char *arg);
void strvec_pushf(struct strvec *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void strvec_free(struct strvec *a);

/* the SHA-256 of buf, 64 lowercase hex digits and a NUL (OpenSSL's EVP) */
void sha256_hex(const void *buf, size_t len, char out[65]);
/* the same digest, its 32 bytes */
void sha256(const void *buf, size_t len, unsigned char out[32]);
/* the SHA-256 of a file's bytes, as sha256_hex; 0, or -1 (errno) */
int sha256_file_hex(const char *path, char out[65]);

/* write a JSON value to path (indented, atomically); -1 with an error printed */
struct json_t;
int json_write_file(const char *path, struct json_t *value);
/* the string member `key` of object o, else `absent` (o NULL, no such
 * member, or not a string) */
const char *json_str(struct json_t *o, const char *key, const char *absent);

uint64_t now_ns(void);         /* CLOCK_MONOTONIC */
double now_s(void);            /* the same, in seconds */
double lap_s(uint64_t *mark);  /* seconds since *mark (now_ns), which moves to now */
/* 0 for a regular readable file, else error() naming why and -1: a
 * directory given as a candidate was an I/O error, then compile_error. */
int check_source_file(const char *path);
char *read_file(const char *path, size_t *len);   /* NULL on error (errno) */
/* all of buf[0..len) to fd (EINTR retried); 0, or -1 (errno) */
int write_all(int fd, const void *buf, size_t len);
int write_file_atomic(const char *path, const void *buf, size_t len);
int mkdir_p(const char *path);
int rm_rf(const char *path);
/* the directory holding the running executable's tree root (parent of bin/) */
#define PKB_VERSION "0.1"

const char *pkb_root(void);
/* Numbers in options and variables, strictly: all of s (no "3x", no ""),
 * no overflow, finite, within [lo, hi]. 0, or -1 with *out untouched; the
 * caller names the option in its own one-line error. */
int parse_int_in(const char *s, long long lo, long long hi, long long *out);
int parse_num_in(const char *s, double lo, double hi, double *out);
/* run argv (PATH lookup) in its own process group with stdout and stderr
 * into the file `log`; killed at the deadline. The exit status, 128+signal,
 * -2 on timeout, -1 if it could not start. */
int run_logged(char *const *argv, const char *log, double timeout_s);
/* The child of a run_* call, between fork and exec: its environment (NULL:
 * inherited) and a confinement hook (NULL: none), called in the child;
 * when it returns non-zero, the child writes `why` to its stderr and ends
 * with status 126 before running anything. */
struct run_child {
	char *const *envp;
	int (*setup)(void *arg, char *why, size_t n);
	void *arg;
};
/* run_logged with the child set up so */
int run_logged_child(char *const *argv, const char *log, double timeout_s,
		     const struct run_child *child);
/* the same with stdin from the file `in` (NULL: inherited), stdout into
 * `out` and stderr into `err` (the same path: one file) */
int run_redirected(char *const *argv, const char *in, const char *out, const char *err,
		   double timeout_s);
const char *pkb_self_exe(void);

/* 64-bit mixing (splitmix64): seeds for (seed, problem, trial, rank, tensor) */
static inline uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

#endif
