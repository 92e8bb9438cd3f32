/*
 * 001_allreduce, known-bad (issue 36, what shares the candidate's process):
 * reads its own /proc/self/maps from pkb_init, looking for what it could
 * use without naming it (no symbol for the loader's scan to see): NCCL's
 * library (a private communicator, or the reference's collective), and any
 * other solution object of pkb's compile cache next to its own (the
 * reference, whose pkb_run it could call or patch). When candidates ran
 * inside the rank both were mapped. In a solution process of the cuda
 * backend neither is: pkb does not link NCCL (src/ncclso.c) and the
 * process loads only its one solution (src/solhost.c). Finding none,
 * pkb_init returns 1: runtime_error. Finding either, it computes nothing:
 * a mismatch, which the suite reports as this file's failure.
 * pkb-expect: runtime_error
 * pkb-caught-by: sandbox
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "pkb.h"

PKB_SOLUTION;

extern "C" int pkb_init(pkb_ctx *ctx)
{
	(void)ctx;
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return 1;
	char line[4352], own[4096] = "", other[4096] = "";
	int nccl = 0;
	uintptr_t me = (uintptr_t)&pkb_init;
	/* first pass: our own object (the mapping holding pkb_init) */
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		char path[4096] = "";
		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %4095s", &lo, &hi, path) < 2)
			continue;
		if (strstr(path, "libnccl"))
			nccl = 1;
		if (me >= lo && me < hi && path[0] == '/')
			snprintf(own, sizeof own, "%s", path);
	}
	char *slash = strrchr(own, '/');
	size_t dir_len = slash ? (size_t)(slash - own + 1) : 0;
	/* second pass: another .so in the same folder (pkb's compile cache) */
	rewind(f);
	while (dir_len && fgets(line, sizeof line, f)) {
		char path[4096] = "";
		if (sscanf(line, "%*s %*s %*s %*s %*s %4095s", path) != 1)
			continue;
		size_t n = strlen(path);
		if (n > 3 && !strcmp(path + n - 3, ".so") && !strncmp(path, own, dir_len) &&
		    strcmp(path, own))
			snprintf(other, sizeof other, "%s", path);
	}
	fclose(f);
	return !nccl && !other[0];   /* nothing to use: 1, the expected failure */
}
extern "C" int pkb_run(pkb_ctx *ctx)
{
	(void)ctx;
	return 0;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
