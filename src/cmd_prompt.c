/*
 * cmd_prompt.c -- `pkb prompt ID`: the prompt `pkb generate` would send for
 * one problem instance, on stdout (text, or the messages as JSON).
 */
#include "cmds.h"
#include "exitcode.h"
#include "problem.h"
#include "prompt.h"
#include "opts.h"
#include "util.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char head[] =
"usage: pkb prompt ID [options]\n"
"\n"
"Print the prompt of problem ID: a system and a user message assembled from\n"
"the template (default prompts/<backend>.txt) and the problem (docs/GENERATE.md).\n"
"\n";

enum { OPT_BACKEND = 1000, OPT_M, OPT_N, OPT_HW, OPT_TEMPLATE, OPT_JSON };
static const struct opt prompt_opts[] = {
	{ OPT_BACKEND, "backend", "B", "cuda (default) | nccl-device" },
	{ 'd', "dtype", "T", "bf16 (default) | fp16 | fp32" },
	{ 'g', "gpus", "W", "world size (default 4)" },
	{ OPT_M, "m", "M", "base shape: rows (default 1024)" },
	{ OPT_N, "n", "N", "base shape: columns (default 1024)" },
	{ OPT_HW, "hw", "NAME", "the machine whose numbers the prompt gives (default\n"
				"h100_8)" },
	{ OPT_TEMPLATE, "template", "FILE", "another template" },
	{ OPT_JSON, "json", NULL, "the messages and hashes as one JSON object" },
	OPTS_END,
};
static const struct opt *const tables[] = { prompt_opts, NULL };

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
	struct prompt_opts o = { .backend = "cuda", .world = 4, .m = 1024, .n = 1024,
				 .dtype = "bf16", .hw = "h100_8" };
	int json = 0, c;
	long long v;
	struct opts_parser P;
	opts_init(&P, tables);
	while ((c = opts_next(&P, argc, argv)) != -1) {
		switch (c) {
		case OPT_BACKEND: o.backend = optarg; break;
		case 'd': o.dtype = optarg; break;
		case OPT_HW: o.hw = optarg; break;
		case OPT_TEMPLATE: o.template_path = optarg; break;
		case OPT_JSON: json = 1; break;
		case 'g': case OPT_M: case OPT_N:
			v = pos_arg(c == 'g' ? "gpus" : c == OPT_M ? "m" : "n", optarg);
			if (v < 0)
				return PKB_EXIT_USAGE;
			if (c == 'g')
				o.world = (int)v;
			else
				*(c == OPT_M ? &o.m : &o.n) = v;
			break;
		case 'h':
			opts_usage(stdout, head, tables, NULL);
			return 0;
		default:
			opts_usage(stderr, head, tables, NULL);
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
