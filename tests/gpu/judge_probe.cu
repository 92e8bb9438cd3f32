/*
 * judge_probe.cu -- can a judge process time a candidate process's work on
 * the same GPU as well as the rank times it in one process today? (issue
 * 36: the judge/candidate split). One GPU, three ways of running the same
 * kernel `iters` times, each call timed by events of the process that
 * stands for the judge:
 *
 *   inproc   one process: event, kernel, event on one stream (today's rank)
 *   memops   a candidate process maps the judge's buffers and a flag word
 *            (CUDA IPC) and enqueues every call ahead: wait until the go
 *            word reaches i (cuStreamWaitValue32), the kernel, write i to
 *            the done word. The judge's stream: start event, go = i,
 *            wait until done >= i, end event. No host round trip per call;
 *            the two contexts meet in the GPU's front end only.
 *   events   the same with interprocess events and a host round trip per
 *            call over a socket (the judge records go, the candidate
 *            waits on it, launches, records done; the judge waits on done)
 *
 * It prints per-call medians for a short kernel (~5 us) and a long one
 * (~200 us), and the memops check: the output equals the expected values
 * on the judge's side, read right after its end event. Run on a lent GPU:
 *   make judge-probe && build/tests/judge_probe [iters]
 * Under MPS (nvidia-cuda-mps-control -d first) the two processes share one
 * GPU context server-side; run it both ways.
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
	exit(1); } } while (0)
#define DK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char *s_ = ""; \
	cuGetErrorString(r_, &s_); fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, s_); \
	exit(1); } } while (0)

/* out[i] = in[i] * k + spin, `rounds` dependent steps a thread: its time */
__global__ void work(const float *in, float *out, int n, float k, int rounds)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		float v = in[i];
		for (int r = 0; r < rounds; r++)
			v = v * 1.0000001f + 0.f;
		out[i] = in[i] * k + (v - v);
	}
}

struct handles {
	cudaIpcMemHandle_t in, out, flags;
	cudaIpcEventHandle_t go, done;
	int n, iters, rounds;
};

static void send_all(int fd, const void *p, size_t n)
{
	if (write(fd, p, n) != (ssize_t)n) {
		perror("write");
		exit(1);
	}
}
static void recv_all(int fd, void *p, size_t n)
{
	for (size_t got = 0; got < n;) {
		ssize_t r = read(fd, (char *)p + got, n - got);
		if (r <= 0) {
			perror("read");
			exit(1);
		}
		got += (size_t)r;
	}
}

static double median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	return v.empty() ? 0 : v[v.size() / 2];
}

/* the candidate process: map, then serve one mode's calls */
static int candidate(int fd)
{
	struct handles h;
	recv_all(fd, &h, sizeof h);
	CK(cudaSetDevice(0));
	float *in, *out;
	uint32_t *flags;
	CK(cudaIpcOpenMemHandle((void **)&in, h.in, cudaIpcMemLazyEnablePeerAccess));
	CK(cudaIpcOpenMemHandle((void **)&out, h.out, cudaIpcMemLazyEnablePeerAccess));
	CK(cudaIpcOpenMemHandle((void **)&flags, h.flags, cudaIpcMemLazyEnablePeerAccess));
	cudaEvent_t go, done;
	CK(cudaIpcOpenEventHandle(&go, h.go));
	CK(cudaIpcOpenEventHandle(&done, h.done));
	cudaStream_t s;
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	char mode;
	for (;;) {
		recv_all(fd, &mode, 1);
		if (mode == 'q')
			break;
		int rounds;
		recv_all(fd, &rounds, sizeof rounds);
		if (mode == 'm') {   /* enqueue every call ahead */
			/* answer first: a full push buffer blocks the enqueue of a
			 * wait the judge has not opened yet, so waiting for the
			 * whole enqueue before answering deadlocks past ~1000 calls */
			char ok = 'k';
			send_all(fd, &ok, 1);
			for (int i = 1; i <= h.iters; i++) {
				DK(cuStreamWaitValue32((CUstream)s, (CUdeviceptr)&flags[0], (uint32_t)i,
						       CU_STREAM_WAIT_VALUE_GEQ));
				work<<<132, 256, 0, s>>>(in, out, h.n, (float)i, rounds);
				DK(cuStreamWriteValue32((CUstream)s, (CUdeviceptr)&flags[1], (uint32_t)i, 0));
			}
			CK(cudaStreamSynchronize(s));
		} else {             /* one call per request */
			for (int i = 1; i <= h.iters; i++) {
				char c;
				recv_all(fd, &c, 1);
				CK(cudaStreamWaitEvent(s, go, 0));
				work<<<132, 256, 0, s>>>(in, out, h.n, (float)i, rounds);
				CK(cudaEventRecord(done, s));
				send_all(fd, &c, 1);
			}
			CK(cudaStreamSynchronize(s));
		}
		char fin = 'f';
		send_all(fd, &fin, 1);
	}
	return 0;
}

