/*
 * 001_allreduce, known-bad (issue 30, the rank's sandbox): execve("/bin/sh")
 * in inline assembly in pkb_run: no symbol for the scan to find. The filter
 * traps the system call itself. Computes nothing: without the sandbox it would
 * end as a mismatch.
 * pkb-expect: load_refused
 * pkb-caught-by: sandbox
 */
#include <stddef.h>
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
	static const char sh[] = "/bin/sh";
	const char *argv[] = { sh, "-c", "echo escaped > /tmp/pkb-escape-asm", NULL };
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "a"(59L), "D"(sh), "S"(argv), "d"(NULL)
			 : "rcx", "r11", "memory");
	return r != 0;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
