/*
 * 001_allreduce, known-bad (issue 30, the rank's sandbox): runs a command from
 * a constructor, at load time, before any entry point is called (the sandbox
 * is entered before the first dlopen). Computes nothing: without the sandbox
 * it would end as a mismatch.
 * pkb-expect: load_refused
 * pkb-caught-by: sandbox
 */
#include <stdlib.h>
#include "pkb.h"

PKB_SOLUTION;

__attribute__((constructor)) static void at_load(void)
{
	int r = system("echo escaped > /tmp/pkb-escape-ctor");
	(void)r;
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	(void)ctx;
	return 0;
}
extern "C" int pkb_run(pkb_ctx *ctx)
{
	(void)ctx;
	return 0;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
