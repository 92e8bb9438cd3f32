/*
 * 001_allreduce, known-bad (issue 36, the solution process's sandbox):
 * connects from pkb_init to an abstract AF_UNIX socket of another process
 * (its name lives in the kernel, with no file for Landlock to guard): here
 * a name in the style of D-Bus's, which a desktop session listens on;
 * NCCL's proxies and CUDA's own sockets are abstract too, and so are those
 * of whatever else runs on the machine. A solution process without NCCL may
 * open no socket at all: the filter traps socket() and the process ends.
 * (Landlock's scope, ABI 6, refuses as well a datagram sent to such a name
 * from a socket made before the sandbox.) With NCCL in the job UNIX sockets stay open: there
 * the connect fails or succeeds, nothing is computed, and the candidate
 * ends as a runtime_error or a mismatch.
 * pkb-expect: load_refused
 * pkb-caught-by: sandbox
 */
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "pkb.h"

PKB_SOLUTION;

extern "C" int pkb_init(pkb_ctx *ctx)
{
	(void)ctx;
	static const char name[] = "/tmp/dbus-pkb";   /* '@' + name: abstract */
	struct sockaddr_un a;
	memset(&a, 0, sizeof a);
	a.sun_family = AF_UNIX;
	memcpy(a.sun_path + 1, name, sizeof name - 1);
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	if (s < 0)
		return 1;
	int r = connect(s, (struct sockaddr *)&a,
			(socklen_t)(offsetof(struct sockaddr_un, sun_path) + sizeof name));
	close(s);
	return r != 0;
}
extern "C" int pkb_run(pkb_ctx *ctx)
{
	(void)ctx;
	return 0;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
