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

/* the user's home folder from /etc/passwd, read directly: getpwuid() may
 * ask nscd over a socket, which a solution without NCCL may not open */
static const char *home_dir(void)
{
	static char home[512];
	char line[1024];
	FILE *f = fopen("/etc/passwd", "r");
	if (!f)
		return NULL;
	while (fgets(line, sizeof line, f)) {
		char *field[7] = { line };
		int n = 1;
		for (char *p = line; *p && n < 7; p++)
			if (*p == ':') {
				*p = 0;
				field[n++] = p + 1;
			}
		if (n == 7 && (unsigned)atoi(field[2]) == (unsigned)getuid()) {
			snprintf(home, sizeof home, "%s", field[5]);
			fclose(f);
			return home;
		}
	}
	fclose(f);
	return NULL;
}

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
