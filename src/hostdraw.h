/*
 * hostdraw.h -- a rank's inputs as keys and host draws, without CUDA: the
 * one-way key of each tensor's draw, and the host-drawn tensors (a
 * problem's gen_host) of several trials at once on several threads. The
 * judge's inputs.c puts them on the GPU; the unit tests run them as they
 * are (test_hostdraw).
 */
#ifndef PKB_HOSTDRAW_H
#define PKB_HOSTDRAW_H

#include "problem.h"   /* defines: struct pkb_problem, struct pkb_io, struct pkb_dims */

#include <stdint.h>

/* what a rank's draws depend on */
struct hostdraw {
	const struct pkb_problem *p;
	const struct pkb_io *io;   /* the problem's description at dims */
	struct pkb_dims dims;      /* the rank's; trial and common_seed set per draw */
	uint64_t seed;             /* the evaluation's, never the solution's */
	int rank;
};

/* the key of tensor `tensor`'s draw in trial `trial` (same: the one all
 * ranks share), or with tensor -1 the trial's common seed */
uint64_t hostdraw_key(const struct hostdraw *h, int trial, int tensor, int same);
/* dims for trial `trial`: its number and common seed */
struct pkb_dims hostdraw_dims(const struct hostdraw *h, int trial);
/* trial `trial`'s host-drawn tensors into staging[i] (one buffer per
 * input, present for each host-drawn one): -1, or the index of the input
 * whose gen_host failed */
int hostdraw_one(const struct hostdraw *h, int trial, void *const *staging);
/* at most this many threads draw at once */
#define HOSTDRAW_MAX_THREADS 16
/* n trials at once, trials[k] into staging[k], on `threads` threads (at
 * most HOSTDRAW_MAX_THREADS, none past n; 1 draws in the caller's); -1 or
 * a failed input */
int hostdraw_many(const struct hostdraw *h, int n, const int *trials, void *const *const *staging,
		  int threads);
/* the threads a rank may draw on: this machine's CPUs over the ranks on
 * it (host_size), at least 1, at most HOSTDRAW_MAX_THREADS */
int hostdraw_threads(int host_size);

#endif
