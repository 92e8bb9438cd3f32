/*
 * sandbox_probe.cu -- on one GPU, what a rank does once its sandbox is
 * entered (src/sandbox.h), each step printed "ok" or "FAIL". Two parts:
 *
 * [alone] a solution process without NCCL (the judge split, issue 36): a
 * "judge" process, forked before CUDA starts, makes a buffer and its IPC
 * handle; the solution process makes its context, takes that handle, and
 * enters the sandbox of a job with no NCCL (no socket at all, the GPU's
 * nodes only in /dev, its own /proc/<pid> only, rlimits). Then: cudaMalloc,
 * a kernel launch, cudaStreamSynchronize, cudaIpcOpenMemHandle of the
 * judge's handle (made before it entered) and the judge's data read
 * through it, events, pinned memory, an IPC handle made after entering that
 * the judge opens, cuBLAS's lazy load of cuBLASLt, its judge link, dlopen
 * of a real solution; and that /dev/shm and the judge's /proc/<pid> are
 * closed. It lists its sockets after entering (CUDA's own).
 *
 * [nccl] a rank with NCCL, as `pkb eval`'s today: the CUDA runtime's
 * allocations, launches, events, graphs, pinned memory and IPC handles,
 * NCCL's collectives and its first point-to-point connection (made lazily,
 * after the filter), cuBLAS, and dlopen of a real solution object.
 *
 * The last line is "N ok, N failed" over both. `make sandbox-probe` builds
 * it; run it on a GPU machine, and once more under an MPS daemon
 * (nvidia-cuda-mps-control -d; CUDA_MPS_PIPE_DIRECTORY set), as the judge
 * split's timing runs.
 *
 * With -n W it runs W ranks with NCCL, one process per GPU (forked before
 * CUDA starts, as pkb's ranks are), over one NCCL communicator: every rank
 * enters its sandbox after init, then all-reduces, all-gathers and sends to
 * and receives from every peer (NCCL makes those connections lazily, inside
 * the sandbox). Each rank lists its open sockets -- family, type, address,
 * state, from /proc/self/fd and /proc/net -- right after NCCL's init and
 * again after the lazy connections: the measured list of what NCCL opens,
 * which the seccomp filter's socket rule rests on (issue 30).
 *   build/tests/sandbox_probe [-n W] [SOLUTION.so]
 */
extern "C" {
#include "sandbox.h"
#include "wire.h"
}

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static int n_ok, n_bad;
static char tag[32];   /* "[rank R] " with several ranks */

static void check(const char *what, int ok, const char *why)
{
	printf("%s%s %s%s%s\n", tag, ok ? "ok" : "FAIL", what, ok ? "" : ": ", ok ? "" : why);
	ok ? n_ok++ : n_bad++;
}

/* the line of /proc/net/FILE whose inode column is `inode`, or NULL:
 * unix lines keep the inode in column 7, tcp/udp/raw in column 10 */
static int net_line(const char *file, unsigned long inode, char *line, size_t n)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/net/%s", file);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	int col = strcmp(file, "unix") ? 10 : 7, found = 0;
	fgets(line, (int)n, f);   /* the header */
	while (!found && fgets(line, (int)n, f)) {
		char copy[512];
		snprintf(copy, sizeof copy, "%s", line);
		char *save = NULL, *t = strtok_r(copy, " \t\n", &save);
		for (int c = 1; t && c < col; c++)
			t = strtok_r(NULL, " \t\n", &save);
		found = t && strtoul(t, NULL, 10) == inode;
	}
	fclose(f);
	return found;
}

/* "a.b.c.d:port" from /proc/net/tcp's little-endian hex "0100007F:1F90" */
static void ipv4(const char *hex, char *out, size_t n)
{
	unsigned a = 0, port = 0;
	sscanf(hex, "%x:%x", &a, &port);
	snprintf(out, n, "%u.%u.%u.%u:%u", a & 255, (a >> 8) & 255, (a >> 16) & 255, a >> 24, port);
}

