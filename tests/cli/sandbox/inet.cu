/*
 * Opens an AF_INET socket from pkb_init (to reach a server outside): the
 * rank's filter traps it when no solution of the job has NCCL, as in
 * `pkb run --solution` of a cuda-backend candidate. (In `pkb eval` the
 * reference's NCCL still connects to its peers lazily, so INET stays open:
 * docs/ANTI_CHEAT.md.)
 */
#include <sys/socket.h>
#include <unistd.h>
#include "pkb.h"

PKB_SOLUTION;

extern "C" int pkb_init(pkb_ctx *ctx)
{
	(void)ctx;
	int s = socket(AF_INET, SOCK_STREAM, 0);
	if (s >= 0)
		close(s);
	return 0;
}
extern "C" int pkb_run(pkb_ctx *ctx) { (void)ctx; return 0; }
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
