/*
 * pybridge.h -- Python inside a solution process, for the `triton` backend
 * (docs/BACKENDS.md): the interpreter the user has (torch and Triton are
 * its packages), embedded by loading its shared libpython at run time, so
 * that pkb neither links Python nor needs its headers to build.
 *
 * pkb's own module python/pkb_triton.py is the only Python pkb calls: each
 * call passes one JSON string and gets back "" or an error message. The
 * candidate's file is imported by that module, after the sandbox.
 */
#ifndef PKB_PYBRIDGE_H
#define PKB_PYBRIDGE_H

#include <stddef.h>

#define PYBRIDGE_MAX_DIRS 48

/* What the interpreter `python` is, asked of it (it runs once, with a
 * deadline): its shared libpython, its prefixes and sys.path. */
struct pybridge_probe {
	char lib[1024];                      /* the shared libpython; "" when none */
	char version[32];
	char home[1024];                     /* sys.base_prefix: PYTHONHOME */
	char *dirs[PYBRIDGE_MAX_DIRS];       /* sys.prefix, base_prefix, sys.path's folders */
	int n_dirs;
	char *path_json;                     /* sys.path as a JSON array */
};
/* 0, or -1 with err (no such interpreter, no shared libpython: how to
 * get one) */
int pybridge_probe(const char *python, struct pybridge_probe *pr, char *err, size_t n);
void pybridge_probe_free(struct pybridge_probe *pr);

/* Start the interpreter of `pr` in this process (no signal handlers of its
 * own), with sys.path as pr has it and `shim_dir` first, import pkb_triton
 * and call its setup(setup_json). 0, or -1 with err. */
int pybridge_start(const struct pybridge_probe *pr, const char *shim_dir, const char *setup_json,
		   char *err, size_t n);
/* pkb_triton.<fn>(json): 0 when it returned "", else -1 with its message
 * (or Python's error, printed to stderr) in err */
int pybridge_call(const char *fn, const char *json, char *err, size_t n);

#endif
