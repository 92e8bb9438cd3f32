/*
 * 001_allreduce, known-bad (issue 30, the rank's sandbox): fork() and
 * execl("/bin/sh") in pkb_init. The filter traps the fork (clone without
 * CLONE_THREAD) before any exec. Computes nothing: without the sandbox it
 * would end as a mismatch.
 * pkb-expect: load_refused
 * pkb-caught-by: sandbox
 */
#include <unistd.h>
#include <sys/wait.h>
#include "pkb.h"

PKB_SOLUTION;

extern "C" int pkb_init(pkb_ctx *ctx)
{
	(void)ctx;
	pid_t p = fork();
	if (p == 0) {
		execl("/bin/sh", "sh", "-c", "echo escaped > /tmp/pkb-escape-fork", (char *)0);
		_exit(127);
	}
	int st = 0;
	return p < 0 || waitpid(p, &st, 0) < 0;
}
extern "C" int pkb_run(pkb_ctx *ctx)
{
	(void)ctx;
	return 0;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
