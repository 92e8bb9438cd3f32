/*
 * loader.h -- what the parent checks in a compiled solution before any rank
 * loads it: the entry points and ABI symbol exist, and no undefined symbol or
 * needed library is one its backend forbids (read from the ELF dynamic
 * section with libelf, not guessed from the source).
 */
#ifndef PKB_LOADER_H
#define PKB_LOADER_H

#include <stddef.h>

/* backends: "cuda" (candidates: no NCCL), "nccl-device" (NCCL's symmetric
 * windows and device API, no host collective), "parallelkittens" (cuda's
 * rule, compiled against ThunderKittens: docs/BACKENDS.md), "triton" (a
 * Python file: docs/BACKENDS.md), "reference" (anything) */
int loader_backend_valid(const char *backend);
/* the backend links NCCL and its solutions get ctx->nccl_comm */
int loader_backend_uses_nccl(const char *backend);
/* the backend compiles against ThunderKittens' headers (build.h: tk_root) */
int loader_backend_uses_tk(const char *backend);
/* the backend's candidate is a Python file (triton): built by
 * build_python, not scanned, hosted by src/pybridge.c */
int loader_backend_uses_python(const char *backend);
/* the candidates' backends, for help and error messages: "cuda, ..." */
const char *loader_backend_names(void);
/* the backend's rule in one sentence, for a refused candidate's author
 * (pkb agent's feedback); "" for an unknown backend */
const char *loader_backend_rule(const char *backend);
/* 0 if acceptable; 1 if refused (why says what); -1 if unreadable */
int loader_scan(const char *so_path, const char *backend, char *why, size_t n);

#endif
