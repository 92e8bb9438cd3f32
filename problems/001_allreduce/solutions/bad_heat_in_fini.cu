/*
 * 001_allreduce, known-bad (a candidate that heats the GPU for the
 * reference): honest in every call, then pkb_fini runs a power virus, FMA
 * chains on every SM, for 15 s before it returns. The reference is timed
 * next on the same GPU; hot, it boosts less, and the speedup grows. The
 * judge reads the GPU's temperature (NVML) before the candidate's pkb_fini
 * and after its process ended: a rise of more than 5 C (therm.h) is work
 * run after the last timed call, and the evaluation is flagged. Its wait
 * for the GPU to cool before the reference's warmup is the second line.
 * pkb-expect: flagged
 * pkb-args: --measure-perf --trials 1 --warmup 20 --iters 50
 */
#define pkb_fini honest_fini
#include "ok_oneshot_pull.cu"
#undef pkb_fini

#ifndef HEAT_NS
#define HEAT_NS 15000000000ull
#endif

__device__ __forceinline__ unsigned long long heat_clock(void)
{
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

__global__ void heat(float *sink, unsigned long long until)
{
	float a = threadIdx.x * 1e-3f, b = 1.0001f, c = 0.9999f, d = blockIdx.x * 1e-3f;
	while (heat_clock() < until)
		for (int i = 0; i < 1024; i++) {
			a = fmaf(a, b, c);
			d = fmaf(d, c, b);
		}
	if (a + d == 12345.0f)   /* never, but the compiler cannot know */
		sink[0] = a + d;
}

__global__ void now_ns(unsigned long long *t)
{
	*t = heat_clock();
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	int rc = honest_fini(ctx), dev = 0, sms = 0;
	unsigned long long *t = NULL, start = 0;
	float *sink = NULL;
	if (cudaGetDevice(&dev) != cudaSuccess ||
	    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
	    cudaMalloc(&t, sizeof *t) != cudaSuccess || cudaMalloc(&sink, sizeof *sink) != cudaSuccess)
		return rc;
	now_ns<<<1, 1>>>(t);
	cudaMemcpy(&start, t, sizeof start, cudaMemcpyDeviceToHost);
	heat<<<sms * 8, 256>>>(sink, start + HEAT_NS);
	cudaDeviceSynchronize();
	cudaFree(t);
	cudaFree(sink);
	return rc;
}
