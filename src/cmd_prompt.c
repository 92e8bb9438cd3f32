/*
 * cmd_prompt.c -- `pkb prompt ID`: the prompt `pkb generate` would send for
 * one problem instance, on stdout (text, or the messages as JSON).
 */
#include "cmds.h"
#include "exitcode.h"
#include "problem.h"
#include "prompt.h"
#include "util.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
"usage: pkb prompt ID [--backend B] [--dtype T] [--gpus W] [--m M --n N] [--hw NAME]\n"
"                     [--template FILE] [--json]\n"
"\n"
"Print the prompt of problem ID: a system and a user message assembled from\n"
"the template (default prompts/<backend>.txt) and the problem (docs/GENERATE.md).\n"
"\n"
"      --backend B     cuda (default) | nccl-device\n"
"  -d, --dtype T       bf16 (default) | fp16 | fp32\n"
"  -g, --gpus W        world size (default 4)\n"
"      --m M, --n N    base shape (default 1024 1024)\n"
"      --hw NAME       the machine whose numbers the prompt gives (default h100_8)\n"
"      --template FILE another template\n"
"      --json          the messages and hashes as one JSON object\n";

/* a positive integer option, or -1 */
static long long pos_arg(const char *opt, const char *s)
{
	char *end;
	long long v = strtoll(s, &end, 10);
	if (end == s || *end || v <= 0) {
		error("--%s takes a positive integer, not '%s'", opt, s);
		return -1;
	}
	return v;
}

int cmd_prompt(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "backend", required_argument, NULL, 'b' },
		{ "dtype", required_argument, NULL, 'd' },
		{ "gpus", required_argument, NULL, 'g' },
		{ "m", required_argument, NULL, 'M' },
		{ "n", required_argument, NULL, 'N' },
		{ "hw", required_argument, NULL, 'H' },
		{ "template", required_argument, NULL, 'T' },
		{ "json", no_argument, NULL, 'J' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct prompt_opts o = { .backend = "cuda", .world = 4, .m = 1024, .n = 1024,
				 .dtype = "bf16", .hw = "h100_8" };
	int json = 0, c;
	long long v;
	optind = 1;
	while ((c = getopt_long(argc, argv, "d:g:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'b': o.backend = optarg; break;
		case 'd': o.dtype = optarg; break;
		case 'H': o.hw = optarg; break;
		case 'T': o.template_path = optarg; break;
		case 'J': json = 1; break;
		case 'g': case 'M': case 'N':
			v = pos_arg(c == 'g' ? "gpus" : c == 'M' ? "m" : "n", optarg);
			if (v < 0)
				return PKB_EXIT_USAGE;
			if (c == 'g')
				o.world = (int)v;
			else
				*(c == 'M' ? &o.m : &o.n) = v;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return PKB_EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		error("prompt takes one problem");
		return PKB_EXIT_USAGE;
	}
	o.p = problem_find(argv[optind]);
	if (!o.p) {
		error("no problem '%s'", argv[optind]);
		hint("'pkb list' shows the problems");
		return PKB_EXIT_INPUT;
	}
	struct prompt pr;
	char err[512];
	if (prompt_build(&o, &pr, err, sizeof err) < 0) {
		error("%s", err);
		return PKB_EXIT_INPUT;
	}
	if (json) {
		json_t *doc = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s?}", "system", pr.system, "user",
					pr.user, "template", pr.template_path, "template_sha256",
					pr.template_sha256, "prompt_sha256", pr.sha256, "example",
					pr.example);
		json_dumpf(doc, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(doc);
	} else {
		printf("=== system ===\n%s=== user ===\n%s", pr.system, pr.user);
	}
	prompt_free(&pr);
	return 0;
}
