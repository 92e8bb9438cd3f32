/*
 * 001_allreduce, known-bad (issue 30, the rank's sandbox): lists the user's
 * home folder (where ~/.ssh, ~/.netrc and API key files live) from pkb_init,
 * and returns 1 when it cannot: Landlock lets a rank read only the system
 * folders, its objects' folders and LD_LIBRARY_PATH. Without Landlock it would
 * read on and end as a mismatch.
 * pkb-expect: runtime_error
 * pkb-caught-by: sandbox
 */
#include <dirent.h>
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
	DIR *d = home ? opendir(home) : NULL;
	if (!d)
		return 1;
	int n = 0;
	while (readdir(d))
		n++;
	closedir(d);
	return n < 0;
}
extern "C" int pkb_run(pkb_ctx *ctx)
{
	(void)ctx;
	return 0;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
