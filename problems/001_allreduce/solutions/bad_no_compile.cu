/*
 * 001_allreduce, known-bad: does not compile (an undeclared identifier). The
 * harness must report compile_error with the compiler's message.
 * pkb-expect: compile_error
 */
#include "pkb.h"

PKB_SOLUTION;

extern "C" int pkb_init(pkb_ctx *ctx) { (void)ctx; return 0; }
extern "C" int pkb_run(pkb_ctx *ctx) { return launch_the_allreduce(ctx); }
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
