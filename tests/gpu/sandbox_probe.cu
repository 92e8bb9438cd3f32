/*
 * sandbox_probe.cu -- on one GPU, what a rank does once its sandbox is
 * entered (src/sandbox.h), each step printed "ok" or "FAIL": the CUDA
 * runtime's allocations, launches, events, graphs, pinned memory and IPC
 * handles, NCCL's collectives and its first point-to-point connection (made
 * lazily, after the filter), cuBLAS's lazy load of cuBLASLt, and dlopen of
 * a real solution object. The last line is "N ok, N failed". `make
 * sandbox-probe` builds it; run it on a GPU machine (the multi-GPU paths --
 * peer IPC, NCCL across ranks -- are covered by the GPU suite, which runs
 * every rank sandboxed).
 *   build/tests/sandbox_probe [SOLUTION.so]
 */
extern "C" {
#include "sandbox.h"
#include "wire.h"
}

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>
#include <stdio.h>
#include <string.h>

static int n_ok, n_bad;

static void check(const char *what, int ok, const char *why)
{
	printf("%s %s%s%s\n", ok ? "ok" : "FAIL", what, ok ? "" : ": ", ok ? "" : why);
	ok ? n_ok++ : n_bad++;
}
#define CU(what, call) do { cudaError_t e_ = (call); check(what, e_ == cudaSuccess, cudaGetErrorString(e_)); } while (0)
#define NC(what, call) do { ncclResult_t r_ = (call); check(what, r_ == ncclSuccess, ncclGetErrorString(r_)); } while (0)

__global__ void fill(float *x, int n, float v)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] = v;
}

int main(int argc, char **argv)
{
	const char *so = argc > 1 ? argv[1] : "/nonexistent/solution.so";
	/* before the sandbox, as in the rank: the context and the communicator */
	setvbuf(stdout, NULL, _IOLBF, 0);
	CU("cudaSetDevice", cudaSetDevice(0));
	CU("cudaFree(0)", cudaFree(0));
	if (n_bad) {
		printf("no GPU: nothing to probe\n");
		return 2;
	}
	cudaStream_t s;
	CU("cudaStreamCreate", cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	ncclUniqueId id;
	ncclComm_t comm;
	NC("ncclGetUniqueId", ncclGetUniqueId(&id));
	NC("ncclCommInitRank (1 rank)", ncclCommInitRank(&comm, 1, id, 0));

	struct wire_job job;
	wire_job_init(&job);
	job.n_sol = 1;
	snprintf(job.sol[0].role, sizeof job.sol[0].role, "candidate");
	snprintf(job.sol[0].so, sizeof job.sol[0].so, "%s", so);
	job.sol[0].nccl = 1;
	char err[300] = "";
	int r = sandbox_rank_enter(&job, -1, err, sizeof err);
	check("sandbox_rank_enter (seccomp + Landlock)", r == 0, r > 0 ? err : err[0] ? err : "?");

	/* after it: what solutions and the harness do */
	const int n = 1 << 24;
	float *x, *h;
	CU("cudaMalloc", cudaMalloc(&x, n * sizeof(float)));
	fill<<<n / 256, 256, 0, s>>>(x, n, 1.0f);
	CU("kernel launch", cudaGetLastError());
	CU("cudaMemsetAsync", cudaMemsetAsync(x, 0, 4096, s));
	CU("cudaMallocHost", cudaMallocHost(&h, 1 << 20));
	CU("cudaMemcpyAsync D2H", cudaMemcpyAsync(h, x + 4096, 1 << 20, cudaMemcpyDeviceToHost, s));
	CU("cudaStreamSynchronize", cudaStreamSynchronize(s));
	check("D2H data", h[0] == 1.0f, "wrong value");
	cudaEvent_t a, b;
	float ms = 0;
	CU("cudaEventCreate", cudaEventCreate(&a));
	CU("cudaEventCreate", cudaEventCreate(&b));
	CU("cudaEventRecord", cudaEventRecord(a, s));
	fill<<<n / 256, 256, 0, s>>>(x, n, 2.0f);
	CU("cudaEventRecord", cudaEventRecord(b, s));
	CU("cudaEventSynchronize", cudaEventSynchronize(b));
	CU("cudaEventElapsedTime", cudaEventElapsedTime(&ms, a, b));
	cudaGraph_t g;
	cudaGraphExec_t ge;
	CU("cudaStreamBeginCapture", cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
	fill<<<n / 256, 256, 0, s>>>(x, n, 3.0f);
	CU("cudaStreamEndCapture", cudaStreamEndCapture(s, &g));
	CU("cudaGraphInstantiate", cudaGraphInstantiate(&ge, g, 0));
	CU("cudaGraphLaunch", cudaGraphLaunch(ge, s));
	CU("cudaStreamSynchronize", cudaStreamSynchronize(s));
	cudaIpcMemHandle_t ih;
	CU("cudaIpcGetMemHandle", cudaIpcGetMemHandle(&ih, x));
	void *va = NULL;
	CU("cudaMallocAsync", cudaMallocAsync(&va, 1 << 20, s));
	CU("cudaFreeAsync", cudaFreeAsync(va, s));

	__nv_bfloat16 *bx;
	CU("cudaMalloc bf16", cudaMalloc(&bx, 2 * (1 << 20) * sizeof *bx));
	NC("ncclAllReduce", ncclAllReduce(bx, bx, 1 << 20, ncclBfloat16, ncclSum, comm, s));
	NC("ncclGroupStart", ncclGroupStart());
	NC("ncclSend (first p2p connection)", ncclSend(bx, 1 << 20, ncclBfloat16, 0, comm, s));
	NC("ncclRecv", ncclRecv(bx + (1 << 20), 1 << 20, ncclBfloat16, 0, comm, s));
	NC("ncclGroupEnd", ncclGroupEnd());
	NC("ncclAllGather", ncclAllGather(bx, bx + (1 << 20), 1 << 20, ncclBfloat16, comm, s));
	CU("NCCL's work done", cudaStreamSynchronize(s));

	cublasHandle_t hb;
	cublasStatus_t bs = cublasCreate(&hb);
	check("cublasCreate", bs == CUBLAS_STATUS_SUCCESS, "cublasCreate failed");
	cublasSetStream(hb, s);
	float one = 1, zero = 0;
	bs = cublasGemmEx(hb, CUBLAS_OP_N, CUBLAS_OP_N, 512, 512, 512, &one, bx, CUDA_R_16BF, 512,
			  bx, CUDA_R_16BF, 512, &zero, bx + (1 << 20), CUDA_R_16BF, 512,
			  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
	check("cublasGemmEx bf16 (cuBLASLt loaded lazily)", bs == CUBLAS_STATUS_SUCCESS,
	      "cublasGemmEx failed");
	CU("cuBLAS's work done", cudaStreamSynchronize(s));

	if (argc > 1) {
		void *dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
		check("dlopen of the solution", dl != NULL, dl ? "" : dlerror());
		check("its pkb_run", dl && dlsym(dl, "pkb_run"), "no pkb_run");
	}
	FILE *f = fopen("/etc/passwd", "r");
	check("reading /etc (allowed)", f != NULL, "denied");
	if (f)
		fclose(f);
	f = fopen("/tmp/pkb-sandbox-probe", "w");
	check("writing /tmp (denied)", r != 0 || f == NULL, "allowed");
	if (f)
		fclose(f);
	cublasDestroy(hb);
	ncclCommDestroy(comm);
	printf("%d ok, %d failed\n", n_ok, n_bad);
	return n_bad != 0;
}
