/*
 * 001_allreduce, known-bad (issues 30 and 36, the solution process's
 * sandbox): opens a TCP connection from pkb_init to 127.0.0.1:22 (any
 * server the machine reaches: a metadata service, the user's cluster).
 * A solution process without NCCL may open UNIX sockets only: the filter
 * traps socket(AF_INET) and the process ends. (A solution process with
 * NCCL keeps INET for NCCL's lazy connections: there the connect fails or
 * succeeds, nothing is computed, and the candidate ends as a runtime_error
 * or a mismatch -- docs/ANTI_CHEAT.md.)
 * pkb-expect: load_refused
 * pkb-caught-by: sandbox
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "pkb.h"

PKB_SOLUTION;

extern "C" int pkb_init(pkb_ctx *ctx)
{
	(void)ctx;
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons(22);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0)
		return 1;
	int r = connect(s, (struct sockaddr *)&a, sizeof a);
	close(s);
	return r != 0;
}
extern "C" int pkb_run(pkb_ctx *ctx)
{
	(void)ctx;
	return 0;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
