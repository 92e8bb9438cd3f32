/*
 * What NCCL's communicator costs each rank's process (issue 40): the
 * reference's process spends 1.06-1.22 s median in ncclCommInitRank at
 * W = 4 on 4x H200 (2026-11-28), after its CUDA context. W processes, one
 * per GPU, forked from this one, which makes no CUDA call (rank 0 makes the
 * unique id and passes it up a pipe); each sends its context's and its
 * communicator's seconds, and the slowest rank's are printed. NCCL's settings come from the
 * environment (tools/ctx-probe runs it under each).
 *   cc -O2 tests/gpu/nccl_init_probe.c -I$CUDA/include -L$CUDA/lib64 -lnccl -lcudart
 *   ./nccl_init_probe W
 * Not a test: the evidence for the launch's start-up, run on a lent GPU.
 */
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* one rank: its context, its communicator; "rank R context S nccl S" */
static int rank_run(int r, int w, const ncclUniqueId *id, int out)
{
	double t0 = now();
	if (cudaSetDevice(r) != cudaSuccess || cudaFree(0) != cudaSuccess)
		return 1;
	double t1 = now();
	ncclComm_t c;
	ncclResult_t e = ncclCommInitRank(&c, w, *id, r);
	double t2 = now();
	if (e != ncclSuccess) {
		fprintf(stderr, "rank %d: ncclCommInitRank: %s\n", r, ncclGetErrorString(e));
		return 1;
	}
	double t[2] = { t1 - t0, t2 - t1 };
	if (write(out, t, sizeof t) != (ssize_t)sizeof t)
		return 1;
	_exit(0);   /* as pkb's reference now ends: no destroy */
}

int main(int argc, char **argv)
{
	int w = argc > 1 ? atoi(argv[1]) : 2, p[2], idp[2];
	if (w < 1 || w > 64 || pipe(p) < 0 || pipe(idp) < 0)
		return 2;
	/* rank 0 makes the id (NCCL's init may touch CUDA, which must not
	 * happen in a process that forks afterwards) and hands it up */
	ncclUniqueId id;
	if (fork() == 0) {
		close(p[0]);
		close(idp[0]);
		if (ncclGetUniqueId(&id) != ncclSuccess ||
		    write(idp[1], &id, sizeof id) != (ssize_t)sizeof id)
			_exit(1);
		close(idp[1]);
		_exit(rank_run(0, w, &id, p[1]));
	}
	close(idp[1]);
	int have = read(idp[0], &id, sizeof id) == (ssize_t)sizeof id;
	for (int r = 1; have && r < w; r++)
		if (fork() == 0) {
			close(p[0]);
			_exit(rank_run(r, w, &id, p[1]));
		}
	close(p[1]);
	double worst[2] = { 0, 0 }, t[2];
	int got = 0;
	while (read(p[0], t, sizeof t) == (ssize_t)sizeof t) {
		for (int i = 0; i < 2; i++)
			worst[i] = t[i] > worst[i] ? t[i] : worst[i];
		got++;
	}
	int bad = 0, st;
	while (wait(&st) > 0)
		bad |= !WIFEXITED(st) || WEXITSTATUS(st);
	if (got != w || bad) {
		fprintf(stderr, "nccl_init_probe: %d of %d ranks finished\n", got, w);
		return 1;
	}
	printf("ranks %d context %.3f nccl %.3f\n", w, worst[0], worst[1]);
	return 0;
}
