/*
 * 001_allreduce, known-bad (issue 30, the rank's sandbox): reads a shell
 * command's output with popen() in pkb_init. The filter traps the process
 * popen() starts. Computes nothing: without the sandbox it would end as a
 * mismatch.
 * pkb-expect: load_refused
 * pkb-caught-by: sandbox
 */
#include <stdio.h>
#include "pkb.h"

PKB_SOLUTION;

extern "C" int pkb_init(pkb_ctx *ctx)
{
	(void)ctx;
	FILE *f = popen("id", "r");
	return f ? pclose(f) != 0 : 1;
}
extern "C" int pkb_run(pkb_ctx *ctx)
{
	(void)ctx;
	return 0;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
