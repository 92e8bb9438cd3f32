/*
 * 001_allreduce, known-bad (issue 40, the reference's outputs kept on
 * disk): looks for the judge's store of the reference's outputs
 * (`--ref-cache`: tools/test-gpu keeps it in a mktemp folder below /tmp,
 * `pkb sweep` in the run directory) from pkb_init, to serve the kept answers
 * instead of computing them. Landlock lets a solution process read only the
 * system folders, its objects' folders and LD_LIBRARY_PATH, and pkb refuses
 * a store below any of them, so /tmp cannot even be listed: pkb_init returns
 * 1, runtime_error. Were /tmp readable it would list it, compute nothing
 * and end as a mismatch, for the suite to report.
 * pkb-expect: runtime_error
 * pkb-caught-by: sandbox
 */
#include <dirent.h>
#include <stdlib.h>
#include "pkb.h"

PKB_SOLUTION;

extern "C" int pkb_init(pkb_ctx *ctx)
{
	(void)ctx;
	const char *tmp = getenv("TMPDIR");
	DIR *d = opendir(tmp && *tmp ? tmp : "/tmp");
	if (!d)
		return 1;
	while (readdir(d))
		;
	closedir(d);
	return 0;
}
extern "C" int pkb_run(pkb_ctx *ctx)
{
	(void)ctx;
	return 0;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
