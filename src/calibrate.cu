/*
 * calibrate.cu -- what `pkb calibrate` measures on this machine's GPUs (in
 * the child process `pkb __calibrate`, so the parent never touches CUDA):
 * HBM copy bandwidth, peer bandwidth one way and both ways with the copy
 * engine and with SM stores (one way also with SM loads), all-to-all
 * aggregate, bf16 GEMM FLOP/s, the round trip of a device-side flag between
 * two GPUs, and the floor of the timed loop (an empty call). Each figure is the best
 * of a few timed repetitions after a warmup (an achievable peak, not an
 * average). docs/ROOFLINE.md says how they are used.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cublas_v2.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kernels.h"   /* defines: struct calib */
#include "stats.h"

#define REPS 5

#define TRY(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \
	snprintf(err, n, "%s: %s", #call, cudaGetErrorString(e_)); return -1; } } while (0)

/* the best time in seconds of REPS runs of body() (after one warmup) on
 * device dev's stream s; body returns its first CUDA error */
template <typename F>
static cudaError_t best_time(int dev, cudaStream_t s, F body, double *out)
{
	cudaEvent_t a, b;
	cudaError_t e;
	if ((e = cudaSetDevice(dev)) || (e = cudaEventCreate(&a)) || (e = cudaEventCreate(&b)))
		return e;
	double best = 1e30;
	for (int rep = 0; rep <= REPS && !e; rep++) {
		float ms = 0;
		if ((e = cudaEventRecord(a, s)) || (e = body()) || (e = cudaSetDevice(dev)) ||
		    (e = cudaEventRecord(b, s)) || (e = cudaEventSynchronize(b)) ||
		    (e = cudaEventElapsedTime(&ms, a, b)))
			break;
		if (rep && ms * 1e-3 < best)
			best = ms * 1e-3;
	}
	cudaEventDestroy(a);
	cudaEventDestroy(b);
	*out = best;
	return e;
}

/* an event recorded now on s: other streams that wait for it start no
 * earlier than the timed stream's start event */
static cudaEvent_t start_evt(cudaStream_t s)
{
	static cudaEvent_t ev[8];
	static int next;
	cudaEvent_t e = ev[next % 8];
	if (!e) {
		cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
		ev[next % 8] = e;
	}
	next++;
	cudaEventRecord(e, s);
	return e;
}

__global__ void store_all(int4 *dst, const int4 *src, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		dst[i] = src[i];
}

__global__ void empty(void) {}

/* ping-pong: side 0 writes k+1 into the peer's flag and waits for k+1 in
 * its own; side 1 answers. Bounded: gives up after ~1 s and says so. */
__global__ void pingpong(volatile uint32_t *mine, volatile uint32_t *peer, int side, int rounds,
			 uint32_t *failed)
{
	uint64_t t0;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
	for (uint32_t k = 1; k <= (uint32_t)rounds; k++) {
		if (side == 0)
			*peer = k;
		for (;;) {
			if (*mine >= k)
				break;
			uint64_t t;
			asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
			if (t - t0 > 1000000000ull) {
				*failed = 1;
				return;
			}
		}
		if (side == 1)
			*peer = k;
		__threadfence_system();
	}
}

/* what the measures below share: up to 8 GPUs, two 1 GiB buffers on each
 * and a stream on each towards each (calib_measure was one 261-line
 * function; each measure names the parts it uses as it did) */
struct rig {
	size_t big;
	int G;
	void *buf[8][2];
	cudaStream_t st[8][8];
};
/* the buffers, streams and peer access of every GPU (up to 8) */
static int rig_open(struct calib *c, struct rig *R, char *err, size_t n)
{
	R->big = (size_t)1 << 30;   /* 1 GiB per buffer */
	R->G = c->gpus > 8 ? 8 : c->gpus;
	const size_t big = R->big;
	const int G = R->G;
	void *(*buf)[2] = R->buf;
	cudaStream_t (*st)[8] = R->st;
	for (int g = 0; g < G; g++) {
		TRY(cudaSetDevice(g));
		for (int k = 0; k < 2; k++) {
			TRY(cudaMalloc(&buf[g][k], big));
			TRY(cudaMemset(buf[g][k], g + k, big));
		}
		for (int h = 0; h < G; h++)
			TRY(cudaStreamCreateWithFlags(&st[g][h], cudaStreamNonBlocking));
		for (int h = 0; h < G; h++) {
			int can = 0;
			if (h != g && cudaDeviceCanAccessPeer(&can, g, h) == cudaSuccess && can) {
				cudaError_t e = cudaDeviceEnablePeerAccess(h, 0);
				if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) {
					snprintf(err, n, "peer access %d -> %d: %s", g, h,
						 cudaGetErrorString(e));
					return -1;
				}
				cudaGetLastError();
			}
		}
	}
	return 0;
}

