/*
 * inputs.c -- see inputs.h. Moved out of rank.c (issue 39): timing.c draws
 * its input groups with it, and it calls nothing above it.
 */
#include "inputs.h"
#include "hostdraw.h"  /* defines: hostdraw_key, hostdraw_one, hostdraw_many */
#include "kernels.h"   /* defines: kern_fill */
#include "problem.h"   /* defines: problem_find, problem_describe, tensor_desc_bytes */
#include "rank_link.h" /* defines: rank_fail, CUDA_OR */
#include "util.h"      /* defines: xmalloc */

#include <cuda_runtime_api.h>
#include <stdlib.h>

void describe_job(struct rank_env *E)
{
	E->p = problem_find(E->job.problem);
	if (!E->p)
		rank_fail(E, OUT_INTERNAL, "unknown problem in the job");
	E->dims.world = E->world;
	E->dims.rank = E->rank;
	E->dims.m = E->job.m;
	E->dims.n = E->job.n;
	E->dims.dtype = E->job.dtype;
	E->dims.trial = E->job.trial0;
	E->device_timeout_ns = (uint64_t)E->job.device_timeout_ms * 1000000ull;
	if (!E->device_timeout_ns)
		E->device_timeout_ns = 5000000000ull;
	if (problem_describe(E->p, &E->dims, &E->io) < 0)
		rank_fail(E, OUT_INTERNAL, "%s", E->io.err);
}

/* what this rank's draws depend on */
static struct hostdraw drawer(struct rank_env *E)
{
	return (struct hostdraw){ E->p, &E->io, E->dims, E->seed, E->rank };
}

void gen_inputs(struct rank_env *E, int trial, void *const *bufs)
{
	gen_inputs_async(E, trial, bufs, NULL, GEN_ALL);
}

static void stage_host_inputs(struct rank_env *E, void **staging)
{
	for (int i = 0; i < E->io.n_in; i++)
		if (E->io.in[i].dist.kind == PKB_DIST_HOST && !staging[i])
			CUDA_OR(E, OUT_RUNTIME_ERROR,
				cudaMallocHost(&staging[i], tensor_desc_bytes(&E->io.in[i]) + 16));
}

void draw_host_many(struct rank_env *E, int n, const int *trials, void **const *staging)
{
	for (int k = 0; k < n; k++)
		stage_host_inputs(E, staging[k]);
	struct hostdraw h = drawer(E);
	int failed = hostdraw_many(&h, n, trials, (void *const *const *)staging,
				   hostdraw_threads(E->job.host_size));
	if (failed >= 0)
		rank_fail(E, OUT_INTERNAL, "gen_host of input '%s' failed", E->io.in[failed].name);
}

void gen_inputs_async(struct rank_env *E, int trial, void *const *bufs, void **staging,
		      enum gen_what what)
{
	struct hostdraw hd = drawer(E);
	/* host-drawn tensors: in the caller's pinned staging, reused only once
	 * the stream has passed these copies; else in buffers of this call's
	 * own, waited for and freed. Drawn by hostdraw_one, as the threads of
	 * draw_host_many draw them (GEN_STAGED: already there). */
	void *own[PKB_MAX_TENSORS] = { 0 };
	void **host = staging ? staging : own;
	int copied = 0;
	if (what != GEN_DEVICE_ONLY) {
		if (staging)
			stage_host_inputs(E, staging);
		else
			for (int i = 0; i < E->io.n_in; i++)
				if (E->io.in[i].dist.kind == PKB_DIST_HOST)
					own[i] = xmalloc(tensor_desc_bytes(&E->io.in[i]) + 16);
		int failed = what == GEN_ALL ? hostdraw_one(&hd, trial, host) : -1;
		if (failed >= 0)
			rank_fail(E, OUT_INTERNAL, "gen_host of input '%s' failed", E->io.in[failed].name);
	}
	for (int i = 0; i < E->io.n_in; i++) {
		const struct pkb_tensor_desc *t = &E->io.in[i];
		if (t->dist.kind == PKB_DIST_HOST) {
			if (what == GEN_DEVICE_ONLY)
				continue;
			CUDA_OR(E, OUT_RUNTIME_ERROR, cudaMemcpyAsync(bufs[i], host[i], tensor_desc_bytes(t),
								     cudaMemcpyHostToDevice, E->stream));
			copied = 1;
		} else if (kern_fill(bufs[i], t->dtype, tensor_desc_numel(t), (int)t->dist.kind,
				     t->dist.a, t->dist.b,
				     hostdraw_key(&hd, trial, i, t->same_on_all_ranks),
				     (struct CUstream_st *)E->stream)) {
			rank_fail(E, OUT_RUNTIME_ERROR, "input generation failed for '%s'", t->name);
		}
	}
	if (staging || !copied)
		return;
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaStreamSynchronize(E->stream));
	for (int i = 0; i < E->io.n_in; i++)
		free(own[i]);
}
