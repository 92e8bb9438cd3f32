/*
 * inputs.h -- a rank's job described and its inputs drawn (issue 39: out
 * of rank.c, below both rank.c and timing.c). The draw is deterministic
 * in (seed, problem, trial, rank, tensor): docs/ANTI_CHEAT.md says why the
 * key is one-way.
 */
#ifndef PKB_INPUTS_H
#define PKB_INPUTS_H

#include "rank_env.h"  /* defines: struct rank_env */

/* the problem, dims, io and device timeout of E->job (judge and solution
 * process alike) */
void describe_job(struct rank_env *E);
/* trial `trial`'s inputs into the device buffers bufs[], waited for */
void gen_inputs(struct rank_env *E, int trial, void *const *bufs);
/* what gen_inputs_async draws: every tensor; the host-drawn ones already
 * in `staging` (draw_host_many), the rest drawn; or the device-drawn
 * ones only, the host-drawn left as they are */
enum gen_what { GEN_ALL, GEN_STAGED, GEN_DEVICE_ONLY };
/* the same without waiting: host-drawn tensors go through `staging`
 * (pinned, allocated on first use, one per tensor), which the caller does
 * not reuse before the stream has passed the copy */
void gen_inputs_async(struct rank_env *E, int trial, void *const *bufs, void **staging,
		      enum gen_what what);
/* n trials' host-drawn tensors, trials[k] into staging[k] (allocated
 * where missing), on this host's share of its CPUs (hostdraw_many); no
 * CUDA call but the allocation, nothing enqueued */
void draw_host_many(struct rank_env *E, int n, const int *trials, void **const *staging);

#endif