/* HBM copy bandwidth on GPU 0 */
static int measure_hbm(struct calib *c, const struct rig *R, char *err, size_t n)
{
	const size_t big = R->big;
	void *const (*buf)[2] = R->buf;
	cudaStream_t const (*st)[8] = R->st;
	double t;
	/* HBM: a device-to-device copy reads and writes every byte */
	TRY(best_time(0, st[0][0], [&] {
		return cudaMemcpyAsync(buf[0][1], buf[0][0], big, cudaMemcpyDeviceToDevice, st[0][0]);
	}, &t));
	c->hbm_copy_bw = 2.0 * big / t;
	return 0;
}

/* GPU 0 and GPU 1: one way and both ways, copy engine and SM */
static int measure_peers(struct calib *c, const struct rig *R, char *err, size_t n)
{
	const size_t big = R->big;
	void *const (*buf)[2] = R->buf;
	cudaStream_t const (*st)[8] = R->st;
	double t;
	/* one way, copy engine: GPU 0 -> GPU 1 */
	TRY(best_time(0, st[0][1], [&] {
		return cudaMemcpyPeerAsync(buf[1][0], 1, buf[0][0], 0, big, st[0][1]);
	}, &t));
	c->p2p_ce_bw = big / t;
	/* one way, SM stores from GPU 0 into GPU 1 */
	TRY(best_time(0, st[0][1], [&] {
		store_all<<<4 * c->sm_count, 512, 0, st[0][1]>>>((int4 *)buf[1][0],
								 (const int4 *)buf[0][0], big / 16);
		return cudaGetLastError();
	}, &t));
	c->p2p_sm_bw = big / t;
	/* both ways at once: 0 -> 1 and 1 -> 0, timed on GPU 0's stream,
	 * which waits for the other direction */
	cudaEvent_t done;
	TRY(cudaSetDevice(1));
	TRY(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
	TRY(best_time(0, st[0][1], [&] {
		cudaError_t e;
		cudaEvent_t go = start_evt(st[0][1]);   /* on device 0, current here */
		if ((e = cudaSetDevice(1)) || (e = cudaStreamWaitEvent(st[1][0], go, 0)) ||
		    (e = cudaMemcpyPeerAsync(buf[0][1], 0, buf[1][1], 1, big, st[1][0])) ||
		    (e = cudaEventRecord(done, st[1][0])) || (e = cudaSetDevice(0)) ||
		    (e = cudaMemcpyPeerAsync(buf[1][0], 1, buf[0][0], 0, big, st[0][1])))
			return e;
		return cudaStreamWaitEvent(st[0][1], done, 0);
	}, &t));
	c->p2p_bidir_bw = 2.0 * big / t;
	/* one way, SM loads: GPU 0 pulls GPU 1's buffer into its own */
	TRY(best_time(0, st[0][1], [&] {
		store_all<<<4 * c->sm_count, 512, 0, st[0][1]>>>((int4 *)buf[0][1],
								 (const int4 *)buf[1][0], big / 16);
		return cudaGetLastError();
	}, &t));
	c->p2p_sm_load_bw = big / t;
	/* both ways at once with SM stores: 0 stores into 1, 1 into 0 */
	TRY(best_time(0, st[0][1], [&] {
		cudaError_t e;
		cudaEvent_t go = start_evt(st[0][1]);
		if ((e = cudaSetDevice(1)) || (e = cudaStreamWaitEvent(st[1][0], go, 0)))
			return e;
		store_all<<<4 * c->sm_count, 512, 0, st[1][0]>>>((int4 *)buf[0][1],
								 (const int4 *)buf[1][1], big / 16);
		if ((e = cudaGetLastError()) || (e = cudaEventRecord(done, st[1][0])) ||
		    (e = cudaSetDevice(0)))
			return e;
		store_all<<<4 * c->sm_count, 512, 0, st[0][1]>>>((int4 *)buf[1][0],
								 (const int4 *)buf[0][0], big / 16);
		if ((e = cudaGetLastError()))
			return e;
		return cudaStreamWaitEvent(st[0][1], done, 0);
	}, &t));
	c->p2p_bidir_sm_bw = 2.0 * big / t;
	cudaEventDestroy(done);
	return 0;
}

/* every GPU to every other at once */
static int measure_alltoall(struct calib *c, const struct rig *R, char *err, size_t n)
{
	const size_t big = R->big;
	const int G = R->G;
	void *const (*buf)[2] = R->buf;
	cudaStream_t const (*st)[8] = R->st;
	double t;
	/* all-to-all: every GPU copies 1/G of a buffer to every other one at
	 * once; the figure is the bytes one GPU receives per second */
	size_t part = big / 8;
	cudaEvent_t fin[8][8];
	for (int g = 0; g < G; g++) {
		TRY(cudaSetDevice(g));
		for (int h = 0; h < G; h++)
			TRY(cudaEventCreateWithFlags(&fin[g][h], cudaEventDisableTiming));
	}
	TRY(best_time(0, st[0][0], [&] {
		cudaError_t e = cudaSuccess;
		cudaEvent_t go = start_evt(st[0][0]);
		for (int g = 0; g < G && !e; g++)
			for (int h = 0; h < G && !e; h++)
				if (g != h && !((e = cudaSetDevice(g)) ||
						(e = cudaStreamWaitEvent(st[g][h], go, 0)) ||
						(e = cudaMemcpyPeerAsync((char *)buf[h][1] + g * part,
									 h, buf[g][0], g, part,
									 st[g][h]))))
					e = cudaEventRecord(fin[g][h], st[g][h]);
		if (!e)
			e = cudaSetDevice(0);
		for (int g = 0; g < G && !e; g++)
			for (int h = 0; h < G && !e; h++)
				if (g != h)
					e = cudaStreamWaitEvent(st[0][0], fin[g][h], 0);
		return e;
	}, &t));
	c->alltoall_rx_bw = (double)(G - 1) * part / t;
	c->alltoall_gpus = G;
	for (int g = 0; g < G; g++)
		for (int h = 0; h < G; h++)
			cudaEventDestroy(fin[g][h]);
	return 0;
}

/* a device-side flag's round trip between GPUs 0 and 1 */
static int measure_flag(struct calib *c, const struct rig *R, char *err, size_t n)
{
	cudaStream_t const (*st)[8] = R->st;
	/* device-side flag round trip between GPUs 0 and 1 */
	uint32_t *flag[2], *failed;
	int rounds = 2000;
	for (int g = 0; g < 2; g++) {
		TRY(cudaSetDevice(g));
		TRY(cudaMalloc(&flag[g], 256));
	}
	TRY(cudaSetDevice(0));
	TRY(cudaMalloc(&failed, 4));
	TRY(cudaMemset(failed, 0, 4));
	double best = 1e30;
	for (int rep = 0; rep < 3; rep++) {
		for (int g = 0; g < 2; g++) {
			TRY(cudaSetDevice(g));
			TRY(cudaMemset(flag[g], 0, 256));
			TRY(cudaDeviceSynchronize());
		}
		cudaEvent_t a, b;
		TRY(cudaSetDevice(0));
		TRY(cudaEventCreate(&a));
		TRY(cudaEventCreate(&b));
		TRY(cudaSetDevice(1));
		pingpong<<<1, 1, 0, st[1][0]>>>(flag[1], flag[0], 1, rounds, failed);
		TRY(cudaGetLastError());
		TRY(cudaSetDevice(0));
		TRY(cudaEventRecord(a, st[0][0]));
		pingpong<<<1, 1, 0, st[0][0]>>>(flag[0], flag[1], 0, rounds, failed);
		TRY(cudaGetLastError());
		TRY(cudaEventRecord(b, st[0][0]));
		TRY(cudaEventSynchronize(b));
		TRY(cudaSetDevice(1));
		TRY(cudaStreamSynchronize(st[1][0]));
		TRY(cudaSetDevice(0));
		float ms;
		TRY(cudaEventElapsedTime(&ms, a, b));
		best = ms * 1e-3 / rounds < best ? ms * 1e-3 / rounds : best;
		cudaEventDestroy(a);
		cudaEventDestroy(b);
	}
	uint32_t bad = 0;
	TRY(cudaMemcpy(&bad, failed, 4, cudaMemcpyDeviceToHost));
	c->flag_round_trip_s = bad ? -1 : best;
	for (int g = 0; g < 2; g++) {
		TRY(cudaSetDevice(g));
		cudaFree(flag[g]);
	}
	TRY(cudaSetDevice(0));
	cudaFree(failed);
	return 0;
}

/* the timing floor: what `--measure-perf` reports for a call that does
 * nothing -- events around an empty kernel, enqueued behind the launch
 * gate as the timed loop does (docs/TIMING.md) */
static int measure_floor(struct calib *c, const struct rig *R, char *err, size_t n)
{
	cudaStream_t const (*st)[8] = R->st;
	TRY(cudaSetDevice(0));
	enum { CALLS = 100 };
	cudaEvent_t ev[2 * CALLS];
	for (int k = 0; k < 2 * CALLS; k++)
		TRY(cudaEventCreate(&ev[k]));
	uint32_t *gate;
	volatile uint32_t *gate_dev;
	TRY(cudaHostAlloc((void **)&gate, 2 * sizeof(uint32_t), cudaHostAllocMapped));
	gate[0] = gate[1] = 0;
	TRY(cudaHostGetDevicePointer((void **)&gate_dev, gate, 0));
	if (kern_gate(gate_dev, 1, 1000000000ull, gate_dev + 1, (struct CUstream_st *)st[0][0])) {
		snprintf(err, n, "launch gate failed");
		return -1;
	}
	for (int k = 0; k < CALLS; k++) {
		TRY(cudaEventRecord(ev[2 * k], st[0][0]));
		empty<<<1, 32, 0, st[0][0]>>>();
		TRY(cudaEventRecord(ev[2 * k + 1], st[0][0]));
	}
	__atomic_store_n(&gate[0], 1u, __ATOMIC_RELEASE);
	TRY(cudaStreamSynchronize(st[0][0]));
	double ms[CALLS];
	for (int k = 0; k < CALLS; k++) {
		float f;
		TRY(cudaEventElapsedTime(&f, ev[2 * k], ev[2 * k + 1]));
		ms[k] = f;
	}
	struct stats sm;
	stats_compute(ms, CALLS, &sm);
	c->empty_call_s = gate[1] ? -1 : sm.median * 1e-3;
	for (int k = 0; k < 2 * CALLS; k++)
		cudaEventDestroy(ev[k]);
	cudaFreeHost(gate);
	return 0;
}

/* bf16 GEMM FLOP/s on GPU 0 */
static int measure_gemm(struct calib *c, const struct rig *R, char *err, size_t n)
{
	void *const (*buf)[2] = R->buf;
	cudaStream_t const (*st)[8] = R->st;
	double t;
	/* bf16 GEMM, 8192^3, fp32 accumulation */
	TRY(cudaSetDevice(0));
	cublasHandle_t blas;
	if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) {
		snprintf(err, n, "cublasCreate failed");
		return -1;
	}
	cublasSetStream(blas, st[0][0]);
	const int N = 8192;
	float one = 1.f, zero = 0.f;
	/* A and B from the two 1 GiB buffers (128 MiB each), C into a third */
	void *C;
	TRY(cudaMalloc(&C, (size_t)N * N * 2));
	cublasStatus_t bs = CUBLAS_STATUS_SUCCESS;
	TRY(best_time(0, st[0][0], [&] {
		bs = cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, buf[0][0],
				  CUDA_R_16BF, N, buf[0][1], CUDA_R_16BF, N, &zero, C, CUDA_R_16BF,
				  N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
		return cudaGetLastError();
	}, &t));
	if (bs != CUBLAS_STATUS_SUCCESS) {
		snprintf(err, n, "cublasGemmEx failed (%d)", (int)bs);
		return -1;
	}
	c->gemm_bf16_flops = 2.0 * N * N * (double)N / t;
	cublasDestroy(blas);
	cudaFree(C);
	return 0;
}

