/*
 * cmd_roofline.c -- `pkb roofline ID [--hw NAME]`: the three lower bounds
 * of a problem instance on a machine (interconnect, HBM, compute), the bound
 * and its bottleneck (docs/ROOFLINE.md). Needs no GPU.
 */
#include "cmds.h"
#include "dtype.h"      /* defines: dtype_name */
#include "exitcode.h"
#include "job.h"        /* defines: job_opts, job_opt */
#include "problem.h"
#include "roofline.h"
#include "util.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char head[] =
"usage: pkb roofline ID|--all [--hw NAME] [options]\n"
"\n"
"The lower bounds of problem ID at these dims on machine NAME: bytes each rank\n"
"must receive over the interconnect, bytes it must move through HBM, FLOPs it\n"
"must do, each over the machine's peak; the bound is their max (overlapped),\n"
"and their sum is shown too (serial). docs/ROOFLINE.md. Needs no GPU. Here\n"
"--gpus defaults to the machine's GPU count.\n"
"\n";

enum { OPT_RL_HW = OPT_JOB_END, OPT_ALL };
static const struct opt roofline_opts[] = {
	{ OPT_RL_HW, "hw", "NAME", "hw/NAME.json, or local (from 'pkb calibrate'); default:\n"
				   "local if calibrated, else h100_8" },
	{ OPT_ALL, "all", NULL, "every problem, one line each" },
	OPTS_END,
};
static const struct opt *const tables[] = { roofline_opts, job_opts_dims, job_opts_json, NULL };

static void human(double v, const char *unit, char *buf, size_t n)
{
	const char *pre[] = { "", "K", "M", "G", "T", "P" };
	int k = 0;
	while (v >= 1000 && k < 5) {
		v /= 1000;
		k++;
	}
	snprintf(buf, n, "%.3g %s%s", v, pre[k], unit);
}

static json_t *bounds_json(const struct pkb_problem *p, const struct roofline *r)
{
	json_t *o = json_pack("{s:i,s:s,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:s,s:i,s:s}",
			      "id", p->id, "name", p->name, "net_bytes", r->net_bytes, "hbm_bytes",
			      r->hbm_bytes, "flops", r->flops, "t_net_us", r->t_net * 1e6,
			      "t_hbm_us", r->t_hbm * 1e6, "t_flop_us", r->t_flop * 1e6,
			      "bound_us", r->t_bound * 1e6, "serial_us", r->t_serial * 1e6,
			      "bottleneck", r->bottleneck, "rank", r->rank, "flop_kind",
			      r->flop_kind == PKB_FLOPS_TENSOR ? "tensor" : "vector");
	if (r->note)
		json_object_set_new(o, "assumes", json_string(r->note));
	return o;
}

static void print_one(const struct pkb_problem *p, const struct pkb_dims *d,
		      const struct hw_spec *h, const struct roofline *r)
{
	char a[32], b[32], c[32];
	printf("roofline  %03d_%s at W=%d M=%lld N=%lld %s on %s (%s)\n", p->id, p->name,
	       d->world, (long long)d->m, (long long)d->n, dtype_name(d->dtype), h->name, h->title);
	human(r->net_bytes, "B", a, sizeof a);
	human(h->net_bw, "B/s", b, sizeof b);
	printf("  interconnect  %-12s received  / %-12s = %10.3f us\n", a, b, r->t_net * 1e6);
	human(r->hbm_bytes, "B", a, sizeof a);
	human(h->hbm_bw, "B/s", b, sizeof b);
	printf("  HBM           %-12s moved     / %-12s = %10.3f us\n", a, b, r->t_hbm * 1e6);
	human(r->flops, "FLOP", a, sizeof a);
	human(r->peak_flops, "FLOP/s", b, sizeof b);
	snprintf(c, sizeof c, "(%s)", r->flop_kind == PKB_FLOPS_TENSOR ? "tensor" : "vector");
	printf("  compute       %-12s %-9s / %-12s = %10.3f us\n", a, c, b, r->t_flop * 1e6);
	printf("  bound         %.3f us, %s-bound (overlapped: the max); serial: %.3f us\n",
	       r->t_bound * 1e6, r->bottleneck, r->t_serial * 1e6);
	printf("  assumes       %s; figures of rank %d, the rank with the largest bound\n",
	       r->note ? r->note : "(no note)", r->rank);
}

