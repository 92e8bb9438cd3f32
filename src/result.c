/*
 * result.c -- see result.h. One pass over eval's record: each field taken
 * by a typed getter that records the first one of the wrong type, with its
 * path (`trial_records[2].outputs[0].n_bad`), so that the caller says which.
 */
#include "result.h"
#include "util.h"      /* defines: xcalloc */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the reader's state: where it is, and the first error */
struct rd {
	char *err;
	size_t n;
	int bad;
	char at[160];      /* the path of the object being read, "" at the top */
};

static json_t *field(struct rd *d, json_t *o, const char *key, int (*is)(const json_t *),
		     const char *what)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return NULL;
	if (is(v))
		return v;
	if (!d->bad)
		snprintf(d->err, d->n, "'%s%s%s' is not %s", d->at, *d->at ? "." : "", key, what);
	d->bad = 1;
	return NULL;
}

static int is_string(const json_t *v) { return json_is_string(v); }
static int is_number(const json_t *v) { return json_is_number(v); }
static int is_integer(const json_t *v) { return json_is_integer(v); }
static int is_boolean(const json_t *v) { return json_is_boolean(v); }
static int is_object(const json_t *v) { return json_is_object(v); }
static int is_array(const json_t *v) { return json_is_array(v); }

static const char *str(struct rd *d, json_t *o, const char *key)
{
	return json_string_value(field(d, o, key, is_string, "a string"));
}

static double num(struct rd *d, json_t *o, const char *key)
{
	json_t *v = field(d, o, key, is_number, "a number");
	return v ? json_number_value(v) : NAN;
}

static long long integer(struct rd *d, json_t *o, const char *key, long long absent)
{
	json_t *v = field(d, o, key, is_integer, "an integer");
	return v ? (long long)json_integer_value(v) : absent;
}

static int boolean(struct rd *d, json_t *o, const char *key)
{
	return json_is_true(field(d, o, key, is_boolean, "true or false"));
}

static json_t *object(struct rd *d, json_t *o, const char *key)
{
	return field(d, o, key, is_object, "an object");
}

static json_t *array(struct rd *d, json_t *o, const char *key)
{
	return field(d, o, key, is_array, "an array");
}

/* enter o's member (key, or key[i] when i >= 0); leave restores `at` */
static size_t enter(struct rd *d, const char *key, long i)
{
	size_t len = strlen(d->at);
	if (i >= 0)
		snprintf(d->at + len, sizeof d->at - len, "%s%s[%ld]", len ? "." : "", key, i);
	else
		snprintf(d->at + len, sizeof d->at - len, "%s%s", len ? "." : "", key);
	return len;
}

static void leave(struct rd *d, size_t len)
{
	d->at[len] = 0;
}

static void read_perf(struct rd *d, json_t *rec, const char *key, struct result_perf *p)
{
	json_t *o = object(d, rec, key);
	if (!o)
		return;
	size_t at = enter(d, key, -1);
	p->present = 1;
	p->n = integer(d, o, "n", 0);
	p->median_ms = num(d, o, "median_ms");
	p->mean_ms = num(d, o, "mean_ms");
	p->skew_ms = num(d, o, "skew_ms");
	json_t *rm = array(d, o, "rank_median_ms"), *x;
	size_t i;
	p->rank_median_ms = xcalloc(json_array_size(rm) + 1, sizeof *p->rank_median_ms);
	json_array_foreach(rm, i, x) {
		if (!json_is_number(x) && !d->bad) {
			snprintf(d->err, d->n, "'%s.rank_median_ms[%zu]' is not a number", d->at, i);
			d->bad = 1;
		}
		p->rank_median_ms[p->n_rank_median++] = json_number_value(x);
	}
	leave(d, at);
}

static void read_roofline(struct rd *d, json_t *rec, struct result_roofline *r)
{
	json_t *o = object(d, rec, "roofline");
	if (!o)
		return;
	size_t at = enter(d, "roofline", -1);
	r->present = 1;
	r->error = str(d, o, "error");
	r->hw = str(d, o, "hw");
	r->bottleneck = str(d, o, "bottleneck");
	r->bound_us = num(d, o, "bound_us");
	r->fraction = num(d, o, "fraction");
	r->sol_score = num(d, o, "sol_score");
	leave(d, at);
}

/* a compared value: a number, or a string ("nan", "inf") */
static void value(struct rd *d, json_t *o, const char *key, double *x, const char **s)
{
	json_t *v = json_object_get(o, key);
	if (json_is_string(v))
		*s = json_string_value(v);
	else
		*x = num(d, o, key);
}

static void read_worst(struct rd *d, json_t *out, struct result_worst *w)
{
	json_t *o = object(d, out, "worst");
	w->ref = w->cand = w->bound = NAN;
	if (!o)
		return;
	size_t at = enter(d, "worst", -1);
	w->present = 1;
	w->index = integer(d, o, "index", -1);
	value(d, o, "ref", &w->ref, &w->ref_str);
	value(d, o, "cand", &w->cand, &w->cand_str);
	w->bound = num(d, o, "bound");
	json_t *co = array(d, o, "coords"), *x;
	size_t i;
	json_array_foreach(co, i, x) {
		if ((!json_is_integer(x) || i >= RESULT_MAX_COORDS) && !d->bad) {
			snprintf(d->err, d->n, "'%s.coords[%zu]' is not an index", d->at, i);
			d->bad = 1;
		}
		if (i < RESULT_MAX_COORDS)
			w->coords[w->n_coords++] = (long long)json_integer_value(x);
	}
	leave(d, at);
}