/* every open socket of this process, one line each, then a count */
static void list_sockets(const char *when)
{
	static const char *const tcp_state[] = { "?", "ESTABLISHED", "SYN_SENT", "SYN_RECV",
		"FIN_WAIT1", "FIN_WAIT2", "TIME_WAIT", "CLOSE", "CLOSE_WAIT", "LAST_ACK", "LISTEN",
		"CLOSING" };
	DIR *d = opendir("/proc/self/fd");
	int count = 0;
	for (struct dirent *e; d && (e = readdir(d));) {
		char p[300], target[128], line[512];
		snprintf(p, sizeof p, "/proc/self/fd/%s", e->d_name);
		ssize_t l = readlink(p, target, sizeof target - 1);
		unsigned long inode;
		if (l <= 0 || (target[l] = 0, sscanf(target, "socket:[%lu]", &inode) != 1))
			continue;
		count++;
		if (net_line("unix", inode, line, sizeof line)) {
			/* Num RefCount Protocol Flags Type St Inode [Path] */
			unsigned type = 0, st = 0;
			char path[256] = "";
			sscanf(line, "%*s %*s %*s %*s %x %x %*s %255s", &type, &st, path);
			/* an abstract name is padded with '@' (its NULs) to a fixed length */
			for (size_t k = strlen(path); k > 1 && path[k - 1] == '@' && path[k - 2] == '@'; k--)
				path[k - 1] = 0;
			printf("%ssocket %s: fd %s unix %s%s%s\n", tag, when, e->d_name,
			       type == 1 ? "stream" : type == 2 ? "dgram" : type == 5 ? "seqpacket" : "?",
			       path[0] ? " " : " (unnamed)", path);
			continue;
		}
		const char *fam[] = { "tcp", "tcp6", "udp", "udp6", "raw", "netlink" };
		int hit = -1;
		for (int k = 0; k < 6 && hit < 0; k++)
			if (net_line(fam[k], inode, line, sizeof line))
				hit = k;
		if (hit >= 0 && hit <= 3) {
			char loc[80], rem[80], a[64] = "", b[64] = "";
			unsigned st = 0;
			sscanf(line, "%*s %79s %79s %x", loc, rem, &st);
			if (hit == 0 || hit == 2) {
				ipv4(loc, a, sizeof a);
				ipv4(rem, b, sizeof b);
			} else {
				snprintf(a, sizeof a, "%s", loc);
				snprintf(b, sizeof b, "%s", rem);
			}
			printf("%ssocket %s: fd %s %s %s -> %s %s\n", tag, when, e->d_name, fam[hit], a, b,
			       hit <= 1 && st < 12 ? tcp_state[st] : "");
		} else {
			printf("%ssocket %s: fd %s %s (inode %lu)\n", tag, when, e->d_name,
			       hit >= 0 ? fam[hit] : "of another family", inode);
		}
	}
	if (d)
		closedir(d);
	printf("%ssockets %s: %d\n", tag, when, count);
}
#define CU(what, call) do { cudaError_t e_ = (call); check(what, e_ == cudaSuccess, cudaGetErrorString(e_)); } while (0)
#define NC(what, call) do { ncclResult_t r_ = (call); check(what, r_ == ncclSuccess, ncclGetErrorString(r_)); } while (0)

__global__ void fill(float *x, int n, float v)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] = v;
}

/* one rank: rank 0 makes the unique id and writes it to the others' pipes
 * (id_w[1..W-1]); the others read it from id_r */
