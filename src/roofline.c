/*
 * roofline.c -- see roofline.h.
 */
#include "roofline.h"
#include "build.h"     /* defines: build_cache_dir */
#include "problem.h"   /* defines: problem_describe, tensor_desc_bytes */
#include "util.h"

#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *hw_local_path(void)
{
	return xstrfmt("%s/hw/local.json", build_cache_dir());
}

double hw_local_floor(const char *device, int world)
{
	char *path = hw_local_path();
	json_t *o = json_load_file(path, 0, NULL);
	free(path);
	json_t *m = json_object_get(o, "measured");
	const char *dev = json_string_value(json_object_get(m, "device"));
	double us = json_number_value(json_object_get(m, "empty_call_us"));
	double gpus = json_number_value(json_object_get(m, "gpus"));
	double floor_s = dev && device && !strcmp(dev, device) && gpus >= world && us > 0
				 ? us * 1e-6 : 0;
	json_decref(o);
	return floor_s;
}

void hw_names(char *buf, size_t n)
{
	char *dir = xstrfmt("%s/hw", pkb_root());
	size_t off = 0;
	buf[0] = 0;
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l > 5 && !strcmp(e->d_name + l - 5, ".json") && off < n)
			off += (size_t)snprintf(buf + off, n - off, "%s%.*s", off ? " " : "",
						(int)(l - 5), e->d_name);
	}
	if (d)
		closedir(d);
	if (off < n)
		snprintf(buf + off, n - off, "%slocal", off ? " " : "");
	free(dir);
}

static int positive(json_t *o, const char *key, double *out)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_number(v) || json_number_value(v) <= 0)
		return -1;
	*out = json_number_value(v);
	return 0;
}

