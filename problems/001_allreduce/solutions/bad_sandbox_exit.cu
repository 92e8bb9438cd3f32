/*
 * 001_allreduce, known-bad (issue 30, the rank's sandbox): calls exit(0)
 * inside pkb_run: the rank would end with status 0 and no result. The rank's
 * exit hook turns it into a runtime_error naming exit(0) and the phase it was
 * called in.
 * pkb-expect: runtime_error
 * pkb-caught-by: sandbox
 */
#include <stdlib.h>
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
	exit(0);
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
