/*
 * home_dir.h -- the user's home folder, for 001's known-bad candidates that
 * reach for it (bad_sandbox_read_home, bad_sandbox_write_file,
 * bad_sandbox_hostfunc): read from /etc/passwd directly, because getpwuid()
 * may ask nscd over a socket, and the candidates test Landlock's file
 * rules, not the socket rule.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

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
