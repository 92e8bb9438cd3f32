/*
 * wire.c -- see wire.h. Strings are copied into the struct's arrays (a
 * longer one is refused, not cut: a cut path would load another file), so a
 * wire_job outlives the JSON it came from.
 */
#include "wire.h"
#include "dtype.h"     /* defines: dtype_name, dtype_parse */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const mode_names[WIRE_MODE_COUNT] = { [WIRE_EVAL] = "eval",
							  [WIRE_RUN] = "run" };

const char *wire_mode_name(enum wire_mode m)
{
	return (unsigned)m < WIRE_MODE_COUNT ? mode_names[m] : "?";
}

void wire_job_init(struct wire_job *j)
{
	memset(j, 0, sizeof *j);
	j->mode = WIRE_EVAL;
	j->dtype = PKB_BF16;
	j->perf.mode = PERF_WARM;
	j->atol = j->rtol = -1;
	j->sandbox = 1;
	j->rank = j->world = j->local_rank = j->host_first = j->host_size = -1;
}

json_t *wire_job_pack(const struct wire_job *j)
{
	json_t *o = json_pack("{s:s,s:s,s:I,s:I,s:s,s:I,s:i,s:i,s:i}", "mode",
			      wire_mode_name(j->mode), "problem", j->problem, "m", (json_int_t)j->m,
			      "n", (json_int_t)j->n, "dtype", dtype_name(j->dtype), "seed",
			      (json_int_t)j->seed, "trials", j->trials, "trial0", j->trial0,
			      "device_timeout_ms", j->device_timeout_ms);
	if (j->seed_drawn)
		json_object_set_new(o, "seed_drawn", json_true());
	if (j->save_dir[0])
		json_object_set_new(o, "save_dir", json_string(j->save_dir));
	if (j->ref_cache[0])
		json_object_set_new(o, "ref_cache", json_string(j->ref_cache));
	json_object_set_new(o, "sandbox", json_boolean(j->sandbox));
	if (j->atol >= 0)
		json_object_set_new(o, "atol", json_real(j->atol));
	if (j->rtol >= 0)
		json_object_set_new(o, "rtol", json_real(j->rtol));
	json_t *arr = json_array();
	for (int i = 0; i < j->n_sol; i++)
		json_array_append_new(arr, json_pack("{s:s,s:s,s:b}", "role", j->sol[i].role,
						     "so", j->sol[i].so, "nccl", j->sol[i].nccl));
	json_object_set_new(o, "solutions", arr);
	if (j->has_perf)
		json_object_set_new(o, "perf", json_pack("{s:i,s:i,s:i,s:s}", "warmup",
							 j->perf.warmup, "iters", j->perf.iters,
							 "block", j->perf.block, "mode",
							 perf_mode_name(j->perf.mode)));
	if (j->rank >= 0)
		wire_job_address(o, j->rank, j->world, j->local_rank, j->host_first,
				 j->host_size);
	return o;
}

void wire_job_address(json_t *job, int rank, int world, int local_rank, int host_first,
		      int host_size)
{
	json_object_set_new(job, "rank", json_integer(rank));
	json_object_set_new(job, "world", json_integer(world));
	json_object_set_new(job, "local_rank", json_integer(local_rank));
	json_object_set_new(job, "host_first", json_integer(host_first));
	json_object_set_new(job, "host_size", json_integer(host_size));
}

/* copy a string that must fit */
static int take(char *dst, size_t cap, const char *src, const char *key, char *err, size_t n)
{
	size_t len = strlen(src);
	if (len >= cap) {
		snprintf(err, n, "'%s' is %zu bytes, at most %zu", key, len, cap - 1);
		return -1;
	}
	memcpy(dst, src, len + 1);
	return 0;
}

static int fits_int(json_int_t v) { return v >= -2147483647 - 1 && v <= 2147483647; }

/* the type names of messages */
static const char *type_name(int t)
{
	switch (t) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a number";
	case JSON_TRUE: case JSON_FALSE: return "true or false";
	default: return "null";
	}
}

/* obj[key] of type t (JSON_TRUE: a boolean; JSON_REAL: any number): the
 * value, NULL when absent and optional; sets *bad with a message naming
 * where.key when absent and required, or of another type */
