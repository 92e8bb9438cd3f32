/*
 * build.h -- compile a solution .cu into a shared object with nvcc, through
 * a content-addressed cache: the key hashes the source, the ABI headers, the
 * flags and the compiler's version, so a second build of an unchanged file
 * compiles nothing.
 */
#ifndef PKB_BUILD_H
#define PKB_BUILD_H

#include <stddef.h>

struct build_opts {
	const char *arch;        /* "sm_90a" */
	int reference;           /* link NCCL */
	double timeout_s;        /* the compile deadline */
	const char *tk_root;     /* the parallelkittens backend: ThunderKittens' root
				    (build_tk_root), its include/ and prototype/ on the
				    path and its flags on the line; NULL otherwise */
	const char *python;      /* the triton backend: the interpreter
				    (build_python_path); the source is a .py file,
				    syntax-checked and kept in the cache as it is */
};

struct build_result {
	int ok;
	int cached;              /* nothing was compiled */
	int timed_out;
	char key[65];
	char *so_path;
	char *log;               /* the compiler's output (on failure) */
	char *flags;             /* the full command line, for the record */
	double seconds;
};

void build_opts_init(struct build_opts *o);
/* ThunderKittens' root for the parallelkittens backend: $THUNDERKITTENS_ROOT
 * resolved (malloc'd), or NULL with `why` when it is unset or has no
 * include/kittens.cuh (pkb never downloads it: docs/BACKENDS.md) */
char *build_tk_root(char *why, size_t n);
/* The Python of the triton backend: $PKB_PYTHON, else python3, found on
 * PATH (not resolved through links: a venv's python is a link), as an
 * absolute path (malloc'd); NULL with `why` when there is none. */
char *build_python_path(char *why, size_t n);
const char *build_cache_dir(void);    /* $PKB_CACHE or ~/.cache/pkb */
/* 0 when a verdict was reached (see r->ok), -1 on an internal error */
int build_solution(const char *src, const struct build_opts *o, struct build_result *r);
void build_result_free(struct build_result *r);
const char *build_nvcc_version(void);

/* the head of a compiler log as the results keep it: at most 40 lines or
 * 4000 bytes, then a line saying how much was cut */
char *build_log_head(const char *log);

#endif
