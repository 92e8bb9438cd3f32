/*
 * cmd_list.c -- `pkb list`: every problem with its id, name, category,
 * origin, supported world sizes, the world sizes at which it passed the
 * GPU suite and at which it agreed with the original (validated.c).
 */
#include "cmds.h"
#include "exitcode.h"
#include "problem.h"
#include "opts.h"
#include "util.h"
#include "validated.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

static const char head[] =
"usage: pkb list [--json FILE] [--category TEXT]\n"
"\n"
"List the problems: id, name, category, supported world sizes, gpu-validated\n"
"(the world sizes at which the reference and every ok_/bad_ candidate passed\n"
"in the newest GPU suite results under bench/results/, or $PKB_RESULTS;\n"
"docs/RESULTS.md), vs-original (the world sizes at which tools/crosscheck found\n"
"the original's Python reference computing the same outputs; the first W where\n"
"it did not, and what it found: disagree, layout, original_failed), origin.\n"
"--json - writes the JSON to stdout, without the table.\n"
"\n";

static const struct opt list_opts[] = {
	{ 'j', "json", "FILE", "also write the list as JSON (- for stdout)" },
	{ 'c', "category", "TEXT", "only the problems whose category contains TEXT" },
	OPTS_END,
};
static const struct opt *const tables[] = { list_opts, NULL };

int cmd_list(int argc, char **argv)
{
	const char *json_path = NULL, *category = NULL;
	int c;
	struct opts_parser P;
	opts_init(&P, tables);
	while ((c = opts_next(&P, argc, argv)) != -1) {
		switch (c) {
		case 'j': json_path = optarg; break;
		case 'c': category = optarg; break;
		case 'h': opts_usage(stdout, head, tables, NULL); return 0;
		default: opts_usage(stderr, head, tables, NULL); return PKB_EXIT_USAGE;
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
		fprintf(tab, "%-4s %-36s %-22s %-11s %-14s %-12s %s\n", "id", "name", "category",
			"worlds", "gpu-validated", "vs-original", "origin");
	json_t *newest = validated_load(), *crossed = crosscheck_load();
	for (int i = 0; i < problem_count(); i++) {
		const struct pkb_problem *p = problem_at(i);
		if (category && !strstr(p->category, category))
			continue;
		char w[128];
		problem_worlds_str(p, w, sizeof w);
		char v[64];
		json_t *vw = validated_worlds(newest, p, v, sizeof v);
		char x[64];
		json_t *xw = crosscheck_worlds(crossed, p, x, sizeof x);
		if (tab)
			fprintf(tab, "%03d  %-36s %-22s %-11s %-14s %-12s %s\n", p->id, p->name,
				p->category, w, v, x, p->origin);
		json_t *o = json_pack("{s:i,s:s,s:s,s:s,s:s,s:s,s:o,s:o}", "id", p->id, "name",
				      p->name, "title", p->title, "category", p->category, "origin",
				      p->origin, "worlds", w, "gpu_validated", vw, "vs_original", xw);
		if (json_path) {   /* what tools/test-gpu stamps on its records */
			const char *sha = validated_sha(newest, p);
			json_object_set_new(o, "files_sha256", sha ? json_string(sha) : json_null());
		}
		json_array_append_new(arr, o);
	}
	json_decref(newest);
	json_decref(crossed);
	int rc = 0;
	if (json_path && json_write_file(json_path, arr) < 0)
		rc = PKB_EXIT_INPUT;
	json_decref(arr);
	return rc;
}
