/*
 * refcache.h -- the reference's trial outputs, kept across evaluations of
 * the same instance (issue 40).
 *
 * A sweep or the GPU suite evaluates many candidates of one problem at one
 * world size, dtype and shape. Given one seed for all of them (`--seed`,
 * which the candidates never see), every evaluation draws the same trial
 * inputs, and the reference's outputs on them are the same up to the
 * reference's own run-to-run noise: the judge computes them once, keeps
 * them here, and later evaluations compare the candidate with them without
 * starting the reference's process (its CUDA context and its NCCL
 * communicator, half of an untimed launch).
 *
 * An entry is one rank's outputs of one trial, named by the SHA-256 of its
 * identity (struct refcache_id, which names everything the outputs depend
 * on: the reference's object and pkb's binary themselves, not a path or a
 * version string), and holds that
 * identity in full, so that a name collision or a stale file reads as a
 * miss, never as another instance's outputs. Files are written atomically
 * (write, then rename) and end in the SHA-256 of everything before it: a
 * torn or altered file is a miss. Nothing here needs CUDA
 * (tests/unit/test_refcache.c).
 *
 * The folder must be one no solution process can read or write: the
 * judge's cache, never a solution object's folder (sandbox.h: a solution
 * process reads only system folders and the folders of the objects it
 * loads).
 */
#ifndef PKB_REFCACHE_H
#define PKB_REFCACHE_H

#include <stddef.h>
#include <stdint.h>

/* everything one rank's reference outputs of one trial depend on */
struct refcache_id {
	char object_sha[65];      /* SHA-256 hex of the reference's .so */
	char pkb_sha[65];         /* of pkb's own binary: it draws the inputs */
	int problem;              /* its id */
	int world, rank, trial;
	char dtype[16];
	long long m, n;
	uint64_t seed;
	char gpu[96];             /* the device's name (cuBLAS picks kernels by it) */
	char versions[96];        /* pkb, the CUDA runtime and driver, NCCL */
};

/* the entry's file name, 64 hex digits */
void refcache_name(const struct refcache_id *id, char out[65]);

/* Read the entry of `id` under dir into host[i] (n_out buffers of bytes[i]
 * each). 1 on a hit; 0 on a miss (no file, another identity, other sizes,
 * a torn or altered file), the buffers then unspecified. */
int refcache_load(const char *dir, const struct refcache_id *id, int n_out,
		  const size_t *bytes, void *const *host);

/* Write the entry of `id` under dir (created as needed), replacing any.
 * 0, or -1 with err (the evaluation goes on without it). */
int refcache_store(const char *dir, const struct refcache_id *id, int n_out,
		   const size_t *bytes, const void *const *host, char *err, size_t n);

#endif