static void read_output(struct rd *d, json_t *o, struct result_output *out)
{
	out->name = str(d, o, "name");
	out->look = str(d, o, "look");
	out->ok = boolean(d, o, "ok");
	out->l2_failed = boolean(d, o, "l2_failed");
	out->n = integer(d, o, "n", 0);
	out->n_bad = integer(d, o, "n_bad", 0);
	out->n_bad_zero = integer(d, o, "n_bad_zero", 0);
	out->l2_rel = num(d, o, "l2_rel");
	out->l2_limit = num(d, o, "l2_limit");
	read_worst(d, o, &out->worst);
}

/* each element of rec's array `key` must be an object: fn reads it */
static json_t *objects(struct rd *d, json_t *a, const char *key)
{
	json_t *x;
	size_t i;
	json_array_foreach(a, i, x)
		if (!json_is_object(x) && !d->bad) {
			snprintf(d->err, d->n, "'%s%s%s[%zu]' is not an object", d->at,
				 *d->at ? "." : "", key, i);
			d->bad = 1;
		}
	return d->bad ? NULL : a;
}

static void read_trials(struct rd *d, json_t *rec, struct result *r)
{
	json_t *a = objects(d, array(d, rec, "trial_records"), "trial_records"), *t;
	size_t i;
	r->trials = xcalloc(json_array_size(a) + 1, sizeof *r->trials);
	json_array_foreach(a, i, t) {
		struct result_trial *tr = &r->trials[r->n_trials++];
		size_t at = enter(d, "trial_records", (long)i);
		tr->trial = (int)integer(d, t, "trial", -1);
		tr->rank = (int)integer(d, t, "rank", -1);
		tr->ok = boolean(d, t, "ok");
		json_t *outs = objects(d, array(d, t, "outputs"), "outputs"), *o;
		size_t k;
		tr->out = xcalloc(json_array_size(outs) + 1, sizeof *tr->out);
		json_array_foreach(outs, k, o) {
			size_t at2 = enter(d, "outputs", (long)k);
			read_output(d, o, &tr->out[tr->n_out++]);
			leave(d, at2);
		}
		leave(d, at);
	}
}

static void read_ranks(struct rd *d, json_t *rec, struct result *r)
{
	json_t *launch = object(d, rec, "launch");
	size_t at = enter(d, "launch", -1);
	json_t *a = objects(d, array(d, launch, "ranks"), "ranks"), *x;
	size_t i;
	r->ranks = xcalloc(json_array_size(a) + 1, sizeof *r->ranks);
	json_array_foreach(a, i, x) {
		struct result_rank *k = &r->ranks[r->n_ranks++];
		size_t at2 = enter(d, "ranks", (long)i);
		k->rank = (int)integer(d, x, "rank", -1);
		k->phase = str(d, x, "phase");
		k->message = str(d, x, "message");
		k->done = boolean(d, x, "done");
		k->failed = boolean(d, x, "failed");
		leave(d, at2);
	}
	leave(d, at);
}

void result_none(struct result *r)
{
	memset(r, 0, sizeof *r);
	r->exit_code = -1;
	r->m = r->n = -1;
	r->speedup = NAN;
	r->cand.median_ms = r->cand.mean_ms = r->cand.skew_ms = NAN;
	r->ref = r->cand;
	r->roofline.bound_us = r->roofline.fraction = r->roofline.sol_score = NAN;
}

int result_read(json_t *rec, struct result *r, char *err, size_t n)
{
	struct rd d = { .err = err, .n = n };
	result_none(r);
	if (!json_is_object(rec)) {
		snprintf(err, n, "not a JSON object");
		return -1;
	}
	r->outcome = str(&d, rec, "outcome");
	if (!r->outcome && !d.bad) {
		snprintf(err, n, "'outcome' missing");
		d.bad = 1;
	}
	r->exit_code = (int)integer(&d, rec, "exit_code", -1);
	r->message = str(&d, rec, "message");
	r->dtype = str(&d, rec, "dtype");
	r->nvcc = str(&d, rec, "nvcc");
	r->pkb_version = str(&d, rec, "pkb_version");
	r->date = str(&d, rec, "date");
	r->compiler_output = str(&d, rec, "compiler_output");
	r->m = integer(&d, rec, "m", -1);
	r->n = integer(&d, rec, "n", -1);
	json_t *tm = object(&d, rec, "timing");
	size_t at = enter(&d, "timing", -1);
	r->timing_mode = str(&d, tm, "mode");
	r->device = str(&d, tm, "device");
	leave(&d, at);
	json_t *hw = object(&d, rec, "hardware");
	at = enter(&d, "hardware", -1);
	r->driver = str(&d, hw, "driver");
	r->cuda_runtime = str(&d, hw, "cuda_runtime");
	r->nccl = str(&d, hw, "nccl");
	leave(&d, at);
	r->speedup = num(&d, rec, "speedup");
	read_perf(&d, rec, "candidate_perf", &r->cand);
	read_perf(&d, rec, "reference_perf", &r->ref);
	read_roofline(&d, rec, &r->roofline);
	read_trials(&d, rec, r);
	read_ranks(&d, rec, r);
	if (d.bad) {
		result_free(r);
		return -1;
	}
	return 0;
}

void result_free(struct result *r)
{
	for (int i = 0; i < r->n_trials; i++)
		free(r->trials[i].out);
	free(r->trials);
	free(r->ranks);
	free(r->cand.rank_median_ms);
	free(r->ref.rank_median_ms);
	result_none(r);
}