static json_t *want(json_t *obj, const char *where, const char *key, int t, int required,
		    int *bad, char *err, size_t n)
{
	if (*bad)
		return NULL;
	json_t *v = json_object_get(obj, key);
	if (!v) {
		if (required) {
			snprintf(err, n, "%s: no '%s'", where, key);
			*bad = 1;
		}
		return NULL;
	}
	int ok = t == JSON_TRUE ? json_is_boolean(v) : t == JSON_REAL ? json_is_number(v)
		 : (int)json_typeof(v) == t;
	if (!ok) {
		snprintf(err, n, "%s: '%s' is %s, not %s", where, key, type_name(json_typeof(v)),
			 type_name(t));
		*bad = 1;
		return NULL;
	}
	return v;
}

#define STR(obj, where, key, dst, req) do { \
	json_t *v_ = want(obj, where, key, JSON_STRING, req, &bad, err, n); \
	if (v_ && take(dst, sizeof dst, json_string_value(v_), key, err, n) < 0) \
		return -1; \
} while (0)
#define INT(obj, where, key, req) json_integer_value(want(obj, where, key, JSON_INTEGER, req, &bad, err, n))

/* obj[key], a string that must be one of the names name(0 .. count - 1):
 * its index, or -1 with a message that lists them */
static int named(json_t *obj, const char *where, const char *key, const char *(*name)(int),
		 int count, int *bad, char *err, size_t n)
{
	json_t *v = want(obj, where, key, JSON_STRING, 1, bad, err, n);
	if (!v)
		return -1;
	const char *s = json_string_value(v);
	for (int i = 0; i < count; i++)
		if (!strcmp(s, name(i)))
			return i;
	size_t off = (size_t)snprintf(err, n, "%s: '%s' is '%.40s', not one of", where, key, s);
	for (int i = 0; i < count && off < n; i++)
		off += (size_t)snprintf(err + off, n - off, " %s", name(i));
	*bad = 1;
	return -1;
}

/* the name tables as named() takes them */
static const char *mode_name_(int i) { return wire_mode_name((enum wire_mode)i); }
static const char *dtype_name_(int i) { return dtype_name((pkb_dtype)i); }
static const char *perf_mode_name_(int i) { return perf_mode_name((enum perf_mode)i); }

