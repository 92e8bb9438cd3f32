/*
 * 001_allreduce, known-bad (issue 30, the rank's sandbox): writes a file
 * outside its rank's folders (the user's home) from pkb_init, and returns 1
 * when it cannot: Landlock lets a rank write only below /dev and its save
 * folder, so the open fails and the init's non-zero return is the verdict.
 * Without Landlock the write would land and the candidate would end as a
 * mismatch.
 * pkb-expect: runtime_error
 * pkb-caught-by: sandbox
 */
#include <stdio.h>
#include <stdlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "pkb.h"

#include "home_dir.h"

PKB_SOLUTION;

extern "C" int pkb_init(pkb_ctx *ctx)
{
	(void)ctx;
	const char *home = home_dir();
	char path[4096];
	snprintf(path, sizeof path, "%s/pkb-escape-write", home ? home : "/tmp");
	FILE *f = fopen(path, "w");
	if (!f)
		return 1;
	fputs("escaped\n", f);
	fclose(f);
	return 0;
}
extern "C" int pkb_run(pkb_ctx *ctx)
{
	(void)ctx;
	return 0;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