int cmd_roofline(int argc, char **argv)
{
	struct job_opts o;
	job_opts_init(&o);
	const char *hw_name = NULL;
	int all = 0, c;
	struct opts_parser P;
	opts_init(&P, tables);
	while ((c = opts_next(&P, argc, argv)) != -1) {
		if (c == OPT_RL_HW) {
			hw_name = optarg;
		} else if (c == OPT_ALL) {
			all = 1;
		} else if (c == 'h') {
			opts_usage(stdout, head, tables, NULL);
			return 0;
		} else {
			int r = c == '?' ? 0 : job_opt(&o, c, optarg);
			if (r < 0)
				return PKB_EXIT_USAGE;
			if (!r) {
				opts_usage(stderr, head, tables, NULL);
				return PKB_EXIT_USAGE;
			}
		}
	}
	if (argc - optind != !all) {
		error(all ? "roofline --all takes no problem" : "roofline takes one problem (or --all)");
		return PKB_EXIT_USAGE;
	}
	if (!hw_name) {
		char *local = hw_local_path();
		hw_name = access(local, R_OK) == 0 ? "local" : "h100_8";
		free(local);
	}
	if (job_check_shape(&o) < 0)
		return PKB_EXIT_INPUT;
	struct hw_spec h;
	char err[600];
	if (hw_load(hw_name, &h, err, sizeof err) < 0) {
		error("%s", err);
		return PKB_EXIT_INPUT;
	}
	struct pkb_dims d = { .world = o.world ? o.world : h.gpus, .m = o.m, .n = o.n,
			      .dtype = o.dtype };
	json_t *arr = json_array();
	int rc = 0;
	if (all) {
		printf("%-4s %-36s %10s %10s %10s %10s %10s  %s\n", "id", "name", "net_us", "hbm_us",
		       "flop_us", "bound_us", "serial_us", "bottleneck");
		for (int i = 0; i < problem_count(); i++) {
			const struct pkb_problem *p = problem_at(i);
			struct roofline r;
			if (roofline_compute(p, &d, &h, &r, err, sizeof err) < 0) {
				printf("%03d  %-36s %s\n", p->id, p->name, err);
				continue;
			}
			printf("%03d  %-36s %10.3f %10.3f %10.3f %10.3f %10.3f  %s\n", p->id, p->name,
			       r.t_net * 1e6, r.t_hbm * 1e6, r.t_flop * 1e6, r.t_bound * 1e6,
			       r.t_serial * 1e6, r.bottleneck);
			json_array_append_new(arr, bounds_json(p, &r));
		}
	} else {
		const struct pkb_problem *p = problem_find(argv[optind]);
		if (!p) {
			error("no problem '%s'", argv[optind]);
			json_decref(arr);
			return PKB_EXIT_INPUT;
		}
		struct roofline r;
		if (roofline_compute(p, &d, &h, &r, err, sizeof err) < 0) {
			error("%s", err);
			json_decref(arr);
			return PKB_EXIT_INPUT;
		}
		print_one(p, &d, &h, &r);
		json_array_append_new(arr, bounds_json(p, &r));
	}
	if (o.json_path) {
		json_t *doc = json_pack("{s:s,s:s,s:i,s:I,s:I,s:s,s:o}", "hw", h.name, "hw_file",
					h.path, "world", d.world, "m", (json_int_t)d.m, "n",
					(json_int_t)d.n, "dtype", dtype_name(d.dtype), "bounds", arr);
		if (json_write_file(o.json_path, doc) < 0)
			rc = PKB_EXIT_INPUT;
		json_decref(doc);
	} else {
		json_decref(arr);
	}
	return rc;
}
