/*
 * 001_allreduce, known-bad (issue 36: a candidate's fault after its last
 * checked call): honest throughout, then pkb_fini has a host thread launch
 * a kernel that spins for 20 ms and then writes to an unmapped address,
 * waits only until that launch is queued, and returns 0. Every output was
 * right and pkb_fini returned before the fault, so only a look at the GPU
 * after pkb_fini can fail it: the solution process synchronises its device
 * after pkb_fini's own wait and again as its last step before it reports
 * and exits; under MPS the fault also reaches the judge's context, which
 * the judge looks at as soon as the candidate's process is reaped
 * (rank.c:sol_stop). Each ends in the candidate's runtime_error, never a
 * verdict about the reference.
 * History: its first form, bad_fault_after_exit.cu (late calls left
 * undrained), faulted or not as the peers' exits raced (mismatch at W = 2
 * and timeout at W = 4 on 4x H200, 2026-11-28); the next, a detached thread
 * that launched the fault after pkb_fini returned, passed on 2x H200
 * (2026-11-28): the process synchronised and exited before the thread had
 * launched anything, so no fault ever ran. A fault that never runs is no
 * failure; this one is queued before pkb_fini returns.
 * pkb-expect: runtime_error
 * pkb-args: --measure-perf --trials 1 --warmup 20 --iters 50
 */
#define pkb_fini honest_fini
#include "ok_oneshot_pull.cu"
#undef pkb_fini
#include <pthread.h>

__global__ void poke_unmapped_later(long long ns)
{
	long long t0;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
	for (long long t = t0; t - t0 < ns;)
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	*(volatile int *)0x10 = 1;   /* below every mapping: an illegal address */
}

/* launches the fault and returns at once: nothing waits for the kernel */
static void *late_fault(void *arg)
{
	cudaStream_t s;
	if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess)
		poke_unmapped_later<<<1, 1, 0, s>>>(20 * 1000 * 1000);
	(void)arg;
	return NULL;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	int rc = honest_fini(ctx);
	pthread_t t;
	if (pthread_create(&t, NULL, late_fault, NULL) == 0)
		pthread_join(t, NULL);   /* the launch, not the kernel */
	return rc;   /* a launch that failed passes, and the suite says so */
}
