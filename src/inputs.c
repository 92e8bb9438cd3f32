/*
 * inputs.c -- see inputs.h. Moved out of rank.c (issue 39): timing.c draws
 * its input groups with it, and it calls nothing above it.
 */
#include "inputs.h"
#include "kernels.h"   /* defines: kern_fill */
#include "problem.h"   /* defines: problem_find, problem_describe, tensor_desc_bytes */
#include "rank_link.h" /* defines: rank_fail, CUDA_OR */
#include "util.h"      /* defines: sha256, xmalloc */

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

/* The key of one tensor's draw: SHA-256 of (seed, problem, trial, rank or
 * "all", tensor), its first 8 bytes. One-way, so that a solution that
 * recovers the key of a tensor it sees (host-drawn inputs are splitmix64
 * streams of it, and splitmix64 can be run backwards) learns neither the
 * seed nor a peer's key: a chain of mix64 steps was a bijection at every
 * step, and its constants are public (issue 44: inputs regenerated instead
 * of communicated). */
static uint64_t input_key(struct rank_env *E, int trial, int tensor, int same)
{
	int64_t words[5] = { (int64_t)E->seed, E->p->id, trial, same ? -1 : E->rank, tensor };
	unsigned char md[32];
	sha256(words, sizeof words, md);
	uint64_t k = 0;
	for (int i = 0; i < 8; i++)
		k = k << 8 | md[i];
	return k;
}

void gen_inputs(struct rank_env *E, int trial, void *const *bufs)
{
	gen_inputs_async(E, trial, bufs, NULL);
}

void gen_inputs_async(struct rank_env *E, int trial, void *const *bufs, void **staging)
{
	struct pkb_dims d = E->dims;
	d.trial = trial;
	d.common_seed = input_key(E, trial, -1, 1);
	for (int i = 0; i < E->io.n_in; i++) {
		const struct pkb_tensor_desc *t = &E->io.in[i];
		size_t bytes = tensor_desc_bytes(t);
		uint64_t key = input_key(E, trial, i, t->same_on_all_ranks);
		if (t->dist.kind == PKB_DIST_HOST) {
			/* staging: pinned, the caller's, reused only once the stream
			 * has passed this copy; else a buffer of its own, waited for */
			void *h = staging ? staging[i] : xmalloc(bytes);
			if (staging && !h) {
				CUDA_OR(E, OUT_RUNTIME_ERROR, cudaMallocHost(&h, bytes + 16));
				staging[i] = h;
			}
			if (E->p->gen_host(&d, i, key, h, bytes) != 0)
				rank_fail(E, OUT_INTERNAL, "gen_host of input '%s' failed", t->name);
			CUDA_OR(E, OUT_RUNTIME_ERROR,
				cudaMemcpyAsync(bufs[i], h, bytes, cudaMemcpyHostToDevice, E->stream));
			if (staging)
				continue;
			CUDA_OR(E, OUT_RUNTIME_ERROR, cudaStreamSynchronize(E->stream));
			free(h);
		} else if (kern_fill(bufs[i], t->dtype, tensor_desc_numel(t), (int)t->dist.kind,
				     t->dist.a, t->dist.b, key, (struct CUstream_st *)E->stream)) {
			rank_fail(E, OUT_RUNTIME_ERROR, "input generation failed for '%s'", t->name);
		}
	}
}
