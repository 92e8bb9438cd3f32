/*
 * 001_allreduce, known-bad (issue 36: a candidate's fault after its last
 * checked call): honest throughout, then pkb_fini starts a host thread
 * that launches a kernel writing to an unmapped address, and returns 0
 * without waiting. Every output was right, so only a look at the GPU after
 * pkb_fini can fail it. The solution process synchronises its device after
 * pkb_fini and again as the last thing before it reports and exits; under
 * MPS the fault also reaches the judge's context, which the judge looks at
 * as soon as the candidate's process is reaped (rank.c:sol_stop). Each of
 * the three ends in the candidate's runtime_error, never a verdict about
 * the reference. (Its first form, bad_late_host_thread.cu's late calls
 * left undrained, faulted or not as the peers' exits raced: mismatch at
 * W = 2 and timeout at W = 4 on 4x H200, 2026-11-28.)
 * pkb-expect: runtime_error
 * pkb-args: --measure-perf --trials 1 --warmup 20 --iters 50
 */
#define pkb_fini honest_fini
#include "ok_oneshot_pull.cu"
#undef pkb_fini
#include <pthread.h>

__global__ void poke_unmapped(void)
{
	*(volatile int *)0x10 = 1;   /* below every mapping: an illegal address */
}

static void *late_fault(void *arg)
{
	(void)arg;
	cudaStream_t s;
	if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess) {
		poke_unmapped<<<1, 1, 0, s>>>();
		cudaStreamSynchronize(s);
	}
	return NULL;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	int rc = honest_fini(ctx);
	pthread_t t;
	if (pthread_create(&t, NULL, late_fault, NULL) == 0)
		pthread_detach(t);
	return rc;
}
