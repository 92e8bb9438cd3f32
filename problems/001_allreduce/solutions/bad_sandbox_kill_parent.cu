/*
 * 001_allreduce, known-bad (issue 30, the rank's sandbox): signals its parent
 * (the harness) from pkb_run, e.g. to stop its deadline clock. The filter
 * traps a signal to another process. Computes nothing: without the sandbox it
 * would end as a mismatch.
 * pkb-expect: load_refused
 * pkb-caught-by: sandbox
 */
#include <signal.h>
#include <unistd.h>
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
	return kill(getppid(), SIGSTOP) != 0;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
