/*
 * What a CUDA context costs a new process, step by step (issue 40): the
 * launch's largest fixed cost is each process's context (the judge's
 * cuda_init 2.68 s median at W = 4, the candidate's 2.55 s, on 4x H200,
 * 2026-11-28). Prints one line of seconds: cuInit, the device's primary
 * context retained and current, the first 1 MiB allocation.
 *   cc -O2 tests/gpu/ctx_probe.c -I$CUDA/include -L$CUDA/lib64/stubs -lcuda
 *   ./ctx_probe [ORDINAL]      (tools/ctx-probe runs it in each setting)
 * Not a test: the evidence for the launch's start-up, run on a lent GPU.
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int check(CUresult r, const char *what)
{
	if (r == CUDA_SUCCESS)
		return 0;
	const char *s = NULL;
	cuGetErrorString(r, &s);
	fprintf(stderr, "ctx_probe: %s: %s\n", what, s ? s : "?");
	return 1;
}

int main(int argc, char **argv)
{
	int ord = argc > 1 ? atoi(argv[1]) : 0, n = 0;
	double t0 = now();
	if (check(cuInit(0), "cuInit"))
		return 1;
	double t1 = now();
	CUdevice d;
	CUcontext c;
	CUdeviceptr p;
	if (check(cuDeviceGetCount(&n), "cuDeviceGetCount") || check(cuDeviceGet(&d, ord), "cuDeviceGet") ||
	    check(cuDevicePrimaryCtxRetain(&c, d), "cuDevicePrimaryCtxRetain") ||
	    check(cuCtxSetCurrent(c), "cuCtxSetCurrent"))
		return 1;
	double t2 = now();
	if (check(cuMemAlloc(&p, 1 << 20), "cuMemAlloc"))
		return 1;
	double t3 = now();
	printf("devices %d init %.3f context %.3f alloc %.3f total %.3f\n", n, t1 - t0, t2 - t1,
	       t3 - t2, t3 - t0);
	return 0;
}