int wire_job_unpack(json_t *in, struct wire_job *j, int addressed, char *err, size_t n)
{
	int bad = 0;
	wire_job_init(j);
	if (!json_is_object(in)) {
		snprintf(err, n, "the job is not a JSON object");
		return -1;
	}
	int mode = named(in, "job", "mode", mode_name_, WIRE_MODE_COUNT, &bad, err, n);
	STR(in, "job", "problem", j->problem, 1);
	j->m = INT(in, "job", "m", 1);
	j->n = INT(in, "job", "n", 1);
	int dtype = named(in, "job", "dtype", dtype_name_, PKB_DTYPE_COUNT, &bad, err, n);
	j->seed = INT(in, "job", "seed", 1);
	json_int_t trials = INT(in, "job", "trials", 1), trial0 = INT(in, "job", "trial0", 1);
	json_int_t dt = INT(in, "job", "device_timeout_ms", 1);
	STR(in, "job", "save_dir", j->save_dir, 0);
	STR(in, "job", "ref_cache", j->ref_cache, 0);
	json_t *atol = want(in, "job", "atol", JSON_REAL, 0, &bad, err, n);
	json_t *rtol = want(in, "job", "rtol", JSON_REAL, 0, &bad, err, n);
	json_t *sols = want(in, "job", "solutions", JSON_ARRAY, 1, &bad, err, n);
	json_t *perf = want(in, "job", "perf", JSON_OBJECT, 0, &bad, err, n);
	json_t *sandbox = want(in, "job", "sandbox", JSON_TRUE, 0, &bad, err, n);
	json_t *drawn = want(in, "job", "seed_drawn", JSON_TRUE, 0, &bad, err, n);
	if (bad)
		return -1;
	j->mode = (enum wire_mode)mode;
	j->dtype = (pkb_dtype)dtype;
	if (!fits_int(trials) || !fits_int(trial0) || !fits_int(dt) || trials < 0 || dt < 0) {
		snprintf(err, n, "job: trials, trial0 or device_timeout_ms out of range");
		return -1;
	}
	j->trials = (int)trials;
	j->seed_drawn = json_is_true(drawn);
	j->sandbox = !sandbox || json_is_true(sandbox);   /* absent: sandboxed */
	j->trial0 = (int)trial0;
	j->device_timeout_ms = (int)dt;
	j->atol = atol ? json_number_value(atol) : -1;
	j->rtol = rtol ? json_number_value(rtol) : -1;
	if (json_array_size(sols) < 1 || json_array_size(sols) > WIRE_MAX_SOL) {
		snprintf(err, n, "job: 'solutions' is an array of 1 to %d", WIRE_MAX_SOL);
		return -1;
	}
	j->n_sol = (int)json_array_size(sols);
	for (int i = 0; i < j->n_sol; i++) {
		json_t *s = json_array_get(sols, (size_t)i);
		char where[32];
		snprintf(where, sizeof where, "job: solution %d", i);
		if (!json_is_object(s)) {
			snprintf(err, n, "%s is not an object", where);
			return -1;
		}
		STR(s, where, "role", j->sol[i].role, 1);
		STR(s, where, "so", j->sol[i].so, 1);
		j->sol[i].nccl = json_is_true(want(s, where, "nccl", JSON_TRUE, 1, &bad, err, n));
		if (bad)
			return -1;
	}
	if (perf) {
		json_int_t w = INT(perf, "job: perf", "warmup", 1), it = INT(perf, "job: perf", "iters", 1),
			   bl = INT(perf, "job: perf", "block", 1);
		int pm = named(perf, "job: perf", "mode", perf_mode_name_, PERF_MODE_COUNT, &bad,
			       err, n);
		if (bad)
			return -1;
		j->perf.mode = (enum perf_mode)pm;
		if (w < 0 || it < 1 || bl < 1 || w > 100000000 || it > 100000000 || bl > 1000000) {
			snprintf(err, n, "job: perf: warmup >= 0, iters and block >= 1");
			return -1;
		}
		j->perf.warmup = (int)w;
		j->perf.iters = (int)it;
		j->perf.block = (int)bl;
		j->has_perf = 1;
	}
	if (addressed) {
		json_int_t r = INT(in, "job", "rank", 1), w = INT(in, "job", "world", 1),
			   l = INT(in, "job", "local_rank", 1), hf = INT(in, "job", "host_first", 1),
			   hs = INT(in, "job", "host_size", 1);
		if (bad)
			return -1;
		if (w < 1 || w > 4096 || r < 0 || r >= w || l < 0 || l > 4096) {
			snprintf(err, n, "job: rank %lld of world %lld", (long long)r, (long long)w);
			return -1;
		}
		/* symm.c maps the memory of these ranks: its own among them */
		if (hf < 0 || hs < 1 || hf > r || r >= hf + hs || hf + hs > w) {
			snprintf(err, n, "job: host ranks %lld + %lld do not hold rank %lld of "
				 "world %lld", (long long)hf, (long long)hs, (long long)r,
				 (long long)w);
			return -1;
		}
		j->rank = (int)r;
		j->world = (int)w;
		j->local_rank = (int)l;
		j->host_first = (int)hf;
		j->host_size = (int)hs;
	}
	return 0;
}

/* ---- records ---- */

json_t *wire_trial_pack(const struct wire_trial *t)
{
	json_t *o = json_pack("{s:s,s:i,s:i,s:b,s:O}", "kind", "trial", "trial", t->trial, "rank",
			      t->rank, "ok", t->ok, "outputs", t->outputs);
	if (t->gpu[0])
		json_object_set_new(o, "gpu", json_string(t->gpu));
	return o;
}

json_t *wire_run_pack(const struct wire_run *r)
{
	json_t *o = json_pack("{s:s,s:i,s:O}", "kind", "run", "rank", r->rank, "outputs",
			      r->outputs);
	if (r->gpu[0])
		json_object_set_new(o, "gpu", json_string(r->gpu));
	return o;
}

json_t *wire_perf_pack(const struct wire_perf *p)
{
	json_t *times = json_array(), *starts = json_array();
	for (int i = 0; i < p->n; i++) {
		json_array_append_new(times, json_real(p->times_ms[i]));
		json_array_append_new(starts, json_real(p->start_ms[i]));
	}
	json_t *rec = json_pack("{s:s,s:s,s:i,s:o,s:o,s:f,s:f,s:i,s:b,s:O}", "kind", "perf",
				"solution", p->solution, "rank", p->rank, "times_ms", times,
				"start_ms", starts, "host_ms", p->host_ms, "span_ms", p->span_ms,
				"groups", p->groups, "recheck_ok", p->recheck_ok, "recheck",
				p->recheck);
	json_object_set_new(rec, "mode", json_string(p->mode));
	json_object_set_new(rec, "block", json_integer(p->block));
	json_object_set_new(rec, "inputs_modified", json_boolean(p->inputs_modified));
	json_object_set_new(rec, "device", json_string(p->device));
	json_object_set_new(rec, "gate_expired", json_integer(p->gate_expired));
	if (p->heat.read)
		json_object_set_new(rec, "therm", wire_heat_pack(&p->heat));
	return rec;
}