static int rig_close(const struct rig *R, char *err, size_t n)
{
	const int G = R->G;
	void *const (*buf)[2] = R->buf;
	cudaStream_t const (*st)[8] = R->st;
	for (int g = 0; g < G; g++) {
		TRY(cudaSetDevice(g));
		for (int k = 0; k < 2; k++)
			cudaFree(buf[g][k]);
		for (int h = 0; h < G; h++)
			cudaStreamDestroy(st[g][h]);
	}
	return 0;
}

extern "C" int calib_measure(struct calib *c, char *err, size_t n)
{
	memset(c, 0, sizeof *c);
	TRY(cudaGetDeviceCount(&c->gpus));
	if (c->gpus < 1) {
		snprintf(err, n, "no GPU");
		return -1;
	}
	struct cudaDeviceProp p;
	TRY(cudaGetDeviceProperties(&p, 0));
	snprintf(c->name, sizeof c->name, "%s", p.name);
	c->sm_count = p.multiProcessorCount;
	c->l2_bytes = p.l2CacheSize;
	c->hbm_bytes = (double)p.totalGlobalMem;
	struct rig R;
	if (rig_open(c, &R, err, n) || measure_hbm(c, &R, err, n))
		return -1;
	if (R.G >= 2 && (measure_peers(c, &R, err, n) || measure_alltoall(c, &R, err, n) ||
			 measure_flag(c, &R, err, n)))
		return -1;
	if (measure_floor(c, &R, err, n) || measure_gemm(c, &R, err, n))
		return -1;
	return rig_close(&R, err, n);
}
