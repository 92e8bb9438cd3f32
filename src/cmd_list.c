/*
 * cmd_list.c -- `pkb list`: every problem with its id, name, category,
 * origin and supported world sizes.
 */
#include "cmds.h"
#include "exitcode.h"
#include "problem.h"
#include "util.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

static const char usage[] =
"usage: pkb list [--json FILE] [--category TEXT]\n"
"\n"
"List the problems: id, name, category, origin, supported world sizes.\n";

int cmd_list(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", required_argument, NULL, 'j' },
		{ "category", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *json_path = NULL, *category = NULL;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "j:c:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'j': json_path = optarg; break;
		case 'c': category = optarg; break;
		case 'h': fputs(usage, stdout); return 0;
		default: fputs(usage, stderr); return PKB_EXIT_USAGE;
		}
	}
	if (optind != argc) {
		error("list takes no arguments");
		return PKB_EXIT_USAGE;
	}
	json_t *arr = json_array();
	/* With --json - stdout carries the JSON alone, so the table goes
	 * to /dev/null rather than in front of it. */
	FILE *tab = json_path && !strcmp(json_path, "-") ? NULL : stdout;
	if (tab)
		fprintf(tab, "%-4s %-36s %-22s %-10s %s\n", "id", "name", "category", "worlds", "origin");
	for (int i = 0; i < problem_count(); i++) {
		const struct pkb_problem *p = problem_at(i);
		if (category && !strstr(p->category, category))
			continue;
		char w[128];
		problem_worlds_str(p, w, sizeof w);
		if (tab)
			fprintf(tab, "%03d  %-36s %-22s %-10s %s\n", p->id, p->name, p->category, w, p->origin);
		json_array_append_new(arr, json_pack("{s:i,s:s,s:s,s:s,s:s,s:s}", "id", p->id,
						     "name", p->name, "title", p->title, "category",
						     p->category, "origin", p->origin, "worlds", w));
	}
	int rc = 0;
	if (json_path && json_write_file(json_path, arr) < 0)
		rc = PKB_EXIT_INPUT;
	json_decref(arr);
	return rc;
}