/* out == in * k on the judge's side, sampled */
__global__ void check(const float *in, const float *out, int n, float k, uint32_t *bad)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x * 64)
		if (out[i] != in[i] * k)
			atomicAdd(bad, 1u);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--candidate"))
		return candidate(atoi(argv[2]));
	int iters = argc > 1 ? atoi(argv[1]) : 200;
	setvbuf(stdout, NULL, _IOLBF, 0);
	int n = 1 << 20;
	CK(cudaSetDevice(0));
	cudaDeviceProp prop;
	CK(cudaGetDeviceProperties(&prop, 0));
	float *in, *out;
	uint32_t *flags, *bad;
	CK(cudaMalloc(&in, n * sizeof(float)));
	CK(cudaMalloc(&out, n * sizeof(float)));
	CK(cudaMalloc(&flags, 64));
	CK(cudaMalloc(&bad, 4));
	std::vector<float> h(n);
	for (int i = 0; i < n; i++)
		h[i] = (float)(i % 1000) * 0.001f;
	CK(cudaMemcpy(in, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
	cudaStream_t s;
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	cudaEvent_t t0, t1, go, done;
	CK(cudaEventCreate(&t0));
	CK(cudaEventCreate(&t1));
	CK(cudaEventCreateWithFlags(&go, cudaEventInterprocess | cudaEventDisableTiming));
	CK(cudaEventCreateWithFlags(&done, cudaEventInterprocess | cudaEventDisableTiming));

	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) {
		perror("socketpair");
		return 1;
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(sv[0]);
		char fd[16];
		snprintf(fd, sizeof fd, "%d", sv[1]);
		execl("/proc/self/exe", argv[0], "--candidate", fd, (char *)NULL);
		_exit(127);
	}
	close(sv[1]);
	int c = sv[0];
	struct handles hs;
	CK(cudaIpcGetMemHandle(&hs.in, in));
	CK(cudaIpcGetMemHandle(&hs.out, out));
	CK(cudaIpcGetMemHandle(&hs.flags, flags));
	CK(cudaIpcGetEventHandle(&hs.go, go));
	CK(cudaIpcGetEventHandle(&hs.done, done));
	hs.n = n;
	hs.iters = iters;
	hs.rounds = 0;
	send_all(c, &hs, sizeof hs);

	printf("judge_probe: %s, %d calls a mode, %d floats\n", prop.name, iters, n);
	int rounds_of[2] = { 1, 400 };
	for (int w = 0; w < 2; w++) {
		int rounds = rounds_of[w];
		std::vector<double> a, b, e;
		/* inproc */
		for (int i = 1; i <= iters; i++) {
			CK(cudaEventRecord(t0, s));
			work<<<132, 256, 0, s>>>(in, out, n, (float)i, rounds);
			CK(cudaEventRecord(t1, s));
			CK(cudaEventSynchronize(t1));
			float ms;
			CK(cudaEventElapsedTime(&ms, t0, t1));
			a.push_back(ms * 1e3);
		}
		/* memops: the candidate enqueues all; the judge opens each call */
		CK(cudaMemset(flags, 0, 64));
		CK(cudaMemset(bad, 0, 4));
		CK(cudaDeviceSynchronize());
		char m = 'm', k;
		send_all(c, &m, 1);
		send_all(c, &rounds, sizeof rounds);
		recv_all(c, &k, 1);
		for (int i = 1; i <= iters; i++) {
			CK(cudaEventRecord(t0, s));
			DK(cuStreamWriteValue32((CUstream)s, (CUdeviceptr)&flags[0], (uint32_t)i, 0));
			DK(cuStreamWaitValue32((CUstream)s, (CUdeviceptr)&flags[1], (uint32_t)i,
					       CU_STREAM_WAIT_VALUE_GEQ));
			CK(cudaEventRecord(t1, s));
			check<<<132, 256, 0, s>>>(in, out, n, (float)i, bad);
			CK(cudaStreamSynchronize(s));   /* the check done before call i+1 opens */
			float ms;
			CK(cudaEventElapsedTime(&ms, t0, t1));
			b.push_back(ms * 1e3);
		}
		recv_all(c, &k, 1);
		uint32_t nbad = 0;
		CK(cudaMemcpy(&nbad, bad, 4, cudaMemcpyDeviceToHost));
		/* events: a host round trip a call */
		m = 'e';
		send_all(c, &m, 1);
		send_all(c, &rounds, sizeof rounds);
		for (int i = 1; i <= iters; i++) {
			CK(cudaEventRecord(t0, s));
			CK(cudaEventRecord(go, s));
			char r = 'r';
			send_all(c, &r, 1);
			recv_all(c, &r, 1);
			CK(cudaStreamWaitEvent(s, done, 0));
			CK(cudaEventRecord(t1, s));
			CK(cudaEventSynchronize(t1));
			float ms;
			CK(cudaEventElapsedTime(&ms, t0, t1));
			e.push_back(ms * 1e3);
		}
		recv_all(c, &k, 1);
		printf("kernel %-5s inproc %9.2f us   memops %9.2f us (%u wrong samples)   "
		       "events %9.2f us\n", w ? "long" : "short", median(a), median(b), nbad,
		       median(e));
	}
	char q = 'q';
	send_all(c, &q, 1);
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