json_t *wire_heat_pack(const struct wire_heat *h)
{
	return json_pack("{s:[i,i],s:[i,i],s:f,s:i,s:i}", "temp_c", h->temp_c[0], h->temp_c[1],
			 "sm_mhz", h->sm_mhz[0], h->sm_mhz[1], "cool_s", h->cool_s, "hot_c",
			 h->hot_c, "fini_rise_c", h->fini_rise_c);
}

/* a whole int field */
static int get_int(json_t *in, const char *where, const char *key, int *dst, int *bad, char *err,
		   size_t n)
{
	json_t *v = want(in, where, key, JSON_INTEGER, 1, bad, err, n);
	if (!v)
		return -1;
	if (!fits_int(json_integer_value(v))) {
		snprintf(err, n, "%s: '%s' out of range", where, key);
		*bad = 1;
		return -1;
	}
	*dst = (int)json_integer_value(v);
	return 0;
}

/* in[key]: an array of two integers */
static void int_pair(json_t *in, const char *where, const char *key, int dst[2], int *bad,
		     char *err, size_t n)
{
	json_t *v = want(in, where, key, JSON_ARRAY, 1, bad, err, n);
	if (!v)
		return;
	json_t *a = json_array_get(v, 0), *b = json_array_get(v, 1);
	if (json_array_size(v) != 2 || !json_is_integer(a) || !json_is_integer(b) ||
	    !fits_int(json_integer_value(a)) || !fits_int(json_integer_value(b))) {
		snprintf(err, n, "%s: '%s' is not two integers", where, key);
		*bad = 1;
		return;
	}
	dst[0] = (int)json_integer_value(a);
	dst[1] = (int)json_integer_value(b);
}

/* an array of objects (compare records) */
static json_t *objects(json_t *in, const char *where, const char *key, int *bad, char *err,
		       size_t n)
{
	json_t *a = want(in, where, key, JSON_ARRAY, 1, bad, err, n), *o;
	size_t i;
	json_array_foreach(a, i, o)
		if (!json_is_object(o) || !json_is_string(json_object_get(o, "name"))) {
			snprintf(err, n, "%s: '%s' %zu is not a record with a name", where, key, i);
			*bad = 1;
			return NULL;
		}
	return a;
}

static int kind_is(json_t *in, const char *kind, char *err, size_t n)
{
	const char *k = json_string_value(json_object_get(in, "kind"));
	if (!json_is_object(in) || !k || strcmp(k, kind)) {
		snprintf(err, n, "not a %s record", kind);
		return 0;
	}
	return 1;
}

int wire_trial_unpack(json_t *in, struct wire_trial *t, char *err, size_t n)
{
	int bad = 0;
	memset(t, 0, sizeof *t);
	if (!kind_is(in, "trial", err, n))
		return -1;
	get_int(in, "trial record", "trial", &t->trial, &bad, err, n);
	get_int(in, "trial record", "rank", &t->rank, &bad, err, n);
	t->ok = json_is_true(want(in, "trial record", "ok", JSON_TRUE, 1, &bad, err, n));
	t->outputs = objects(in, "trial record", "outputs", &bad, err, n);
	STR(in, "trial record", "gpu", t->gpu, 0);
	return bad ? -1 : 0;
}

int wire_run_unpack(json_t *in, struct wire_run *r, char *err, size_t n)
{
	int bad = 0;
	memset(r, 0, sizeof *r);
	if (!kind_is(in, "run", err, n))
		return -1;
	get_int(in, "run record", "rank", &r->rank, &bad, err, n);
	r->outputs = objects(in, "run record", "outputs", &bad, err, n);
	STR(in, "run record", "gpu", r->gpu, 0);
	return bad ? -1 : 0;
}

void wire_perf_free(struct wire_perf *p)
{
	free(p->times_ms);
	free(p->start_ms);
	p->times_ms = p->start_ms = NULL;
	p->n = 0;
}

/* an array of numbers, allocated */
static double *numbers(json_t *in, const char *key, size_t *len, int *bad, char *err, size_t n)
{
	json_t *a = want(in, "perf record", key, JSON_ARRAY, 1, bad, err, n), *v;
	if (!a)
		return NULL;
	size_t i;
	double *d = calloc(json_array_size(a) + 1, sizeof *d);
	if (!d) {
		snprintf(err, n, "perf record: out of memory");
		*bad = 1;
		return NULL;
	}
	json_array_foreach(a, i, v) {
		if (!json_is_number(v)) {
			snprintf(err, n, "perf record: '%s' %zu is not a number", key, i);
			*bad = 1;
			free(d);
			return NULL;
		}
		d[i] = json_number_value(v);
	}
	*len = json_array_size(a);
	return d;
}

