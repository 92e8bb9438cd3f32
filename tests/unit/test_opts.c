/*
 * test_opts.c -- option tables (src/opts.c): the getopt array and short
 * string they yield, parsing through them, the help's alignment and
 * continuation lines, a table with an option twice refused as a bug, and
 * the strict numbers of options (opt_int, opt_num, util's parse_*_in).
 */
#define _GNU_SOURCE
#include "opts.h"
#include "t.h"
#include "util.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { OPT_LONG_ONLY = 1000, OPT_FLAG };
static const struct opt mine[] = {
	{ 'g', "gpus", "W", "world size" },
	{ OPT_LONG_ONLY, "seed", "S", "input seed\nsecond line" },
	{ OPT_FLAG, "measure-perf", NULL, "time it" },
	{ 'q', "quiet", NULL, "no progress" },
	OPTS_END,
};
static const struct opt more[] = {
	{ OPT_FLAG + 1, "device-timeout", "MS", "a long left side" },
	OPTS_END,
};
static const struct opt twice[] = {
	{ 'x', "gpus", "W", "gpus again" },
	OPTS_END,
};

static int parse(const char *const *args, int *ids, char (*vals)[32], int max)
{
	char *argv[16];
	int argc = 0;
	while (args[argc] && argc < 15) {
		argv[argc] = (char *)args[argc];
		argc++;
	}
	argv[argc] = NULL;
	const struct opt *const tables[] = { mine, more, NULL };
	struct opts_parser P;
	opts_init(&P, tables);
	opterr = 0;
	int n = 0, c;
	while ((c = opts_next(&P, argc, argv)) != -1 && n < max) {
		ids[n] = c;
		snprintf(vals[n], sizeof vals[n], "%s", optarg ? optarg : "");
		n++;
	}
	return n;
}

int main(void)
{
	const struct opt *const tables[] = { mine, more, NULL };
	struct opts_parser P;
	opts_init(&P, tables);
	/* letters are short options too, codes only long; --help/-h always */
	CHECKF(!strcmp(P.so, "g:qh"), "'%s'", P.so);
	int found = 0;
	for (int i = 0; P.lo[i].name; i++)
		found += (!strcmp(P.lo[i].name, "seed") && P.lo[i].has_arg == required_argument &&
			  P.lo[i].val == OPT_LONG_ONLY) ||
			 (!strcmp(P.lo[i].name, "measure-perf") && P.lo[i].has_arg == no_argument) ||
			 (!strcmp(P.lo[i].name, "help") && P.lo[i].val == 'h');
	CHECK(found == 3);

	int ids[8];
	char vals[8][32];
	const char *a1[] = { "pkb", "-g", "4", "--seed=7", "--measure-perf", "-q", "--gpus", "8",
			     "--device-timeout", "100", "-h", NULL };
	int n = parse(a1, ids, vals, 8);
	CHECKF(n == 7, "%d", n);
	CHECK(ids[0] == 'g' && !strcmp(vals[0], "4"));
	CHECK(ids[1] == OPT_LONG_ONLY && !strcmp(vals[1], "7"));
	CHECK(ids[2] == OPT_FLAG && ids[3] == 'q');
	CHECK(ids[4] == 'g' && !strcmp(vals[4], "8"));
	CHECK(ids[5] == OPT_FLAG + 1 && !strcmp(vals[5], "100"));
	CHECK(ids[6] == 'h');
	/* unknown, a code's number used as a letter, a missing argument */
	const char *a2[] = { "pkb", "--bogus", "-s", "1", "--seed", NULL };
	n = parse(a2, ids, vals, 8);
	CHECKF(n == 3 && ids[0] == '?' && ids[1] == '?' && ids[2] == '?', "%d", n);
	/* a second parse of another argv starts afresh */
	const char *a3[] = { "pkb", "-q", NULL };
	CHECK(parse(a3, ids, vals, 8) == 1 && ids[0] == 'q');

	/* the help: letters as "-g, --gpus W", codes as "    --seed S", the
	 * help from column 25, continuation lines aligned, a long left side
	 * two spaces from its help */
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	opts_usage(f, "usage: x\n", tables, "tail\n");
	fclose(f);
	CHECKF(strstr(buf, "usage: x\n  -g, --gpus W           world size\n") != NULL, "%s", buf);
	CHECK(strstr(buf, "\n      --seed S           input seed\n"
			  "                         second line\n") != NULL);
	CHECK(strstr(buf, "\n      --measure-perf     time it\n") != NULL);
	CHECK(strstr(buf, "\n  -q, --quiet            no progress\n") != NULL);
	CHECK(strstr(buf, "\n      --device-timeout MS  a long left side\n") != NULL);
	CHECK(len > 5 && !strcmp(buf + len - 5, "tail\n"));
	free(buf);

	/* an option twice across the tables is a harness bug, not a silent
	 * shadowing: BUG() exits */
	fflush(NULL);
	pid_t p = fork();
	if (p == 0) {
		freopen("/dev/null", "w", stderr);
		const struct opt *const bad[] = { mine, twice, NULL };
		struct opts_parser Q;
		opts_init(&Q, bad);
		_exit(0);
	}
	int st = 0;
	waitpid(p, &st, 0);
	CHECKF(!(WIFEXITED(st) && WEXITSTATUS(st) == 0), "status %d", st);
	/* numbers, strictly: all of the string, no overflow, finite, in range */
	long long i = 7;
	double x = 7;
	CHECK(parse_int_in("42", 1, 100, &i) == 0 && i == 42);
	CHECK(parse_int_in("-3", -5, 5, &i) == 0 && i == -3);
	i = 7;
	CHECK(parse_int_in("3x", 1, 100, &i) < 0 && i == 7);   /* atoi took it as 3 */
	CHECK(parse_int_in("", 1, 100, &i) < 0 && i == 7);
	CHECK(parse_int_in("0", 1, 100, &i) < 0 && i == 7);
	CHECK(parse_int_in("101", 1, 100, &i) < 0);
	CHECK(parse_int_in("99999999999999999999", 1, LLONG_MAX, &i) < 0);   /* ERANGE */
	CHECK(parse_num_in("1e-3", 0, 1, &x) == 0 && x == 1e-3);
	x = 7;
	CHECK(parse_num_in("nan", 0, 1e30, &x) < 0 && x == 7);
	CHECK(parse_num_in("inf", 0, 1e30, &x) < 0);
	CHECK(parse_num_in("-0.5", 0, 1, &x) < 0);
	CHECK(parse_num_in("1e999", 0, HUGE_VAL, &x) < 0);   /* ERANGE */
	CHECK(parse_num_in("0.5 ", 0, 1, &x) < 0);
	/* the option's error names it, its range and what was given */
	fflush(stderr);
	FILE *saved = stderr;
	char *ebuf = NULL;
	size_t elen = 0;
	stderr = open_memstream(&ebuf, &elen);
	CHECK(opt_int("trials", "3x", 1, 10000, &i) < 0);
	CHECK(opt_num("atol", "abc", 0, 1e30, &x) < 0);
	fclose(stderr);
	stderr = saved;
	CHECKF(strstr(ebuf, "--trials takes an integer from 1 to 10000, not '3x'") != NULL, "%s", ebuf);
	CHECKF(strstr(ebuf, "--atol takes a number from 0 to 1e+30, not 'abc'") != NULL, "%s", ebuf);
	free(ebuf);
	return t_done("test_opts");
}
