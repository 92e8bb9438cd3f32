/*
 * 001_allreduce, known-bad (issue 30, the rank's sandbox): replaces the rank
 * with /bin/sh through a raw syscall(SYS_execve) in pkb_run, past any libc
 * wrapper. The filter traps execve. Computes nothing: without the sandbox it
 * would end as a mismatch.
 * pkb-expect: load_refused
 * pkb-caught-by: sandbox
 */
#include <unistd.h>
#include <sys/syscall.h>
#include "pkb.h"

PKB_SOLUTION;

extern "C" int pkb_init(pkb_ctx *ctx)
{
	(void)ctx;
	return 0;
}
extern "C" int pkb_run(pkb_ctx *ctx)
{
	(void)ctx;
	char *argv[] = { (char *)"sh", (char *)"-c", (char *)"echo escaped > /tmp/pkb-escape-syscall", NULL };
	return (int)syscall(SYS_execve, "/bin/sh", argv, (char **)NULL) != 0;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