int wire_perf_unpack(json_t *in, struct wire_perf *p, char *err, size_t n)
{
	int bad = 0;
	const char *w = "perf record";
	memset(p, 0, sizeof *p);
	if (!kind_is(in, "perf", err, n))
		return -1;
	/* the strings first: a refused one returns before anything is allocated */
	STR(in, w, "solution", p->solution, 1);
	STR(in, w, "mode", p->mode, 1);
	STR(in, w, "device", p->device, 1);
	get_int(in, w, "rank", &p->rank, &bad, err, n);
	size_t nt = 0, ns = 0;
	if (!bad)
		p->times_ms = numbers(in, "times_ms", &nt, &bad, err, n);
	if (!bad)
		p->start_ms = numbers(in, "start_ms", &ns, &bad, err, n);
	if (!bad && nt != ns) {
		snprintf(err, n, "perf record: %zu times_ms and %zu start_ms", nt, ns);
		bad = 1;
	}
	p->n = (int)nt;
	json_t *h = want(in, w, "host_ms", JSON_REAL, 1, &bad, err, n);
	json_t *s = want(in, w, "span_ms", JSON_REAL, 1, &bad, err, n);
	p->host_ms = json_number_value(h);
	p->span_ms = json_number_value(s);
	get_int(in, w, "groups", &p->groups, &bad, err, n);
	get_int(in, w, "block", &p->block, &bad, err, n);
	p->inputs_modified = json_is_true(want(in, w, "inputs_modified", JSON_TRUE, 1, &bad, err, n));
	p->recheck_ok = json_is_true(want(in, w, "recheck_ok", JSON_TRUE, 1, &bad, err, n));
	get_int(in, w, "gate_expired", &p->gate_expired, &bad, err, n);
	p->recheck = objects(in, w, "recheck", &bad, err, n);
	json_t *th = want(in, w, "therm", JSON_OBJECT, 0, &bad, err, n);
	if (th) {
		const char *wt = "perf record's therm";
		struct wire_heat *ht = &p->heat;
		ht->read = 1;
		int_pair(th, wt, "temp_c", ht->temp_c, &bad, err, n);
		int_pair(th, wt, "sm_mhz", ht->sm_mhz, &bad, err, n);
		ht->cool_s = json_number_value(want(th, wt, "cool_s", JSON_REAL, 1, &bad, err, n));
		get_int(th, wt, "hot_c", &ht->hot_c, &bad, err, n);
		get_int(th, wt, "fini_rise_c", &ht->fini_rise_c, &bad, err, n);
	}
	if (bad) {
		wire_perf_free(p);
		return -1;
	}
	return 0;
}

/* a "proc" record (rank.c:send_steps): the rank, the solution's role, and
 * two objects of seconds */
static int proc_check(json_t *in, char *err, size_t n)
{
	int bad = 0, rank;
	get_int(in, "proc record", "rank", &rank, &bad, err, n);
	want(in, "proc record", "solution", JSON_STRING, 1, &bad, err, n);
	const char *objs[] = { "seconds", "own" };
	for (int k = 0; k < 2 && !bad; k++) {
		json_t *o = want(in, "proc record", objs[k], JSON_OBJECT, 1, &bad, err, n), *v;
		const char *key;
		json_object_foreach(o, key, v)
			if (!json_is_number(v) && !bad) {
				snprintf(err, n, "proc record: '%s.%s' is not a number", objs[k], key);
				bad = 1;
			}
	}
	return bad ? -1 : 0;
}

int wire_record_check(json_t *in, char *err, size_t n)
{
	const char *k = json_string_value(json_object_get(in, "kind"));
	if (k && !strcmp(k, "proc"))
		return proc_check(in, err, n);
	if (k && !strcmp(k, "trial")) {
		struct wire_trial t;
		return wire_trial_unpack(in, &t, err, n);
	}
	if (k && !strcmp(k, "run")) {
		struct wire_run r;
		return wire_run_unpack(in, &r, err, n);
	}
	if (k && !strcmp(k, "perf")) {
		struct wire_perf p;
		int rc = wire_perf_unpack(in, &p, err, n);
		wire_perf_free(&p);
		return rc;
	}
	snprintf(err, n, "a record of no known kind");
	return -1;
}
