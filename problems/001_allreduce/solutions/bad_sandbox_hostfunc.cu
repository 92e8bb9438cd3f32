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

/* the user's home folder from /etc/passwd, read directly: getpwuid() may
 * ask nscd over a socket, which a solution without NCCL may not open */
static const char *home_dir(void)
{
	static char home[512];
	char line[1024];
	FILE *f = fopen("/etc/passwd", "r");
	if (!f)
		return NULL;
	while (fgets(line, sizeof line, f)) {
		char *field[7] = { line };
		int n = 1;
		for (char *p = line; *p && n < 7; p++)
			if (*p == ':') {
				*p = 0;
				field[n++] = p + 1;
			}
		if (n == 7 && (unsigned)atoi(field[2]) == (unsigned)getuid()) {
			snprintf(home, sizeof home, "%s", field[5]);
			fclose(f);
			return home;
		}
	}
	fclose(f);
	return NULL;
}

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
