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

enum { OPT_JSON = 1000 };
static const struct opt prompt_own[] = {
	{ OPT_JSON, "json", NULL, "the messages and hashes as one JSON object" },
	OPTS_END,
};
static const struct opt *const tables[] = { prompt_opts_table, prompt_own, NULL };

int cmd_prompt(int argc, char **argv)
{
	struct prompt_opts o = PROMPT_OPTS_DEFAULTS;
	int json = 0, c;
	struct opts_parser P;
	opts_init(&P, tables);
	while ((c = opts_next(&P, argc, argv)) != -1) {
		int r = prompt_opt(&o, c, optarg);
		if (r < 0)
			return PKB_EXIT_USAGE;
		if (r)
			continue;
		switch (c) {
		case OPT_JSON: json = 1; break;
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
	prompt_hw_resolve(&o, NULL);
	if (prompt_build(&o, &pr, err, sizeof err) < 0) {
		error("%s", err);
		return PKB_EXIT_INPUT;
	}
	if (json) {
		json_t *doc = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s?,s:s,s:s}", "system", pr.system,
					"user", pr.user, "template", pr.template_path,
					"template_sha256", pr.template_sha256, "prompt_sha256",
					pr.sha256, "example", pr.example, "hw", o.hw, "hw_source",
					o.hw_source);
		json_dumpf(doc, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(doc);
	} else {
		printf("=== system ===\n%s=== user ===\n%s", pr.system, pr.user);
	}
	prompt_free(&pr);
	return 0;
}
