/*
 * 001_allreduce, known-bad (issue 44, threads that predate the sandbox):
 * bad_sandbox_read_home.cu's listing of the user's home folder, but run as a
 * host function on the stream (cudaLaunchHostFunc), which CUDA executes on a
 * thread of its own. Landlock restricts the thread that enters it and the
 * threads started after; a CUDA thread started with the context, before the
 * rank entered its sandbox, would read on unrestricted (seccomp is applied
 * to every thread: TSYNC). pkb_init returns 1 when the listing failed, as
 * it must: runtime_error. Computes nothing: if the listing succeeds it ends
 * as a mismatch, and the suite says the sandbox has this hole.
 * pkb-expect: runtime_error
 * pkb-caught-by: sandbox
 */
#include <cuda_runtime.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "pkb.h"

#include "home_dir.h"

PKB_SOLUTION;

static int listed = -1;   /* entries of the home folder, -1 when it could not be read */

static void CUDART_CB list_home(void *arg)
{
	(void)arg;
	const char *home = home_dir();
	DIR *d = home ? opendir(home) : NULL;
	if (!d)
		return;
	int n = 0;
	while (readdir(d))
		n++;
	closedir(d);
	listed = n;
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	cudaStream_t s = (cudaStream_t)ctx->stream;
	if (cudaLaunchHostFunc(s, list_home, NULL) != cudaSuccess ||
	    cudaStreamSynchronize(s) != cudaSuccess)
		return 2;
	return listed < 0;
}
extern "C" int pkb_run(pkb_ctx *ctx)
{
	(void)ctx;
	return 0;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