int hw_load(const char *name, struct hw_spec *h, char *err, size_t n)
{
	memset(h, 0, sizeof *h);
	for (const char *c = name; *c; c++)
		if (!(*c == '_' || *c == '-' || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9'))) {
			snprintf(err, n, "'%s' is not a hardware name", name);
			return -1;
		}
	char *path = !strcmp(name, "local") ? hw_local_path() : xstrfmt("%s/hw/%s.json", pkb_root(), name);
	int missing = access(path, R_OK) != 0, r = -1;
	if (missing && !strcmp(name, "local")) {
		snprintf(err, n, "no calibration of this machine (%s): run 'pkb calibrate'", path);
	} else if (missing) {
		char names[512];
		hw_names(names, sizeof names);
		snprintf(err, n, "no hardware '%s' (%s); known: %s", name, path, names);
	} else {
		r = hw_load_file(path, h, err, n);
	}
	free(path);
	return r;
}

int hw_load_file(const char *path, struct hw_spec *h, char *err, size_t n)
{
	memset(h, 0, sizeof *h);
	snprintf(h->path, sizeof h->path, "%s", path);
	json_error_t je;
	json_t *o = json_load_file(path, 0, &je);
	if (!o) {
		snprintf(err, n, "%s: line %d: %s", path, je.line, je.text);
		return -1;
	}
	json_t *f = json_object_get(o, "flops");
	/* a misspelt key ("nlt_bw") would leave its peak silently unset */
	static const char *known[] = { "name", "title", "gpus", "sm_count", "l2_bytes", "hbm_bytes",
				       "hbm_bw", "net_bw", "net_bw_source", "flops", "link",
				       "topology", "source", "measured", NULL };
	static const char *known_flops[] = { "bf16", "fp16", "fp8", "tf32", "fp32", NULL };
	const char *unknown = NULL, *key;
	json_t *v;
	json_object_foreach(o, key, v) {
		int i = 0;
		while (known[i] && strcmp(known[i], key))
			i++;
		if (!known[i] && !unknown)
			unknown = key;
	}
	json_object_foreach(json_is_object(f) ? f : NULL, key, v) {
		int i = 0;
		while (known_flops[i] && strcmp(known_flops[i], key))
			i++;
		if (!known_flops[i] && !unknown)
			unknown = key;
	}
	if (unknown) {
		snprintf(err, n, "%s: unknown key '%s' (known: gpus sm_count l2_bytes hbm_bytes hbm_bw "
				 "net_bw flops.{bf16,fp16,fp8,tf32,fp32} name title link topology source)",
			 h->path, unknown);
		json_decref(o);
		return -1;
	}
	double gpus = 0, sms = 0;
	const char *bad = positive(o, "gpus", &gpus) ? "gpus"
			  : positive(o, "sm_count", &sms) ? "sm_count"
			  : positive(o, "l2_bytes", &h->l2_bytes) ? "l2_bytes"
			  : positive(o, "hbm_bytes", &h->hbm_bytes) ? "hbm_bytes"
			  : positive(o, "hbm_bw", &h->hbm_bw) ? "hbm_bw"
			  /* net_bw may be absent: calibrated on one GPU, not measured */
			  : json_object_get(o, "net_bw") && !json_is_null(json_object_get(o, "net_bw"))
				    && positive(o, "net_bw", &h->net_bw) ? "net_bw"
			  : positive(f, "bf16", &h->flops_bf16) ? "flops.bf16"
			  : positive(f, "fp16", &h->flops_fp16) ? "flops.fp16"
			  : positive(f, "fp8", &h->flops_fp8) ? "flops.fp8"
			  : positive(f, "tf32", &h->flops_tf32) ? "flops.tf32"
			  : positive(f, "fp32", &h->flops_fp32) ? "flops.fp32" : NULL;
	if (bad) {
		snprintf(err, n, "%s: '%s' is missing or not a positive number", h->path, bad);
		json_decref(o);
		return -1;
	}
	/* counts: whole numbers of a sane size (1e300 GPUs would not fit an int) */
	bad = gpus != floor(gpus) || gpus > 1 << 20 ? "gpus"
	      : sms != floor(sms) || sms > 1 << 20 ? "sm_count" : NULL;
	if (bad) {
		snprintf(err, n, "%s: '%s' is not a whole number up to 2^20", h->path, bad);
		json_decref(o);
		return -1;
	}
	h->gpus = (int)gpus;
	h->sm_count = (int)sms;
	const char *s = json_string_value(json_object_get(o, "name"));
	snprintf(h->name, sizeof h->name, "%s", s ? s : "unnamed");
	s = json_string_value(json_object_get(o, "title"));
	snprintf(h->title, sizeof h->title, "%s", s ? s : "");
	json_decref(o);
	return 0;
}

static double peak(const struct hw_spec *h, enum pkb_flop_kind k, pkb_dtype t)
{
	if (k == PKB_FLOPS_VECTOR)
		return h->flops_fp32;
	switch (t) {
	case PKB_BF16: return h->flops_bf16;
	case PKB_FP16: return h->flops_fp16;
	case PKB_FP8_E4M3: case PKB_FP8_E5M2: return h->flops_fp8;
	default: return h->flops_fp32;   /* fp32 matmul without TF32 */
	}
}

int roofline_compute(const struct pkb_problem *p, const struct pkb_dims *d,
		     const struct hw_spec *h, struct roofline *r, char *err, size_t n)
{
	memset(r, 0, sizeof *r);
	if (!p->cost) {
		snprintf(err, n, "problem %03d_%s has no cost model yet", p->id, p->name);
		return -1;
	}
	if (d->world > h->gpus) {
		snprintf(err, n, "W = %d is more GPUs than %s has (%d)", d->world, h->name, h->gpus);
		return -1;
	}
	r->t_bound = -1;
	for (int rank = 0; rank < d->world; rank++) {
		struct pkb_dims dr = *d;
		dr.rank = rank;
		struct pkb_io *io = calloc(1, sizeof *io);
		if (!io || problem_describe(p, &dr, io) < 0) {
			snprintf(err, n, "%s", io ? io->err : "out of memory");
			free(io);
			return -1;
		}
		struct pkb_cost c = { .hbm_bytes = -1 };
		p->cost(&dr, &c);
		if (c.hbm_bytes < 0) {
			/* every input is read from HBM (the harness rotates them
			 * through more than 3x L2); outputs are written, but up to
			 * an L2's worth can still sit in L2 when the call ends */
			double out = 0;
			c.hbm_bytes = 0;
			for (int i = 0; i < io->n_in; i++)
				c.hbm_bytes += (double)tensor_desc_bytes(&io->in[i]);
			for (int i = 0; i < io->n_out; i++)
				out += (double)tensor_desc_bytes(&io->out[i]);
			c.hbm_bytes += out > h->l2_bytes ? out - h->l2_bytes : 0;
		}
		free(io);
		if (!(c.net_bytes >= 0 && c.hbm_bytes >= 0 && c.flops >= 0) ||
		    !isfinite(c.net_bytes + c.hbm_bytes + c.flops)) {
			snprintf(err, n, "problem %03d_%s: its cost model gave a negative or "
				 "non-finite value at rank %d", p->id, p->name, rank);
			return -1;
		}
		if (c.net_bytes > 0 && !(h->net_bw > 0)) {
			snprintf(err, n, "hardware '%s' has no interconnect bandwidth (calibrated on "
				 "one GPU: not measured); pick another with --hw, or run 'pkb "
				 "calibrate' on two or more GPUs", h->name);
			return -1;
		}
		double pk = peak(h, c.flop_kind, d->dtype);
		double tn = c.net_bytes <= 0 ? 0 : c.net_bytes / h->net_bw, th = c.hbm_bytes / h->hbm_bw, tf = c.flops / pk;
		double tb = fmax(tn, fmax(th, tf));
		r->t_net = fmax(r->t_net, tn);
		r->t_hbm = fmax(r->t_hbm, th);
		r->t_flop = fmax(r->t_flop, tf);
		r->t_serial = fmax(r->t_serial, tn + th + tf);
		if (tb > r->t_bound) {
			r->t_bound = tb;
			r->rank = rank;
			r->net_bytes = c.net_bytes;
			r->hbm_bytes = c.hbm_bytes;
			r->flops = c.flops;
			r->flop_kind = c.flop_kind;
			r->peak_flops = pk;
			r->note = c.note;
			r->bottleneck = tb == tn ? "interconnect" : tb == th ? "HBM" : "compute";
		}
	}
	return 0;
}

double sol_score(double t, double t_ref, double t_sol)
{
	if (!(t_ref > t_sol) || !(t >= t_sol))
		return NAN;
	return 1.0 / (1.0 + (t - t_sol) / (t_ref - t_sol));
}

int hw_for_device(const char *asked, const char *device, int world, struct hw_spec *h, char *err,
		  size_t n)
{
	if (asked)
		return hw_load(asked, h, err, n);
	/* the nominal machine of this GPU's family, big enough for W */
	const char *family = !device ? NULL : strstr(device, "H100") ? "h100"
			     : strstr(device, "H200") ? "h200" : strstr(device, "B200") ? "b200"
			     : NULL;
	if (!family) {
		snprintf(err, n, "no hardware description for '%s' (name one with --hw)",
			 device ? device : "an unknown GPU");
		return -1;
	}
	/* the smallest nominal machine of the family that has W GPUs */
	static const int sizes[] = { 4, 8, 72 };
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
		char name[32];
		snprintf(name, sizeof name, "%s_%d", family, sizes[i]);
		if (sizes[i] >= world && hw_load(name, h, err, n) == 0)
			return 0;
	}
	snprintf(err, n, "no nominal %s machine with %d GPUs (name one with --hw)", family, world);
	return -1;
}
