/*
 * 001_allreduce, known-bad (issue 36, a deadline dodged): before computing
 * honestly (ok_oneshot_pull.cu), its pkb_init sleeps for two minutes and,
 * every second, announces its phase again on fd PKB_FD (3). When candidates
 * ran inside the rank, that was the link to the parent, and each
 * announcement re-armed the rank's 60 s init deadline, so a candidate could
 * stay alive as long as it liked. Now fd 3 of the candidate's process leads
 * to its judge, which announces every phase itself and takes a phase
 * message from a solution process as a forgery: flagged at the first.
 * pkb-expect: flagged
 */
#define pkb_init honest_init
#include "ok_oneshot_pull.cu"
#undef pkb_init
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern "C" int pkb_init(pkb_ctx *ctx)
{
	const char *env = getenv("PKB_FD");
	int fd = env ? atoi(env) : 3;
	const char *msg = "init|pkb_init of the candidate";
	uint32_t hdr[3] = { 0x706b6231u, 2 /* a phase */, (uint32_t)strlen(msg) };
	for (int k = 0; k < 120; k++) {
		sleep(1);
		if (write(fd, hdr, sizeof hdr) != (ssize_t)sizeof hdr ||
		    write(fd, msg, strlen(msg)) != (ssize_t)strlen(msg))
			return 1;
	}
	return honest_init(ctx);
}
