/*
 * 001_allreduce, known-bad (issue 30, the rank's sandbox): runs a shell
 * command with system() in pkb_init. The rank's seccomp filter traps the
 * process system() starts (clone without CLONE_THREAD). Computes nothing:
 * without the sandbox it would end as a mismatch.
 * pkb-expect: load_refused
 * pkb-caught-by: sandbox
 */
#include <stdlib.h>
#include "pkb.h"

PKB_SOLUTION;

extern "C" int pkb_init(pkb_ctx *ctx)
{
	(void)ctx;
	return system("echo escaped > /tmp/pkb-escape-system") != 0;
}
extern "C" int pkb_run(pkb_ctx *ctx)
{
	(void)ctx;
	return 0;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
