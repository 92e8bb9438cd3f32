/*
 * 001_allreduce, known-bad (issue 36, the solution process's sandbox):
 * connects from pkb_init to the abstract AF_UNIX sockets of other processes
 * (their names live in the kernel, with no file for Landlock to guard):
 * those CUDA opens in every process, `@cuda-uvmfd-<net namespace>-<pid>`,
 * which serve CUDA's memory handles -- its judge's above all. A solution
 * process may open UNIX sockets (CUDA under MPS opens one in each new
 * thread), so what stops it is Landlock's scope (ABI 6): no connection to
 * an abstract socket made outside the process's sandbox.
 *
 * It reads the names from /proc/self/net/unix (its own /proc, open to it),
 * with their exact length: CUDA pads each name with NULs to a fixed length,
 * shown there as '@'s (the first version of this file connected to the bare
 * name, which exists nowhere: a test that could not fail, 2026-11-28). Each
 * other process's uvmfd socket is tried. The ends, told apart:
 *   - every connection refused with EPERM: pkb_init returns 1,
 *     runtime_error (the scope held; expected);
 *   - any connection made: computes nothing, mismatch (the scope is
 *     missing: a hole, to be read);
 *   - no other process's name found, or none refused with EPERM: a test
 *     that proves nothing; it ends itself with a forbidden system call,
 *     load_refused, so the suite says so.
 * pkb-expect: runtime_error
 * pkb-caught-by: sandbox
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "pkb.h"

PKB_SOLUTION;

/* connect to the abstract name `shown` ("@name@@@": '@' for each NUL), as
 * long as it is shown: 0 connected, else the errno */
static int try_connect(const char *shown)
{
	struct sockaddr_un a;
	size_t len = strlen(shown);
	if (len > sizeof a.sun_path)
		return ENAMETOOLONG;
	memset(&a, 0, sizeof a);
	a.sun_family = AF_UNIX;
	for (size_t i = 0; i < len; i++)
		a.sun_path[i] = shown[i] == '@' ? 0 : shown[i];
	int s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	if (s < 0)
		return errno;
	int r = connect(s, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len));
	int e = r ? errno : 0;
	close(s);
	return e;
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	(void)ctx;
	char mine[64], line[512];
	snprintf(mine, sizeof mine, "-%d@", (int)getpid());
	int tried = 0, refused = 0, connected = 0;
	FILE *f = fopen("/proc/self/net/unix", "r");
	while (f && fgets(line, sizeof line, f)) {
		char path[256] = "";
		/* Num RefCount Protocol Flags Type St Inode [Path] */
		if (sscanf(line, "%*s %*s %*s %*s %*s %*s %*s %255s", path) != 1 ||
		    path[0] != '@' || !strstr(path, "cuda-uvmfd-") || strstr(path, mine))
			continue;
		int e = try_connect(path);
		tried++;
		refused += e == EPERM;
		connected += e == 0;
	}
	if (f)
		fclose(f);
	fprintf(stderr, "bad_sandbox_unix_abstract: %d tried, %d refused (EPERM), %d connected\n",
		tried, refused, connected);
	if (connected)
		return 0;
	if (refused)
		return 1;
	ptrace(PTRACE_TRACEME, 0, NULL, NULL);   /* proves nothing: say so */
	return 0;
}
extern "C" int pkb_run(pkb_ctx *ctx)
{
	(void)ctx;
	return 0;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