static int probe(int rank, int world, const int *id_w, int id_r, const char *so, int have_so)
{
	/* before the sandbox, as in the rank: the context and the communicator */
	CU("cudaSetDevice", cudaSetDevice(rank));
	CU("cudaFree(0)", cudaFree(0));
	if (n_bad) {
		printf("%sno GPU %d: nothing to probe\n", tag, rank);
		return 2;
	}
	cudaStream_t s;
	CU("cudaStreamCreate", cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	ncclUniqueId id;
	ncclComm_t comm;
	if (rank == 0) {
		NC("ncclGetUniqueId", ncclGetUniqueId(&id));
		for (int r = 1; r < world; r++)
			check("unique id to a peer", write(id_w[r], &id, sizeof id) == sizeof id, "short");
	} else {
		check("unique id from rank 0", read(id_r, &id, sizeof id) == sizeof id, "short");
	}
	char what[64];
	snprintf(what, sizeof what, "ncclCommInitRank (%d of %d)", rank, world);
	NC(what, ncclCommInitRank(&comm, world, id, rank));
	list_sockets("after init");

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
	const size_t part = (1 << 20) / world;
	NC("ncclAllReduce", ncclAllReduce(bx, bx, 1 << 20, ncclBfloat16, ncclSum, comm, s));
	/* a first point-to-point connection to every peer, and to itself */
	for (int d = 0; d < world; d++) {
		int to = (rank + d) % world, from = (rank - d + world) % world;
		NC("ncclGroupStart", ncclGroupStart());
		NC("ncclSend (a first p2p connection)", ncclSend(bx, 1 << 20, ncclBfloat16, to, comm, s));
		NC("ncclRecv", ncclRecv(bx + (1 << 20), 1 << 20, ncclBfloat16, from, comm, s));
		NC("ncclGroupEnd", ncclGroupEnd());
	}
	NC("ncclAllGather", ncclAllGather(bx, bx + (1 << 20), part, ncclBfloat16, comm, s));
	NC("ncclReduceScatter", ncclReduceScatter(bx, bx + (1 << 20), part, ncclBfloat16, ncclSum,
						  comm, s));
	CU("NCCL's work done", cudaStreamSynchronize(s));
	list_sockets("after the lazy connections");

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

	if (have_so) {
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
	printf("%s%d ok, %d failed\n", tag, n_ok, n_bad);
	return n_bad != 0;
}

/* ---- [alone]: a solution process without NCCL ------------------------------- */

/* the judge's side, before CUDA starts in the solution process: a buffer
 * of 7s and its IPC handle down `to_sol`; then a handle the solution made
 * after entering, from `from_sol`, opened and read: 1 (its 9s) or 0 back */
static int judge_side(int dev, int to_sol, int from_sol)
{
	const int n = 1 << 20;
	float *a, *h = (float *)malloc(n * sizeof(float));
	if (cudaSetDevice(dev) != cudaSuccess || cudaMalloc(&a, n * sizeof(float)) != cudaSuccess)
		return 1;
	fill<<<n / 256, 256>>>(a, n, 7.0f);
	cudaIpcMemHandle_t ha, hb;
	if (cudaDeviceSynchronize() != cudaSuccess || cudaIpcGetMemHandle(&ha, a) != cudaSuccess ||
	    write(to_sol, &ha, sizeof ha) != sizeof ha)
		return 1;
	char ok = 0;
	void *b = NULL;
	if (read(from_sol, &hb, sizeof hb) == sizeof hb &&
	    cudaIpcOpenMemHandle(&b, hb, cudaIpcMemLazyEnablePeerAccess) == cudaSuccess &&
	    cudaMemcpy(h, b, n * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess)
		ok = h[0] == 9.0f && h[n - 1] == 9.0f;
	if (b)
		cudaIpcCloseMemHandle(b);
	if (write(to_sol, &ok, 1) != 1)
		return 1;
	/* the buffer lives until the solution process is done with it */
	while (read(from_sol, &ok, 1) > 0)
		;
	cudaFree(a);
	free(h);
	return 0;
}

static int denied(const char *path, int flags)
{
	int fd = open(path, flags, 0600);
	if (fd >= 0)
		close(fd);
	return fd < 0 && errno == EACCES;
}

static int probe_alone(int dev, const char *so, int have_so)
{
	int j2s[2], s2j[2];
	if (pipe(j2s) < 0 || pipe(s2j) < 0)
		return perror("pipe"), 2;
	pid_t judge = fork();
	if (judge == 0) {
		close(j2s[0]);
		close(s2j[1]);
		_exit(judge_side(dev, j2s[1], s2j[0]));
	}
	close(j2s[1]);
	close(s2j[0]);

	/* before the sandbox, as in the solution process: the context, the
	 * stream, the judge's IPC handle, the judge link */
	CU("cudaSetDevice", cudaSetDevice(dev));
	CU("cudaFree(0)", cudaFree(0));
	cudaStream_t s;
	CU("cudaStreamCreate", cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	cudaIpcMemHandle_t ha;
	check("the judge's IPC handle", read(j2s[0], &ha, sizeof ha) == sizeof ha, "short");
	int link[2];
	check("the judge link (socketpair)", socketpair(AF_UNIX, SOCK_STREAM, 0, link) == 0, "failed");

	struct wire_job job;
	wire_job_init(&job);
	job.n_sol = 1;
	snprintf(job.sol[0].role, sizeof job.sol[0].role, "candidate");
	snprintf(job.sol[0].so, sizeof job.sol[0].so, "%s", so);
	job.sol[0].nccl = 0;
	char err[300] = "";
	int r = sandbox_rank_enter(&job, link[1], err, sizeof err);
	check("sandbox_rank_enter without NCCL (rlimits + seccomp + Landlock)", r == 0,
	      err[0] ? err : "?");
	list_sockets("after entering");

	const int n = 1 << 20;
	float *x, *h;
	CU("cudaMalloc", cudaMalloc(&x, n * sizeof(float)));
	fill<<<n / 256, 256, 0, s>>>(x, n, 1.0f);
	CU("kernel launch", cudaGetLastError());
	CU("cudaStreamSynchronize", cudaStreamSynchronize(s));
	CU("cudaMallocHost", cudaMallocHost(&h, n * sizeof(float)));
	CU("cudaMemcpyAsync D2H", cudaMemcpyAsync(h, x, n * sizeof(float), cudaMemcpyDeviceToHost, s));
	CU("cudaStreamSynchronize", cudaStreamSynchronize(s));
	check("D2H data", h[0] == 1.0f && h[n - 1] == 1.0f, "wrong value");

	void *a = NULL;
	CU("cudaIpcOpenMemHandle of the judge's handle (made before entering)",
	   cudaIpcOpenMemHandle(&a, ha, cudaIpcMemLazyEnablePeerAccess));
	if (a) {
		CU("cudaMemcpyAsync from the judge's buffer",
		   cudaMemcpyAsync(h, a, n * sizeof(float), cudaMemcpyDeviceToHost, s));
		CU("cudaStreamSynchronize", cudaStreamSynchronize(s));
		check("the judge's data", h[0] == 7.0f && h[n - 1] == 7.0f, "wrong value");
		fill<<<n / 256, 256, 0, s>>>((float *)a, n, 8.0f);
		CU("a kernel writing the judge's buffer", cudaStreamSynchronize(s));
		CU("cudaIpcCloseMemHandle", cudaIpcCloseMemHandle(a));
	}

	cudaEvent_t e0, e1;
	float ms = 0;
	CU("cudaEventCreate", cudaEventCreate(&e0));
	CU("cudaEventCreate", cudaEventCreate(&e1));
	CU("cudaEventRecord", cudaEventRecord(e0, s));
	fill<<<n / 256, 256, 0, s>>>(x, n, 9.0f);
	CU("cudaEventRecord", cudaEventRecord(e1, s));
	CU("cudaEventSynchronize", cudaEventSynchronize(e1));
	CU("cudaEventElapsedTime", cudaEventElapsedTime(&ms, e0, e1));
	cudaIpcMemHandle_t hb;
	CU("cudaIpcGetMemHandle after entering", cudaIpcGetMemHandle(&hb, x));
	char judged = 0;
	check("the judge opens it and reads its 9s",
	      write(s2j[1], &hb, sizeof hb) == sizeof hb && read(j2s[0], &judged, 1) == 1 && judged,
	      "failed");

	cublasHandle_t hbl;
	cublasStatus_t bs = cublasCreate(&hbl);
	check("cublasCreate", bs == CUBLAS_STATUS_SUCCESS, "cublasCreate failed");
	cublasSetStream(hbl, s);
	float one = 1, zero = 0;
	__nv_bfloat16 *bx;
	CU("cudaMalloc bf16", cudaMalloc(&bx, 3 * 512 * 512 * sizeof *bx));
	bs = cublasGemmEx(hbl, CUBLAS_OP_N, CUBLAS_OP_N, 512, 512, 512, &one, bx, CUDA_R_16BF, 512,
			  bx + 512 * 512, CUDA_R_16BF, 512, &zero, bx + 2 * 512 * 512, CUDA_R_16BF,
			  512, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
	check("cublasGemmEx bf16 (cuBLASLt loaded lazily)", bs == CUBLAS_STATUS_SUCCESS,
	      "cublasGemmEx failed");
	CU("cuBLAS's work done", cudaStreamSynchronize(s));

	char c = 0;
	check("the judge link: send and recv",
	      send(link[1], "x", 1, 0) == 1 && recv(link[0], &c, 1, 0) == 1 && c == 'x', "failed");
	if (have_so) {
		void *dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
		check("dlopen of the solution", dl != NULL, dl ? "" : dlerror());
		check("its pkb_run", dl && dlsym(dl, "pkb_run"), "no pkb_run");
	}
	char path[64];
	snprintf(path, sizeof path, "/dev/shm/pkb-sandbox-probe-%d", (int)getpid());
	check("writing /dev/shm (denied)", r != 0 || denied(path, O_WRONLY | O_CREAT), "allowed");
	snprintf(path, sizeof path, "/proc/%d/environ", (int)getppid());
	check("reading the judge's /proc/<pid>/environ (denied)", r != 0 || denied(path, O_RDONLY),
	      "allowed");
	check("reading /proc/self/maps", access("/proc/self/maps", R_OK) == 0, strerror(errno));
	cublasDestroy(hbl);
	close(s2j[1]);
	close(j2s[0]);
	int st = 0;
	waitpid(judge, &st, 0);
	check("the judge process", WIFEXITED(st) && WEXITSTATUS(st) == 0, "failed");
	printf("%s%d ok, %d failed\n", tag, n_ok, n_bad);
	return n_bad != 0;
}

int main(int argc, char **argv)
{
	int world = 1, c;
	while ((c = getopt(argc, argv, "n:")) != -1) {
		if (c != 'n' || (world = atoi(optarg)) < 1 || world > 64) {
			fprintf(stderr, "usage: sandbox_probe [-n W] [SOLUTION.so]\n");
			return 2;
		}
	}
	const char *so = optind < argc ? argv[optind] : "/nonexistent/solution.so";
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (world == 1) {
		/* [alone] in a process of its own (forked before CUDA starts here);
		 * its counts come back on a pipe */
		int cnt[2];
		if (pipe(cnt) < 0)
			return perror("pipe"), 2;
		pid_t p = fork();
		if (p == 0) {
			close(cnt[0]);
			snprintf(tag, sizeof tag, "[alone] ");
			alarm(180);
			int bad = probe_alone(0, so, optind < argc);
			int counts[2] = { n_ok, n_bad };
			_exit(write(cnt[1], counts, sizeof counts) == sizeof counts ? bad : 2);
		}
		close(cnt[1]);
		int counts[2] = { 0, 1 }, st = 0;
		if (read(cnt[0], counts, sizeof counts) != sizeof counts)
			printf("[alone] ended early\n");
		waitpid(p, &st, 0);
		if (WIFSIGNALED(st))
			printf("[alone] killed by signal %d\n", WTERMSIG(st));
		else if (WEXITSTATUS(st) == SANDBOX_EXIT)
			printf("[alone] ended by its sandbox: the forbidden call is named above\n");
		snprintf(tag, sizeof tag, "[nccl] ");
		probe(0, 1, NULL, -1, so, optind < argc);
		n_ok += counts[0];
		n_bad += counts[1];
		printf("%d ok, %d failed\n", n_ok, n_bad);
		return n_bad != 0;
	}
	/* one process per GPU, forked before CUDA starts; the id goes from
	 * rank 0 down a pipe to each of the others */
	int pr[64][2];
	for (int r = 1; r < world; r++)
		if (pipe(pr[r]) < 0)
			return perror("pipe"), 2;
	pid_t pid[64];
	for (int r = 0; r < world; r++) {
		if ((pid[r] = fork()) == 0) {
			snprintf(tag, sizeof tag, "[rank %d] ", r);
			/* a rank whose peer died waits in NCCL forever: SIGALRM ends it */
			alarm(180);
			int w[64];
			for (int k = 1; k < world; k++)
				w[k] = pr[k][1];
			_exit(probe(r, world, w, r ? pr[r][0] : -1, so, optind < argc));
		}
	}
	int bad = 0;
	for (int r = 0; r < world; r++) {
		int st = 0;
		waitpid(pid[r], &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			bad++;
			printf("rank %d: %s %d\n", r, WIFSIGNALED(st) ? "killed by signal" : "exit status",
			       WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
		}
	}
	printf("%d of %d ranks passed every check\n", world - bad, world);
	return bad != 0;
}
