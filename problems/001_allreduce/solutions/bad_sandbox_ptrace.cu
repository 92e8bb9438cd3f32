/*
 * 001_allreduce, known-bad (issue 30, the rank's sandbox): attaches to its
 * parent (the harness) with ptrace in pkb_init, to read or rewrite the
 * parent's memory. The filter traps ptrace. Computes nothing: without the
 * sandbox it would end as a mismatch.
 * pkb-expect: load_refused
 * pkb-caught-by: sandbox
 */
#include <unistd.h>
#include <sys/ptrace.h>
#include "pkb.h"

PKB_SOLUTION;

extern "C" int pkb_init(pkb_ctx *ctx)
{
	(void)ctx;
	return ptrace(PTRACE_ATTACH, getppid(), NULL, NULL) != 0;
}
extern "C" int pkb_run(pkb_ctx *ctx)
{
	(void)ctx;
	return 0;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
