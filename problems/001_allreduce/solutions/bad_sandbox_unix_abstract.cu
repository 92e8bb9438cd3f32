/*
 * 001_allreduce, known-bad (issue 36, the solution process's sandbox):
 * connects from pkb_init to an abstract AF_UNIX socket of another process
 * (its name lives in the kernel, with no file for Landlock to guard): the
 * one CUDA opens in its judge, `@cuda-uvmfd-<net namespace>-<judge pid>`
 * (the listing of tests/gpu/sandbox_probe), which serves CUDA's memory
 * handles. A solution process may open UNIX sockets (CUDA under MPS opens
 * one in each new thread), so what stops it is Landlock's scope (ABI 6): no
 * connection to an abstract socket made outside the process's sandbox. The
 * connect fails with EPERM and pkb_init returns 1: runtime_error. Any other
 * end (connected, or the name not there) returns 0 and computes nothing:
 * a mismatch, which the suite reports as this file's failure, to be read.
 * pkb-expect: runtime_error
 * pkb-caught-by: sandbox
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "pkb.h"

PKB_SOLUTION;

extern "C" int pkb_init(pkb_ctx *ctx)
{
	(void)ctx;
	char ns[64] = "", name[108];
	ssize_t k = readlink("/proc/self/ns/net", ns, sizeof ns - 1);   /* "net:[N]" */
	unsigned long long inode = 0;
	if (k <= 0 || sscanf(ns, "net:[%llu]", &inode) != 1)
		return 0;
	int len = snprintf(name, sizeof name, "cuda-uvmfd-%llu-%d", inode, (int)getppid());
	struct sockaddr_un a;
	memset(&a, 0, sizeof a);
	a.sun_family = AF_UNIX;
	memcpy(a.sun_path + 1, name, (size_t)len);   /* '@' + name: abstract */
	int s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	if (s < 0)
		return 0;
	int r = connect(s, (struct sockaddr *)&a,
			(socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)len));
	int e = errno;
	close(s);
	return r != 0 && e == EPERM;
}
extern "C" int pkb_run(pkb_ctx *ctx)
{
	(void)ctx;
	return 0;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
