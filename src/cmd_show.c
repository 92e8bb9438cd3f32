/*
 * cmd_show.c -- `pkb show ID`: the task statement, and every input and
 * output with its shape and dtype at the given W, M, N and dtype.
 */
#include "cmds.h"
#include "dtype.h"
#include "exitcode.h"
#include "job.h"
#include "problem.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char head[] =
"usage: pkb show ID [options]\n"
"\n"
"Show problem ID: its task statement, then its inputs and outputs at these dims\n"
"(defaults W=4, M=N=1024, bf16) and where its reference lives.\n"
"\n";

enum { OPT_BRIEF = OPT_JOB_END };
static const struct opt show_opts[] = {
	{ OPT_BRIEF, "brief", NULL, "the inputs and outputs only, not the task statement" },
	OPTS_END,
};
static const struct opt *const tables[] = { show_opts, job_opts_dims, job_opts_json, NULL };

static const char *dist_name(const struct pkb_dist *d, char *buf, size_t n)
{
	switch (d->kind) {
	case PKB_DIST_NORMAL: snprintf(buf, n, "normal(%g, %g)", d->a, d->b); break;
	case PKB_DIST_UNIFORM: snprintf(buf, n, "uniform[%g, %g)", d->a, d->b); break;
	case PKB_DIST_RANDINT: snprintf(buf, n, "randint[%g, %g)", d->a, d->b); break;
	default: snprintf(buf, n, "structured (problem-generated)");
	}
	return buf;
}

int cmd_show(int argc, char **argv)
{
	struct job_opts o;
	job_opts_init(&o);
	o.world = 4;
	int brief = 0, c;
	struct opts_parser P;
	opts_init(&P, tables);
	while ((c = opts_next(&P, argc, argv)) != -1) {
		int r = job_opt(&o, c, optarg);
		if (r < 0)
			return PKB_EXIT_USAGE;
		if (r)
			continue;
		if (c == OPT_BRIEF) {
			brief = 1;
		} else if (c == 'h') {
			opts_usage(stdout, head, tables, NULL);
			return 0;
		} else {
			opts_usage(stderr, head, tables, NULL);
			return PKB_EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		error("show takes one problem");
		return PKB_EXIT_USAGE;
	}
	o.p = problem_find(argv[optind]);
	if (!o.p) {
		error("no problem '%s'", argv[optind]);
		hint("'pkb list' shows the problems");
		return PKB_EXIT_INPUT;
	}
	struct pkb_io io;
	if (job_resolve(&o, &io) < 0)
		return PKB_EXIT_INPUT;
	char *dir = problem_dir(o.p);
	if (!brief) {
		char *readme = xstrfmt("%s/README.md", dir);
		char *text = read_file(readme, NULL);
		if (text)
			printf("%s\n", text);
		else
			warning("no task statement at '%s'", readme);
		free(text);
		free(readme);
	}
	char w[128];
	problem_worlds_str(o.p, w, sizeof w);
	printf("problem   %03d_%s: %s\n", o.p->id, o.p->name, o.p->title);
	printf("category  %s; origin: %s; world sizes: %s\n", o.p->category, o.p->origin, w);
	printf("instance  W=%d M=%lld N=%lld dtype=%s (shapes of rank 0)\n", o.world, o.m, o.n,
	       dtype_name(o.dtype));
	json_t *jin = json_array(), *jout = json_array(), *jpar = json_array();
	for (int k = 0; k < 2; k++) {
		const struct pkb_tensor_desc *arr = k ? io.out : io.in;
		int cnt = k ? io.n_out : io.n_in;
		for (int i = 0; i < cnt; i++) {
			char shape[128], dist[64], tol[48];
			tensor_desc_shape_str(&arr[i], shape, sizeof shape);
			snprintf(tol, sizeof tol, arr[i].tol.exact ? "exact"
				 : arr[i].tol.scale_axis ? "tolerance, its scale per index of dim %d"
				 : "tolerance", arr[i].tol.scale_axis - 1);
			printf("%-8s  %-20s %-10s %-24s %s\n", k ? "output" : "input", arr[i].name,
			       dtype_name(arr[i].dtype), shape,
			       k ? tol : dist_name(&arr[i].dist, dist, sizeof dist));
			json_t *sh = json_array();
			for (int d = 0; d < arr[i].ndim; d++)
				json_array_append_new(sh, json_integer(arr[i].shape[d]));
			json_array_append_new(k ? jout : jin,
					      json_pack("{s:s,s:s,s:o}", "name", arr[i].name, "dtype",
							dtype_name(arr[i].dtype), "shape", sh));
		}
	}
	for (int i = 0; i < io.n_params; i++) {
		printf("%-8s  %-20s %g\n", "param", io.params[i].name, io.params[i].value);
		json_array_append_new(jpar, json_pack("{s:s,s:f}", "name", io.params[i].name,
						      "value", io.params[i].value));
	}
	printf("reference %s/reference.cu\n", dir);
	if (o.json_path) {
		json_t *rec = json_pack("{s:i,s:s,s:s,s:s,s:i,s:I,s:I,s:s,s:o,s:o,s:o,s:s}", "id",
					o.p->id, "name", o.p->name, "category", o.p->category,
					"worlds", w, "world", o.world, "m", (json_int_t)o.m, "n",
					(json_int_t)o.n, "dtype", dtype_name(o.dtype), "inputs", jin, "outputs",
					jout, "params", jpar, "folder", dir);
		json_write_file(o.json_path, rec);
		json_decref(rec);
	} else {
		json_decref(jin);
		json_decref(jout);
		json_decref(jpar);
	}
	free(dir);
	return 0;
}
